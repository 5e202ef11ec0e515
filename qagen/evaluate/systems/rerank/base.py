"""The reranking step's contract: a reranker orders a question's retrieved candidates, and the
reader answers from the best `k` of them.

Every reranker is an LLM-style task (`qagen.llm.task`) over a `RerankItem` that makes a
`RerankRecord`, so its work goes through the evaluation's executor and record store like the
reader's calls: a resumed run finds finished reranks and never pays for one twice, and in batch
mode the listwise reranker's calls go in the rounds. A reranker that makes no chat call (a
cross-encoder, a rerank endpoint) does its work in one `Compute` step.

A reranker that cannot rank (a failed call, a reply it cannot read) makes a record with a
`Failure`: the question is then recorded as not answered, never answered from a guessed order.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, NamedTuple, Protocol, runtime_checkable

from pydantic import Field

from qagen.failures import Failure
from qagen.llm.task import Compute, Done, Role, Step, Task
from qagen.records import Record, RetrievedContext, Usage
from qagen.runs.executor import Call, drive
from qagen.runs.store import record_key

__all__ = [
    "RERANK_FAILED",
    "RankedScores",
    "RerankItem",
    "RerankRecord",
    "RerankedContext",
    "Reranker",
    "RerankingSystem",
    "RunRerank",
    "ScoringTask",
    "Unranked",
    "complete_order",
    "rerank",
    "rerank_key",
]

RERANK_FAILED = "rerank_failed"
"""The prefix of a question's error when its candidates could not be reranked (`rerank_failed: <kind>`,
as the reader's are `reader_failed: <kind>`)."""


class RerankedContext(NamedTuple):
    """A candidate chunk and the reranker's score of it (higher is better; None: it gave none)."""

    context: RetrievedContext
    score: float | None


class RerankItem(NamedTuple):
    """What a reranker orders: a question and its retrieved candidates, in retrieval order."""

    question: str
    candidates: tuple[RetrievedContext, ...]


class RerankRecord(Record):
    """One reranking of one question's candidates, as stored in the evaluation's `reranks.jsonl`."""

    id: str = Field(description="`rerank_key`: the question, the candidates' texts and the reranker's settings.")
    reranker: str = Field(description="The reranker's name.")
    order: list[int] = Field(
        default_factory=list,
        description="Every candidate's position in the retrieval order (0-based), best first; empty on failure.",
    )
    scores: list[float | None] = Field(
        default_factory=list,
        description="The reranker's score of each candidate of `order`, in that order; None where it gave none "
        "(a listwise reranker gives only an order; a candidate it left out has no score).",
    )
    ranked: int = Field(
        default=0,
        description="How many candidates of `order` the reranker placed itself; the ones after kept their "
        "retrieval order (a listwise reply that left some out).",
    )
    failure: Failure | None = Field(default=None, description="Why there is no order; None when there is one.")
    raw: str | None = Field(default=None, description="The reranker's reply as it came (a chat reply, a body).")
    usage: Usage = Usage()

    def top(self, item: RerankItem, n: int) -> list[RerankedContext]:
        """The best `n` candidates of `item` in this record's order, with the reranker's scores."""
        return [
            RerankedContext(item.candidates[i], score) for i, score in zip(self.order[:n], self.scores, strict=False)
        ]


class RankedScores(NamedTuple):
    """A reranker's reading of its candidates: (position, score) of those it placed, best first."""

    placed: list[tuple[int, float]]
    raw: str | None = None
    usage: Usage = Usage()


class Unranked(NamedTuple):
    """Why a reranker could not rank, and what it said, if anything (a body it could not read)."""

    failure: Failure
    raw: str | None = None


@runtime_checkable
class Reranker(Protocol):
    """Orders a question's retrieved candidates; its `task` does the work (see the module's docstring)."""

    @property
    def name(self) -> str:
        """The reranker in a system's name and a grid directory's: `ce-ms-marco`, `endpoint-bge`, `reader`."""
        ...

    def describe(self) -> dict[str, object]:
        """The settings that shape its orders (model, prompt hash...): part of the system's identity."""
        ...

    @property
    def task(self) -> Task[RerankItem, RerankRecord]: ...

    async def aclose(self) -> None:
        """Release what it holds (connections)."""
        ...


RunRerank = Callable[[Task[RerankItem, RerankRecord], RerankItem], Awaitable[RerankRecord]]
"""Runs a reranker's task for one item: the evaluation's executor with its `reranks.jsonl` store
(found there, or made and stored), or, outside an evaluation, the steps driven with the reader."""


@runtime_checkable
class RerankingSystem(Protocol):
    """A reader system (the bundled baseline) whose retrieval may end with a reranker's task, which
    the evaluation runs through its executor and `reranks.jsonl` (`run`)."""

    @property
    def reranker(self) -> Reranker | None: ...

    async def retrieve_for(self, question: str, *, run: RunRerank | None = None) -> Any:
        """What the reader answers `question` from: the reader task's item."""
        ...


def rerank_key(identity: dict[str, object], item: RerankItem) -> str:
    """The record id of a reranking: what it depends on, and nothing else (never the `k` kept after)."""
    texts = "\x00".join(context.text for context in item.candidates)
    return record_key("rerank", json.dumps(identity, sort_keys=True, default=str), item.question, texts)


def complete_order(count: int, placed: Sequence[tuple[int, float | None]]) -> tuple[list[int], list[float | None]]:
    """Every position of `count` candidates, best first: the `placed` ones in the order given, then
    the others in retrieval order, with no score (the reranker gave them none).

    `placed` must hold distinct positions below `count` (the readers of replies make sure of it).
    """
    order = [position for position, _ in placed]
    seen = set(order)
    rest = [position for position in range(count) if position not in seen]
    return order + rest, [score for _, score in placed] + [None] * len(rest)


class ScoringTask(Task[RerankItem, RerankRecord]):
    """A reranker's task that makes no chat call: `score` reads the candidates in one `Compute` step.

    The record's order is by score, best first; equal scores keep their retrieval order.
    """

    role: Role = "reader"  # no call is made; the executor only needs a role it has a client for
    prompts = ()

    def __init__(
        self, name: str, identity: dict[str, object], score: Callable[[RerankItem], Awaitable[RankedScores | Unranked]]
    ) -> None:
        self.name = f"rerank:{name}"
        self.reranker = name
        self.model = json.dumps(identity, sort_keys=True, default=str)
        self.identity = identity
        self._score = score

    def key(self, item: RerankItem) -> str:
        return rerank_key(self.identity, item)

    def start(self, item: RerankItem) -> Step[RerankRecord]:
        key = self.key(item)
        if not item.candidates:
            return Done(RerankRecord(id=key, reranker=self.reranker))

        def then(outcome: RankedScores | Unranked) -> Step[RerankRecord]:
            if isinstance(outcome, Unranked):
                return Done(RerankRecord(id=key, reranker=self.reranker, failure=outcome.failure, raw=outcome.raw))
            # Best first; equal scores keep their retrieval order.
            placed = sorted(outcome.placed, key=lambda pair: (-pair[1], pair[0]))
            order, scores = complete_order(len(item.candidates), placed)
            return Done(
                RerankRecord(
                    id=key,
                    reranker=self.reranker,
                    order=order,
                    scores=scores,
                    ranked=len(placed),
                    raw=outcome.raw,
                    usage=outcome.usage,
                )
            )

        return Compute(lambda: self._score(item), then)


async def rerank(
    reranker: Reranker, question: str, candidates: Sequence[RetrievedContext], n: int, call: Call
) -> list[RerankedContext] | Failure:
    """The best `n` of `candidates` for `question` by `reranker` (its chat calls, if any, sent with
    `call`), or the failure that kept it from ranking them."""
    item = RerankItem(question, tuple(candidates))
    record = await drive(reranker.task, item, call)
    return record.failure if record.failure is not None else record.top(item, n)
