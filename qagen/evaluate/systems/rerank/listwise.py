"""The reader model as a listwise reranker: one chat call lists the candidates as `[1]`, `[2]`, ...
and asks for their identifiers in order of relevance (RankGPT's protocol, in one window).

The call is a task on the reader's role, so it goes through the run's executor like the reader's
own calls: within the same limits, stored, never paid twice, and in batch rounds in batch mode.
The reply is read by `qagen.evaluate.systems.rerank.ranking_reply`; a listwise reranker gives an
order, no scores (the record's scores are None).
"""

from __future__ import annotations

from qagen.evaluate.systems.rerank.base import RerankItem, RerankRecord, complete_order, rerank_key
from qagen.evaluate.systems.rerank.ranking_reply import defuse_ids, read_ranking
from qagen.failures import Failure
from qagen.llm.prompts import load_prompt
from qagen.llm.task import Done, Reply, Request, Role, SingleCallTask, Step, user_request
from qagen.llm.untrusted import neutralize
from qagen.records import Usage

__all__ = ["ListwiseReranker", "ListwiseTask", "passages_block"]


def passages_block(item: RerankItem) -> str:
    """The candidates as the prompt lists them: `[i]` (1-based), then the text inside data tags."""
    return "\n\n".join(
        f"[{i}]\n<context>\n{defuse_ids(neutralize(context.text)).strip()}\n</context>"
        for i, context in enumerate(item.candidates, 1)
    )


class ListwiseTask(SingleCallTask[RerankItem, RerankRecord]):
    """One call: the question and the numbered candidates in, their identifiers in order out."""

    name = "rerank:listwise"
    role: Role = "reader"

    def __init__(self, model: str) -> None:
        self.model = model
        self.prompt = load_prompt("rerank_listwise")
        self.system_prompt = load_prompt("rerank_listwise_system")
        self.prompts = (self.system_prompt, self.prompt)

    def identity(self) -> dict[str, object]:
        return {
            "reranker": "listwise",
            "model": self.model,
            "prompt_hash": self.prompt.hash,
            "system_prompt_hash": self.system_prompt.hash,
        }

    def key(self, item: RerankItem) -> str:
        return rerank_key(self.identity(), item)

    def start(self, item: RerankItem) -> Step[RerankRecord]:
        if len(item.candidates) < 2:
            # Nothing to order: no call (one candidate, or none, is its own ranking).
            order, scores = complete_order(len(item.candidates), [])
            return Done(RerankRecord(id=self.key(item), reranker="reader", order=order, scores=scores))
        return super().start(item)

    def request(self, item: RerankItem) -> Request:
        prompt = self.prompt.render(
            count=str(len(item.candidates)), question=neutralize(item.question), passages=passages_block(item)
        )
        return user_request(prompt, system=self.system_prompt.text)

    def parse(self, item: RerankItem, reply: Reply) -> RerankRecord:
        ranking = read_ranking(reply.text, len(item.candidates))
        if isinstance(ranking, Failure):
            return self.failed(item, ranking, reply)
        order, scores = complete_order(len(item.candidates), [(position, None) for position in ranking])
        return RerankRecord(
            id=self.key(item),
            reranker="reader",
            order=order,
            scores=scores,
            ranked=len(ranking),
            raw=reply.verbatim,
            usage=reply.usage,
        )

    def failed(self, item: RerankItem, failure: Failure, reply: Reply | None = None) -> RerankRecord:
        return RerankRecord(
            id=self.key(item),
            reranker="reader",
            failure=failure,
            raw=reply.verbatim if reply is not None else None,
            usage=reply.usage if reply is not None else Usage(),
        )


class ListwiseReranker:
    """The reader model (`model`, its spec) orders the candidates in one call per question."""

    name = "reader"

    def __init__(self, model: str) -> None:
        self.task = ListwiseTask(model)

    def describe(self) -> dict[str, object]:
        return self.task.identity()

    async def aclose(self) -> None:
        """Its calls go through the reader's client, which the run closes."""
