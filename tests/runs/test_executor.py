"""The executor: skip finished keys, redo only retryable failures, and a progress line that says
what the calls are waiting on."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import overload

import pytest

from qagen.errors import LLMUnavailableError
from qagen.failures import Failure, FailureKind
from qagen.generation.draft import DraftTask
from qagen.llm.backends import ModelSettings
from qagen.llm.client import LLMClient
from qagen.llm.clients import CallLimits, Clients
from qagen.llm.retries import retry_count
from qagen.llm.task import Reply, Request, user_request
from qagen.records import Chunk, Draft, Passages, Usage
from qagen.runs import executor as executor_module
from qagen.runs.executor import Executor
from qagen.runs.store import RecordLog
from standins.llm.server import StandInLLM

CHUNK = Passages.of(Chunk(id="c1", source="a.txt", text="The sky is blue.", start_index=0, end_index=16))


class SlowBackend:
    """Answers every request with a factoid pair after `delay` seconds, counting the calls."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.calls = 0

    async def reply(self, request: Request) -> Reply:
        self.calls += 1
        await asyncio.sleep(self.delay)
        return Reply("Factoid question: What colour is the sky?\nAnswer: Blue.", Usage(input_tokens=5, output_tokens=4))

    async def aclose(self) -> None:
        """Nothing to close."""


def _clients(backend: SlowBackend) -> Clients:
    client = LLMClient(backend, ModelSettings(spec="scripted:generator"))
    return Clients.connect({"generator": client}, CallLimits(concurrency=2, max_failure_rate=1.0))


def test_finished_keys_are_skipped_and_only_retryable_failures_redone(tmp_path: Path) -> None:
    log = RecordLog(tmp_path / "drafts.jsonl", Draft)
    task = DraftTask("scripted:generator")
    unreadable = Passages.of(Chunk(id="c2", source="a.txt", text="Other.", start_index=20, end_index=26))
    with log.writer() as out:  # an earlier run: one call failed, one reply was unreadable
        out.append(task.failed(CHUNK, Failure.of(FailureKind.RATE_LIMITED, "429")))
        out.append(task.failed(unreadable, Failure.of(FailureKind.REFUSAL), Reply("I cannot.", Usage())))
    backend = SlowBackend()

    async def run() -> None:
        with log.open() as drafts:
            executor = Executor(_clients(backend), workers=2)
            for chunk in (CHUNK, unreadable, CHUNK):
                await executor.run(task, chunk, drafts)

    asyncio.run(run())
    records = log.load()
    assert backend.calls == 1  # the failed call redone once; the refusal and the finished draft not again
    assert records[task.key(CHUNK)].ok and records[task.key(unreadable)].reason == "refusal"


def test_a_request_in_flight_for_one_item_is_not_sent_again_for_another(tmp_path: Path) -> None:
    # Two items that need the same record at once (a chunk that is a part of two multi-hop drafts).
    log = RecordLog(tmp_path / "drafts.jsonl", Draft)
    task = DraftTask("scripted:generator")
    backend = SlowBackend(delay=0.05)
    other = Passages.of(Chunk(id="c3", source="b.txt", text="Grass is green.", start_index=0, end_index=15))

    async def run() -> list[Draft]:
        with log.open() as drafts:
            executor = Executor(_clients(backend), workers=2)
            return list(await asyncio.gather(*(executor.run(task, item, drafts) for item in (CHUNK, CHUNK, other))))

    first, second, third = asyncio.run(run())
    assert backend.calls == 2 and first == second and first.ok and third.ok


def test_the_progress_line_says_when_a_reply_is_long_in_coming(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(executor_module, "_LONG_WAIT_SECONDS", 0.2)
    backend = SlowBackend(delay=0.6)
    seen: list[str] = []

    async def run() -> None:
        clients = _clients(backend)
        executor = Executor(clients, workers=1)
        call = asyncio.ensure_future(clients["generator"].complete(user_request("hello")))
        await asyncio.sleep(0.05)
        seen.append(executor.status())
        await asyncio.sleep(0.3)
        seen.append(executor.status())
        await call
        seen.append(executor.status())

    asyncio.run(run())
    assert "waiting" not in seen[0]
    assert "waiting 0 s for a reply" in seen[1] or "waiting 1 s for a reply" in seen[1]
    assert "waiting" not in seen[2] and seen[2].startswith("calls=1")


def test_the_progress_line_says_when_calls_are_being_retried() -> None:
    before = retry_count().retries

    async def run(server: StandInLLM) -> None:
        settings = ModelSettings(spec="openai:stand-in", base_url=server.base_url, max_retries=2)
        clients = Clients.connect({"generator": settings}, CallLimits(concurrency=1))
        executor = Executor(clients, workers=1)
        try:
            outcome = await clients["generator"].complete(user_request("hello"))
            assert isinstance(outcome, Reply)
            assert "retrying (1 retries so far" in executor.status(before)
        finally:
            await clients.aclose()

    with StandInLLM(fault_rate=1.0, fault_kinds=["429"], fault_attempts=1, retry_after=0.0) as server:
        asyncio.run(run(server))
    assert retry_count().retries == before + 1


class GaugedBackend:
    """Replies after `delay`, noting which chunk each request is about and the most calls at once."""

    def __init__(self, delay: float = 0.01, status: int | None = None) -> None:
        self.delay = delay
        self.status = status
        self.asked: list[str] = []
        self.in_flight = 0
        self.most_in_flight = 0

    async def reply(self, request: Request) -> Reply:
        self.asked.append(next(word for word in request[-1].content.split() if word.startswith("item-")))
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.delay)
        finally:
            self.in_flight -= 1
        if self.status is not None:
            raise _StatusError(self.status)
        return Reply("Factoid question: What colour is the sky?\nAnswer: Blue.", Usage(input_tokens=5, output_tokens=4))

    async def aclose(self) -> None:
        """Nothing to close."""


class _StatusError(Exception):
    def __init__(self, status_code: int) -> None:
        super().__init__(f"HTTP {status_code}")
        self.status_code = status_code


def _items(count: int) -> list[Passages]:
    return [
        Passages.of(Chunk(id=f"c{i}", source="a.txt", text=f"item-{i} is blue.", start_index=0, end_index=15))
        for i in range(count)
    ]


def _chains(
    backend: GaugedBackend,
    items: Sequence[Passages],
    *,
    workers: int,
    lookahead: int,
    calls: int = 3,
    first_taken_first: bool = False,
) -> None:
    """`calls` calls one after the other per item (a draft and its critics), through `map`."""
    task = DraftTask("scripted:generator")

    async def run() -> None:
        client = LLMClient(backend, ModelSettings(spec="scripted:generator"))
        clients = Clients.connect({"generator": client}, CallLimits(concurrency=workers, max_failure_rate=1.0))
        executor = Executor(clients, workers=workers, lookahead=lookahead, first_taken_first=first_taken_first)

        async def chain(item: Passages) -> None:
            for _ in range(calls):
                await executor.ask(task, item)

        await executor.map(items, chain, label="chains", unit="item", progress=False)

    asyncio.run(run())


def test_running_ahead_starts_more_chains_than_slots_and_keeps_calls_within_the_bound() -> None:
    backend = GaugedBackend()
    items = _items(12)
    _chains(backend, items, workers=2, lookahead=3)
    assert len(backend.asked) == 12 * 3 and backend.most_in_flight == 2
    # The first calls of six chains go out before any chain's second call: work from the whole
    # window is under way, so the last chains do not end one by one.
    assert backend.asked[:6] == [f"item-{i}" for i in range(6)]
    # Without running ahead, the first two chains end before a third one starts.
    plain = GaugedBackend()
    _chains(plain, items, workers=2, lookahead=1)
    assert plain.most_in_flight == 2 and set(plain.asked[:6]) == {"item-0", "item-1"}


def test_first_taken_first_keeps_calls_within_the_bound_and_each_items_calls_together() -> None:
    backend = GaugedBackend()
    items = _items(12)
    _chains(backend, items, workers=2, lookahead=3, first_taken_first=True)
    assert len(backend.asked) == 12 * 3 and backend.most_in_flight == 2
    # Six chains are under way, yet a free slot goes to the item taken first: items 0 and 1 run side by
    # side, and each one's calls have all gone out before a call of an item two places later.
    first = {item: backend.asked.index(item) for item in backend.asked}
    last = {item: len(backend.asked) - 1 - backend.asked[::-1].index(item) for item in backend.asked}
    assert all(last[f"item-{i}"] < first[f"item-{i + 2}"] for i in range(10)), backend.asked


def test_with_one_slot_and_first_taken_first_an_items_calls_go_out_one_after_another() -> None:
    # What a server with one prompt cache (llama.cpp) needs: nothing about another item in between.
    backend = GaugedBackend()
    _chains(backend, _items(6), workers=1, lookahead=4, first_taken_first=True)
    assert backend.asked == [f"item-{i}" for i in range(6) for _ in range(3)]
    # Without it, the calls go out in the order they ask for the slot: the drafts of the window first.
    plain = GaugedBackend()
    _chains(plain, _items(6), workers=1, lookahead=4)
    assert plain.asked[:4] == [f"item-{i}" for i in range(4)]


def test_a_call_that_stops_the_run_lets_no_waiting_call_go_out() -> None:
    backend = GaugedBackend(status=401)  # a rejected key: the client stops the run
    with pytest.raises(LLMUnavailableError, match="401"):
        _chains(backend, _items(20), workers=2, lookahead=4)
    assert len(backend.asked) == 2  # the first wave only; six calls were waiting for a slot


class _ReadItems(Sequence[Passages]):
    """Items made as they are taken (as a build's are read back from its chunk file), counting how
    many were made when each call went out."""

    def __init__(self, items: list[Passages]) -> None:
        self._items = items
        self.made = 0

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, index: int) -> Passages: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Passages]: ...
    def __getitem__(self, index: int | slice) -> Passages | Sequence[Passages]:
        return self._items[index]

    def __iter__(self) -> Iterator[Passages]:
        for item in self._items:
            self.made += 1
            yield item


def test_items_are_taken_as_workers_are_free_not_all_at_once() -> None:
    items = _ReadItems(_items(40))
    made_at_calls: list[int] = []

    class Noting(GaugedBackend):
        async def reply(self, request: Request) -> Reply:
            made_at_calls.append(items.made)
            return await super().reply(request)

    backend = Noting()
    _chains(backend, items, workers=2, lookahead=3, calls=1)
    assert len(backend.asked) == 40 and backend.asked == [f"item-{i}" for i in range(40)]
    # When the first call goes out, only the window under way (2 slots x 3 ahead) has been made.
    assert made_at_calls[0] == 6
