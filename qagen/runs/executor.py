"""The executor: runs LLM tasks (`qagen.llm.task`) over items, for `build` and `evaluate` alike.

- `run(task, item, store)`: the record for `item`, from the store when it is finished there; else
  the task's requests are sent and the record appended to the store as soon as it exists. Only a
  failure the task marks retryable (no reply came back) is made again, so a resumed run pays for
  no call twice.
- `ask(task, item)`: the same without a store (a step inside something that is stored whole).
- `map(items, flow)`: runs `flow(item)` for every item, as many at a time as the run may have
  calls in flight, with a progress bar; the flow states the dependencies between tasks (critics
  after their draft, cheapest first, stop at the first rejection) with plain `await`s. With
  `first_taken_first` a free slot goes to the call of the item taken first, so one item's calls (a
  draft, then its critics) go out one after another while other items' calls run beside them: a
  server's prefix cache still holds the passages they all open with (`qagen.generation.passage_frame`).
- The spending cap is checked before every call; once it is reached no new call starts, the calls
  in flight finish and are saved, and `map` returns (`budget.reached` tells).
- A request answered in a batch of the run (`answers`: its batch journal, an imported results
  file included) is taken from there, never sent again: whichever command meets it next.
- A request already in flight for another item (a chunk drafted as a part of two multi-hop drafts
  at once, or as a factoid and a part) is not sent again: the second waits for the first's reply,
  paid once (both store the record it makes; the batch executor queues such a request once too).

This is the online strategy (async, bounded in flight). A batch strategy runs the same tasks:
tasks never call a model themselves.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Protocol, TypeVar

from tqdm import tqdm

from qagen.llm.clients import Clients
from qagen.llm.concurrency import run_all
from qagen.llm.cost import Budget, BudgetReachedError
from qagen.llm.retries import retry_count
from qagen.llm.task import Compute, Done, Outcome, Reply, Request, Step, Task, TaskRecord

if TYPE_CHECKING:
    from qagen.runs.batch.journal import Journal

_TICK_SECONDS = 1.0
_LONG_WAIT_SECONDS = 10.0
"""A call in flight this long is worth a word on the progress line (a slow or silent server)."""
_RECENT_SECONDS = 30.0

ItemT = TypeVar("ItemT")
RecordT = TypeVar("RecordT", bound=TaskRecord)
AnyRecordT = TypeVar("AnyRecordT")


class Store(Protocol[RecordT]):
    """Where `run` finds finished records and keeps new ones: a `RecordStore`, or a build's ledger."""

    def get(self, key: str) -> RecordT | None: ...

    def add(self, record: RecordT) -> None: ...


Call = Callable[[Request], Awaitable[Outcome]]
"""Sends one request to a model: `LLMClient.complete`, or a test's scripted replies."""


async def drive(task: Task[ItemT, AnyRecordT], item: ItemT, call: Call) -> AnyRecordT:
    """Run a task's steps for one item, sending each step's requests (together) with `call`."""
    return await drive_steps(task.start(item), call)


async def drive_steps(step: Step[AnyRecordT], call: Call) -> AnyRecordT:
    """Run steps from `step` until one is `Done`: requests go out with `call`, together per step."""
    while not isinstance(step, Done):
        if isinstance(step, Compute):
            step = step.then(await step.work())
        elif len(step.requests) == 1:
            # Most steps ask one thing: awaited directly, without the task `gather` would make.
            step = step.then([await call(step.requests[0])])
        else:
            outcomes = await asyncio.gather(*(call(request) for request in step.requests))
            step = step.then(outcomes)
    return step.record


_TAKEN = ContextVar("_TAKEN", default=0)
"""Within `map`, the position of the item a flow works on, in the order items were taken."""


class _Slots:
    """Slots for calls, each given to the waiting call of the item taken first (`_TAKEN`).

    A slot freed is handed over one turn of the event loop later: the flow whose call ended carries
    on at once to its next call (no wait in between), which takes the slot before any call of an
    item taken after it. So an item's calls go out one after another, as a server's prefix cache
    needs them to, while other items' run on the other slots.
    """

    def __init__(self, count: int) -> None:
        self._free = count
        self._waiting: list[tuple[int, int, asyncio.Future[None]]] = []  # (item taken, arrival, future): a heap
        self._arrivals = itertools.count()
        self._handing_over = False

    async def acquire(self) -> None:
        taken = _TAKEN.get()
        self._drop_cancelled()
        if self._free > 0 and (not self._waiting or self._waiting[0][0] > taken):
            self._free -= 1
            return
        granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiting, (taken, next(self._arrivals), granted))
        try:
            await granted
        except asyncio.CancelledError:
            if granted.done() and not granted.cancelled():
                self.release()  # handed over as the caller was cancelled: not used
            raise

    def release(self) -> None:
        self._free += 1
        if self._waiting and not self._handing_over:
            self._handing_over = True
            asyncio.get_running_loop().call_soon(self._hand_over)

    def _hand_over(self) -> None:
        self._handing_over = False
        self._drop_cancelled()
        while self._free > 0 and self._waiting:
            _, _, granted = heapq.heappop(self._waiting)
            self._free -= 1
            granted.set_result(None)
            self._drop_cancelled()

    def _drop_cancelled(self) -> None:
        while self._waiting and self._waiting[0][2].done():
            heapq.heappop(self._waiting)


class _Halted(Exception):
    """A call not made because another one stopped the run (see `Executor._slot`)."""


def needs_call(record: TaskRecord | None) -> bool:
    """Missing, or failed in a way worth another call (no reply came back)."""
    return record is None or (record.failure is not None and record.failure.retryable)


def finished(record: RecordT | None) -> RecordT | None:
    """A stored record as a run takes it: None when it is missing or worth another call (`needs_call`)."""
    return None if needs_call(record) else record


class Executor:
    """Runs tasks on the clients of one run, within its spending cap."""

    def __init__(
        self,
        clients: Clients,
        *,
        workers: int,
        budget: Budget | None = None,
        lookahead: int = 1,
        answers: Journal | None = None,
        first_taken_first: bool = False,
    ) -> None:
        self.clients = clients
        self.workers = workers
        self.budget = budget
        self.lookahead = lookahead
        """Items `map` keeps under way per call slot (see `map`)."""
        self.answers = answers
        """The run's batch journal: requests answered in its batches are taken from there, not sent."""
        self.first_taken_first = first_taken_first
        """While `map` runs ahead, a free slot goes to the call of the item taken first (`_Slots`), not to
        the call that asked first: an item's calls go out one after another."""
        # While `map` runs with a lookahead: `workers` slots (in the order calls ask for one, unless
        # `first_taken_first`), and whether a call raised (the run is stopping, so the calls still
        # waiting are not made).
        self._slots: _Slots | asyncio.Semaphore | None = None
        self._halted = False
        self._made: list[str] = []  # records made from batch answers, not yet in the journal
        # Requests in flight, by client and request: the reply each will bring (None: it brought none, a
        # waiter asks itself), so the same request is not sent twice at once.
        self._in_flight: dict[tuple[int, Request], asyncio.Future[Outcome | None]] = {}

    async def run(self, task: Task[ItemT, RecordT], item: ItemT, store: Store[RecordT]) -> RecordT:
        """The item's record: the stored one when finished, else made now and stored at once."""
        found = store.get(task.key(item))
        if found is not None and not needs_call(found):
            return found
        record, from_batches = await self.make(task, item)
        store.add(record)
        if from_batches and not needs_call(record):  # one a later run makes again is not priced here
            self.note_batched(record.id)
        return record

    async def ask(self, task: Task[ItemT, AnyRecordT], item: ItemT) -> AnyRecordT:
        """Make the item's record now (nothing stored): every call within the spending cap."""
        record, _ = await self.make(task, item)
        return record

    async def make(self, task: Task[ItemT, AnyRecordT], item: ItemT) -> tuple[AnyRecordT, bool]:
        """The item's record, and whether every reply it was made from came from a batch (so the
        summaries price it at batch prices)."""
        client = self.clients[task.role]
        sent: list[Request] = []
        answered: list[Request] = []

        async def call(request: Request) -> Outcome:
            outcome = self.answers.answer(client.settings, request) if self.answers is not None else None
            if outcome is not None:
                answered.append(request)
            else:
                in_flight = (id(client), request)
                while (sent_already := self._in_flight.get(in_flight)) is not None:
                    shared = await sent_already
                    if shared is not None:
                        sent.append(request)
                        return shared  # paid (and counted against the cap) by the call that brought it
                brought: Outcome | None = None
                self._in_flight[in_flight] = asyncio.get_running_loop().create_future()
                try:
                    async with self._slot():
                        if self.budget is not None:
                            self.budget.check()
                        sent.append(request)
                        outcome = brought = await client.complete(request)
                finally:
                    self._in_flight.pop(in_flight).set_result(brought)
            if self.budget is not None and isinstance(outcome, Reply):
                self.budget.add(client.settings.spec, outcome.usage)
            return outcome

        record = await drive(task, item, call)
        return record, bool(answered) and not sent

    def note_batched(self, record_id: str) -> None:
        """Note a record made from batch answers: the summaries price it at batch prices."""
        self._made.append(record_id)

    def journal_made(self) -> None:
        """Note the records made from batch answers in the journal (priced at batch prices)."""
        if self.answers is not None:
            self.answers.mark_batched(self._made)
        self._made = []

    @asynccontextmanager
    async def _slot(self) -> AsyncIterator[None]:
        """A slot for one call (only while `map` runs ahead: otherwise the clients' slots suffice).

        Once an item's flow has raised, the run is ending (a rejected key, a failure rate over the
        limit, a full disk): the calls still waiting for a slot end with `_Halted` instead of going
        out, as they would have with no lookahead, where no call waits.
        """
        if self._slots is None:
            yield
            return
        await self._slots.acquire()
        try:
            if self._halted:
                raise _Halted
            yield
        finally:
            self._slots.release()

    async def map(
        self,
        items: Sequence[ItemT],
        flow: Callable[[ItemT], Awaitable[None]],
        *,
        label: str,
        unit: str,
        progress: bool,
    ) -> None:
        """`flow(item)` for every item, in order, `workers x lookahead` items at a time; stops
        taking new items once the spending cap is reached (the ones in flight finish and are saved).

        Calls in flight stay bounded by the clients' shared slots (`workers` of them). With a
        `lookahead` over 1 more items are under way than slots, their calls queued for a slot in the
        order they are made, so when the last items are taken there are still enough unfinished
        chains of calls (a draft, then its critics) to keep every slot busy until close to the
        end, instead of a tail where the last chains end one call after another. With
        `first_taken_first` a free slot goes to the item taken first (`_Slots`): an item's calls go
        out one after another.
        """
        bar = tqdm(total=len(items), desc=label, unit=unit, disable=not progress, file=sys.stderr)
        # Taken one at a time as a worker is free, not queued up front: a build's items are read back
        # from its chunk file as they are taken (`StoredPassages`), and queued they would all be in
        # memory at once. The workers share one iterator, so items are still taken in order.
        pending = iter(items)
        order = itertools.count()

        retries_before = retry_count().retries

        async def worker() -> None:
            for item in pending:
                _TAKEN.set(next(order))
                try:
                    await flow(item)
                except BudgetReachedError:
                    return  # no new call starts; `budget.reached` tells the caller
                except _Halted:
                    return  # another item's flow raised: its error is the run's
                except Exception:
                    # Set before any waiting call can take the slot this flow's last call freed: the
                    # exception reaches here in the same step as that call's end.
                    self._halted = True
                    raise
                bar.update(1)
                if not bar.disable:
                    bar.set_postfix_str(self.status(retries_before), refresh=False)

        async def ticker() -> None:
            # The bar moves only when an item finishes; between, say what the calls are waiting on.
            while True:
                await asyncio.sleep(_TICK_SECONDS)
                bar.set_postfix_str(self.status(retries_before))

        ticking = asyncio.ensure_future(ticker()) if progress else None
        if self.lookahead > 1:
            slots = _Slots(self.workers) if self.first_taken_first else asyncio.Semaphore(self.workers)
            self._slots, self._halted = slots, False
        try:
            await run_all([worker for _ in range(max(1, min(self.workers * self.lookahead, len(items))))])
        finally:
            self._slots = None
            self.journal_made()
            if ticking is not None:
                ticking.cancel()
            bar.close()

    def status(self, retries_before: int = 0) -> str:
        """The progress line's words: calls made, retries under way, and a long wait for a reply."""
        parts = [f"calls={self.clients.calls}"]
        retries = retry_count()
        if retries.retries > retries_before and time.monotonic() - retries.last_at < _RECENT_SECONDS:
            parts.append(
                f"retrying ({retries.retries - retries_before} retries so far, next after {retries.last_delay:.0f} s)"
            )
        waited = self.clients.longest_wait()
        if waited >= _LONG_WAIT_SECONDS:
            parts.append(f"waiting {waited:.0f} s for a reply")
        return ", ".join(parts)
