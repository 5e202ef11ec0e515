"""The bundled baseline RAG system: a retriever over qagen's own chunks, read by the notebook's reader prompt.

The retriever (`qagen.evaluate.systems.retrievers`: BM25, dense or hybrid) ranks the chunks of a
corpus chunked exactly as `qagen build` does, so a retrieved context carries the same `source`,
`start_index` and `end_index` as the chunks a test set was drafted from, and chunk-level retrieval
metrics line up. An optional `Reranker` reorders the retriever's candidates; the reader answers
from the top `k`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import NamedTuple

from qagen.errors import ConfigError
from qagen.evaluate.records import RagOutput

# The per-process index cache (`corpus_chunks.remember`), by its former name here, which tests clear.
from qagen.evaluate.systems.corpus_chunks import _memory as _memory
from qagen.evaluate.systems.rerank import DEFAULT_RERANK_TOP
from qagen.evaluate.systems.rerank.base import RERANK_FAILED, Reranker, RerankItem, RerankRecord, RunRerank
from qagen.evaluate.systems.retrievers import Retriever, ScoredContext
from qagen.failures import Failure
from qagen.llm.client import LLMClient
from qagen.llm.prompts import load_prompt
from qagen.llm.task import Done, Reply, Request, Role, SingleCallTask, Step, Task, add_usage, user_request
from qagen.records import RetrievedContext, Usage
from qagen.runs.executor import drive
from qagen.runs.store import record_key

__all__ = ["Baseline", "ReaderTask", "build_context"]


def build_context(texts: Iterable[str]) -> str:
    """The notebook's context block: a header, then `Document i:::` and each text, joined as is."""
    context = "\nExtracted documents:\n"
    context += "".join(f"Document {i}:::\n" + text for i, text in enumerate(texts))
    return context


class Baseline:
    """`retriever`'s top chunks (through `reranker`, when given), then the notebook's RAG prompt to a
    reader model over the top `k`.

    With a reranker, the retriever hands it its top `rerank_top` chunks (default
    `DEFAULT_RERANK_TOP`, and never fewer than `k`), and the reader gets the first `k` the reranker
    returns. The index is built on first use (or by `build_index()`), in a worker thread when answering.
    """

    def __init__(
        self,
        retriever: Retriever,
        *,
        reader: LLMClient,
        k: int = 7,
        reranker: Reranker | None = None,
        rerank_top: int | None = None,
    ) -> None:
        if k < 1:
            raise ConfigError(f"`k` must be at least 1, got {k}.", settings=("k",))
        self.retriever = retriever
        self.corpus = retriever.corpus
        self.k = k
        self.reranker = reranker
        if rerank_top is not None and rerank_top < 1:
            raise ConfigError(f"`rerank_top` must be at least 1, got {rerank_top}.", settings=("rerank_top",))
        self.rerank_top = max(k, DEFAULT_RERANK_TOP if rerank_top is None else rerank_top)
        self.reader = reader
        self.task = ReaderTask(reader.settings.spec)
        self._built = False
        self._index_lock: asyncio.Lock | None = None

    @property
    def chunk_size(self) -> int:
        return self.corpus.chunk_size

    @property
    def chunk_overlap(self) -> int:
        return self.corpus.chunk_overlap

    @property
    def name(self) -> str:
        rerank = f"-{self.reranker.name}" if self.reranker is not None else ""
        return f"{self.retriever.name}{rerank}-k{self.k}-{self.corpus.label}-{self.reader.settings.name}"

    def describe(self) -> dict[str, object]:
        """The settings that shape this baseline's answers, for the report."""
        about: dict[str, object] = {
            **self.retriever.describe(),
            "k": self.k,
            "chunk_size": self.corpus.chunk_size,
            "chunk_overlap": self.corpus.chunk_overlap,
            "length_unit": self.corpus.length_unit,
            "reader": self.reader.settings.spec,
            "prompt_hash": self.task.prompt.hash,
            "system_prompt_hash": self.task.system_prompt.hash,
        }
        if self.reranker is not None:
            about["rerank"] = {**self.reranker.describe(), "top": self.rerank_top}
        return about

    def build_index(self) -> None:
        """Load or build the retriever's index now (blocking)."""
        self.retriever.build()
        self._built = True

    def corpus_sources(self) -> set[str]:
        """The source ids of the indexed chunks (builds the index; blocking): what hit@k can find."""
        return {context.source for context in self.retriever.contexts() if context.source}

    def retrieve(self, question: str) -> list[RetrievedContext]:
        """The retriever's top `k` chunks for `question` (builds the index on first use; no reranking)."""
        return [scored.context for scored in self.retriever.search(question, self.k)]

    async def retrieve_for(self, question: str, *, run: RunRerank | None = None) -> Retrieved:
        """The question and its top `k` chunks: what the reader answers from (the task's item).

        With a reranker, its task runs through `run` (the evaluation's executor and store; by
        default its chat calls, if any, go straight to the reader); a reranking that failed is
        carried to the reader's task, which records it without a call.
        """
        if not self._built:
            if self._index_lock is None:
                self._index_lock = asyncio.Lock()
            async with self._index_lock:
                # Built in a worker thread: the event loop keeps serving other work meanwhile.
                await asyncio.to_thread(self.build_index)
        wanted = self.rerank_top if self.reranker is not None else self.k
        ranked: list[ScoredContext] = await asyncio.to_thread(self.retriever.search, question, wanted)
        candidates = tuple(scored.context for scored in ranked)
        if self.reranker is None:
            return Retrieved(question, candidates[: self.k])
        item = RerankItem(question, candidates)
        record = await (run or self._rerank_directly)(self.reranker.task, item)
        if record.failure is not None:
            return Retrieved(question, (), failure=record.failure, usage=record.usage)
        return Retrieved(question, tuple(context for context, _ in record.top(item, self.k)), usage=record.usage)

    async def _rerank_directly(self, task: Task[RerankItem, RerankRecord], item: RerankItem) -> RerankRecord:
        return await drive(task, item, self.reader.complete)

    async def answer(self, question: str) -> RagOutput:
        return await drive(self.task, await self.retrieve_for(question), self.reader.complete)

    async def aclose(self) -> None:
        """Release the reranker's connections (a rerank endpoint's)."""
        if self.reranker is not None:
            await self.reranker.aclose()


class Retrieved(NamedTuple):
    """What the reader answers from: the question and the retrieved chunks, best first."""

    question: str
    contexts: tuple[RetrievedContext, ...]
    failure: Failure | None = None
    """Why the reranker could not order the candidates (then there is nothing to answer from)."""
    usage: Usage = Usage()
    """What reranking cost (a listwise reranker's call), counted with the answer's."""


class ReaderTask(SingleCallTask[Retrieved, RagOutput]):
    """The baseline's answer: the notebook's RAG prompt over the retrieved chunks, to the reader model."""

    name = "rag_answer"
    role: Role = "reader"

    def __init__(self, model: str) -> None:
        self.model = model
        self.prompt = load_prompt("rag_answer")
        self.system_prompt = load_prompt("rag_answer_system")
        self.prompts = (self.system_prompt, self.prompt)

    def key(self, item: Retrieved) -> str:
        texts = "\x00".join(context.text for context in item.contexts)
        return record_key("rag_answer", item.question, texts, self.system_prompt.sha256, self.prompt.sha256, self.model)

    def start(self, item: Retrieved) -> Step[RagOutput]:
        if item.failure is not None:
            # No reranked chunks, no call: the question is recorded unanswered, and asked again on
            # resume (the reranking too, when its failure was a call's).
            error = f"{RERANK_FAILED}: {item.failure.kind.value}"
            return Done(RagOutput(answer=None, error=error, usage=item.usage))
        return super().start(item)

    def request(self, item: Retrieved) -> Request:
        # The notebook's prompt, as it has it: the question and the chunks go in as written.
        prompt = self.prompt.render(context=build_context(c.text for c in item.contexts), question=item.question)
        return user_request(prompt, system=self.system_prompt.text)

    def parse(self, item: Retrieved, reply: Reply) -> RagOutput:
        contexts = list(item.contexts)
        usage = add_usage(item.usage, reply.usage)
        if not reply.text.strip():
            return RagOutput(answer=None, contexts=contexts, error="reader_failed: empty_reply", usage=usage)
        return RagOutput(answer=reply.text.strip(), contexts=contexts, usage=usage)

    def failed(self, item: Retrieved, failure: Failure, reply: Reply | None = None) -> RagOutput:
        # Retrieval worked, so its contexts are kept: retrieval metrics still count.
        usage = add_usage(item.usage, reply.usage) if reply is not None else item.usage
        return RagOutput(
            answer=None, contexts=list(item.contexts), error=f"reader_failed: {failure.kind.value}", usage=usage
        )
