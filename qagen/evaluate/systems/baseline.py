"""The bundled baseline RAG system: BM25 over qagen's own chunks, read by the notebook's reader prompt.

Chunks come from qagen's own loader and splitter, so a retrieved context carries the same
`source`, `start_index` and `end_index` as the chunks a test set was drafted from, and chunk-level
retrieval metrics line up. The index (`qagen.evaluate.systems.bm25_index`) is built once per corpus setting
and process, and optionally kept on disk under `index_dir`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from qagen.errors import ConfigError, CorpusError
from qagen.evaluate.records import RagOutput, RetrievedContext
from qagen.evaluate.systems.bm25_index import INDEX_VERSION, BM25Index, index_chunks
from qagen.failures import Failure
from qagen.generation.chunk import LengthUnit, make_splitter
from qagen.generation.load.documents import CorpusReport, iter_documents
from qagen.llm.client import LLMClient
from qagen.llm.prompts import load_prompt
from qagen.llm.task import Reply, Request, Role, SingleCallTask, user_request
from qagen.records import Usage
from qagen.runs.executor import drive
from qagen.runs.store import record_key

__all__ = ["BM25Baseline", "ReaderTask", "build_context"]

_logger = logging.getLogger(__name__)

# Indexes kept in memory per process (each holds every chunk's text).
_MEMORY_SLOTS = 4


def build_context(texts: Iterable[str]) -> str:
    """The notebook's context block: a header, then `Document i:::` and each text, joined as is."""
    context = "\nExtracted documents:\n"
    context += "".join(f"Document {i}:::\n" + text for i, text in enumerate(texts))
    return context


_memory: OrderedDict[str, BM25Index] = OrderedDict()
_memory_lock = threading.Lock()


class BM25Baseline:
    """BM25 retrieval of the top `k` chunks, then the notebook's RAG prompt to a reader model.

    The corpus is a path (file or folder) or a Hugging Face dataset, loaded and chunked exactly as
    `qagen build` does (`chunk_overlap` defaults to a tenth of `chunk_size`, as in the notebook).
    The index is built on first use (or by `build_index()`), once per corpus setting per process;
    with `index_dir` it is also saved there and reused by later runs while the corpus files are
    unchanged (same names, sizes and modification times).
    """

    def __init__(
        self,
        corpus: Path | str | None,
        *,
        reader: LLMClient,
        hf_dataset: str | None = None,
        split: str = "train",
        chunk_size: int = 2000,
        chunk_overlap: int | None = None,
        length_unit: LengthUnit = "characters",
        encoding: str = "cl100k_base",
        k: int = 7,
        text_column: str = "text",
        source_column: str | None = None,
        index_dir: Path | None = None,
        progress: bool = True,
    ) -> None:
        if k < 1:
            raise ConfigError(f"`k` must be at least 1, got {k}.", settings=("k",))
        self.corpus = Path(corpus) if corpus is not None else None
        self.hf_dataset = hf_dataset
        self.split = split
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_size // 10 if chunk_overlap is None else chunk_overlap
        self.length_unit: LengthUnit = length_unit
        self.encoding = encoding
        self.k = k
        self.text_column = text_column
        self.source_column = source_column
        self.reader = reader
        self.index_dir = index_dir
        self.progress = progress
        # Settings are checked now, so a bad chunk size fails before any question is asked.
        self._splitter = make_splitter(chunk_size, self.chunk_overlap, length_unit, encoding)
        self.task = ReaderTask(reader.settings.spec)
        self._index: BM25Index | None = None
        self._index_lock: asyncio.Lock | None = None

    @property
    def name(self) -> str:
        unit = "" if self.length_unit == "characters" else "tok"
        return f"bm25-k{self.k}-chunk{self.chunk_size}{unit}-{self.reader.settings.name}"

    def describe(self) -> dict[str, object]:
        """The settings that shape this baseline's answers, for the report."""
        return {
            "retriever": "bm25s",
            "k": self.k,
            "chunk_size": self.chunk_size,
            "chunk_overlap": self.chunk_overlap,
            "length_unit": self.length_unit,
            "reader": self.reader.settings.spec,
            "prompt_hash": self.task.prompt.hash,
            "system_prompt_hash": self.task.system_prompt.hash,
            # The corpus it retrieves from (files' names, sizes and times): stored answers read
            # from an older corpus are another system's answers, asked again, not reused.
            "corpus_index": self.cache_key()[:16],
        }

    def index_settings(self) -> dict[str, object]:
        """What the index depends on besides the corpus files' contents (which corpus, how chunked)."""
        return {
            "version": INDEX_VERSION,
            "corpus": str(self.corpus.resolve()) if self.corpus is not None else None,
            "hf_dataset": self.hf_dataset,
            "split": self.split,
            "text_column": self.text_column,
            "source_column": self.source_column,
            "chunk_size": self.chunk_size,
            "chunk_overlap": self.chunk_overlap,
            "length_unit": self.length_unit,
            "encoding": self.encoding if self.length_unit == "tokens" else None,
        }

    def cache_key(self) -> str:
        """sha256 of everything the index depends on, the corpus files' names, sizes and times included."""
        settings = {**self.index_settings(), "files": _fingerprint(self.corpus) if self.corpus is not None else None}
        return hashlib.sha256(json.dumps(settings, sort_keys=True).encode("utf-8")).hexdigest()

    def build_index(self) -> BM25Index:
        """The index: from this process's memory, else from `index_dir`, else built now (blocking)."""
        if self._index is not None:
            return self._index
        key = self.cache_key()
        folder = self.index_dir / f"bm25-{key[:24]}" if self.index_dir is not None else None
        # One lock for all builds: two baselines on the same corpus must not both build it.
        with _memory_lock:
            index = _memory.get(key)
            if index is None and folder is not None:
                index = BM25Index.load(folder, key)
            if index is None:
                report = CorpusReport()
                documents = iter_documents(
                    self.corpus,
                    report=report,
                    hf_dataset=self.hf_dataset,
                    split=self.split,
                    text_column=self.text_column,
                    source_column=self.source_column,
                )
                index = index_chunks(documents, self._splitter, progress=self.progress)
                index.report = report
                if report.skipped:
                    _logger.warning(
                        "BM25 baseline: %d corpus inputs skipped (%s).",
                        len(report.skipped),
                        ", ".join(f"{reason}: {n}" for reason, n in report.skipped_by_reason().items()),
                    )
                if folder is not None:
                    folder.parent.mkdir(parents=True, exist_ok=True)
                    index.save(folder, key, self.index_settings())
            _memory[key] = index
            _memory.move_to_end(key)
            while len(_memory) > _MEMORY_SLOTS:
                _memory.popitem(last=False)
        self._index = index
        return index

    def corpus_sources(self) -> set[str]:
        """The source ids of the indexed chunks (builds the index; blocking): what hit@k can find."""
        return {context.source for context in self.build_index().contexts if context.source}

    def retrieve(self, question: str) -> list[RetrievedContext]:
        """The top `k` chunks for `question` (builds the index on first use)."""
        return self.build_index().search(question, self.k)

    async def retrieve_for(self, question: str) -> Retrieved:
        """The question and its top `k` chunks: what the reader answers from (the task's item)."""
        if self._index is None:
            if self._index_lock is None:
                self._index_lock = asyncio.Lock()
            async with self._index_lock:
                # Built in a worker thread: the event loop keeps serving other work meanwhile.
                await asyncio.to_thread(self.build_index)
        contexts = await asyncio.to_thread(self.retrieve, question)
        return Retrieved(question, tuple(contexts))

    async def answer(self, question: str) -> RagOutput:
        return await drive(self.task, await self.retrieve_for(question), self.reader.complete)


class Retrieved(NamedTuple):
    """What the reader answers from: the question and the retrieved chunks, best first."""

    question: str
    contexts: tuple[RetrievedContext, ...]


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

    def request(self, item: Retrieved) -> Request:
        # The notebook's prompt, as it has it: the question and the chunks go in as written.
        prompt = self.prompt.render(context=build_context(c.text for c in item.contexts), question=item.question)
        return user_request(prompt, system=self.system_prompt.text)

    def parse(self, item: Retrieved, reply: Reply) -> RagOutput:
        contexts = list(item.contexts)
        if not reply.text.strip():
            return RagOutput(answer=None, contexts=contexts, error="reader_failed: empty_reply", usage=reply.usage)
        return RagOutput(answer=reply.text.strip(), contexts=contexts, usage=reply.usage)

    def failed(self, item: Retrieved, failure: Failure, reply: Reply | None = None) -> RagOutput:
        # Retrieval worked, so its contexts are kept: retrieval metrics still count.
        usage = reply.usage if reply is not None else Usage()
        return RagOutput(
            answer=None, contexts=list(item.contexts), error=f"reader_failed: {failure.kind.value}", usage=usage
        )


def _fingerprint(corpus: Path) -> list[tuple[str, int, int]]:
    """(relative path, size, mtime_ns) of every file under `corpus`: a changed corpus gets a new index."""
    if not corpus.exists():
        raise CorpusError(f"Corpus path not found: {corpus}")
    if corpus.is_file():
        info = corpus.stat()
        return [(corpus.name, info.st_size, info.st_mtime_ns)]
    entries: list[tuple[str, int, int]] = []
    # Symlinked folders are not followed here (a loop would never end); their files still count
    # for the index itself, which the loader builds with loop detection.
    for folder, subfolders, files in os.walk(corpus):
        subfolders.sort()
        for file in sorted(files):
            path = Path(folder, file)
            try:
                info = path.stat()
            except OSError:
                continue  # the loader reports unreadable files; here they just do not change the key
            entries.append((path.relative_to(corpus).as_posix(), info.st_size, info.st_mtime_ns))
    return entries
