"""The batch executor: runs the same flows as the online executor (`BuildFlow`, the evaluation's
answer-and-judge), with a `call` that does not send its request but queues it for the next round.

Every item's flow runs at once (queuing costs nothing). When every flow still running is blocked
on a queued call (Compute steps and finished flows are not), nothing else can happen until those
calls are answered: that is a round. Its requests are sent as one batch per endpoint
(`qagen.runs.batch.rounds`), and their outcomes resolve the calls, so the flows go on to their
next step (the first critic after the drafts, ...): a build of factoids takes at most four rounds
(a multi-hop draft's parts come two rounds before its composing call: the parts, then their critics).

A request's custom_id is the sha256 of its body, which is byte for byte the body an online call
sends (`qagen.llm.backends.chat_body`); answers already cached in the run directory (an earlier
run's finished batch, an imported results file) resolve their calls at once, so a resumed run
pays for no request twice. Records are stored by `Executor.run`, exactly as online.
"""

from __future__ import annotations

import asyncio
import sys
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from tqdm import tqdm

from qagen.errors import ErrorBudgetExceededError
from qagen.llm.backends import chat_body
from qagen.llm.client import STOPPING_STATUSES, LLMClient
from qagen.llm.clients import Clients
from qagen.llm.cost import Budget, BudgetReachedError
from qagen.llm.task import Outcome, Reply, Request, Task, TaskRecord, add_usage
from qagen.records import Usage
from qagen.runs.batch.api import BatchAPI, endpoint_of, require_batchable
from qagen.runs.batch.journal import Journal, encode_body, request_id
from qagen.runs.batch.results import LineOutcome, reply_of
from qagen.runs.batch.rounds import BatchOptions, RemoteStepError, Round
from qagen.runs.executor import Executor, drive

ItemT = TypeVar("ItemT")
AnyRecordT = TypeVar("AnyRecordT")
RecordT = TypeVar("RecordT", bound=TaskRecord)

_FLOW: ContextVar[int] = ContextVar("qagen_batch_flow", default=-1)
_SETTLE_TICKS = 8
"""Event-loop turns given to a step's calls to queue themselves before a round is judged due."""
_ASSUMED_OUTPUT_TOKENS = 150
"""Output tokens counted per request when a round is fitted under a spending cap: a draft's reply
(question, answer and the quoted evidence sentence) runs to about 125 tokens, a critic's less."""
_CHARS_PER_TOKEN = 4.0


@dataclass
class _Queued:
    client: LLMClient
    body: bytes
    waiters: list[tuple[asyncio.Future[Outcome], int]] = field(default_factory=list)


class BatchesRunningError(Exception):
    """Not waiting (`wait=False`), and batches are still running: re-run to collect them."""

    def __init__(self, batch_ids: Sequence[str]) -> None:
        self.batch_ids = list(batch_ids)
        super().__init__(
            f"{len(self.batch_ids)} batch(es) still running ({', '.join(self.batch_ids)}); their ids are saved in "
            "the output directory: run the same command again to collect the results."
        )


class BatchExecutor(Executor):
    """Runs tasks in Batch API rounds; see the module's docstring."""

    def __init__(
        self, clients: Clients, journal: Journal, options: BatchOptions, *, budget: Budget | None = None
    ) -> None:
        super().__init__(clients, workers=1, budget=budget, answers=journal)
        self.journal = journal
        self.options = options
        self.rounds = 0
        self._queued: dict[str, _Queued] = {}
        self._live = 0
        self._blocked: Counter[int] = Counter()  # flow -> its calls still unanswered
        self._changed = asyncio.Event()
        self._say: Callable[[str], None] = lambda _: None
        self._stop: ErrorBudgetExceededError | None = None

    async def make(self, task: Task[ItemT, AnyRecordT], item: ItemT) -> tuple[AnyRecordT, bool]:
        client = self.clients[task.role]

        async def call(request: Request) -> Outcome:
            body = encode_body(chat_body(client.settings, request))
            custom_id = request_id(body)
            cached = self.journal.result(custom_id)
            if cached is not None:
                return self._spent(client, reply_of(cached))
            if self.budget is not None:
                self.budget.check()
            future: asyncio.Future[Outcome] = asyncio.get_running_loop().create_future()
            flow = _FLOW.get()
            self._queued.setdefault(custom_id, _Queued(client, body)).waiters.append((future, flow))
            self._blocked[flow] += 1
            self._changed.set()
            return self._spent(client, await future)

        return await drive(task, item, call), True

    def _spent(self, client: LLMClient, outcome: Outcome) -> Outcome:
        if self.budget is not None and isinstance(outcome, Reply):
            self.budget.add(client.settings.spec, outcome.usage)
        return outcome

    async def map(
        self,
        items: Sequence[ItemT],
        flow: Callable[[ItemT], Awaitable[None]],
        *,
        label: str,
        unit: str,
        progress: bool,
    ) -> None:
        """`flow(item)` for every item, all at once, sending their calls round by round."""
        bar = tqdm(total=len(items), desc=label, unit=unit, disable=not progress, file=sys.stderr)
        self._say = bar.set_postfix_str if progress else (lambda _: None)
        self._changed = asyncio.Event()
        self._live = len(items)
        errors: list[BaseException] = []

        async def one(index: int, item: ItemT) -> None:
            _FLOW.set(index)
            try:
                await flow(item)
            except BudgetReachedError:
                pass  # no new call is queued; `budget.reached` tells the caller
            except Exception as exc:  # noqa: BLE001 - handed to `map`'s caller below, after the other flows stop
                errors.append(exc)
            finally:
                self._live -= 1
                self._changed.set()
                bar.update(1)

        flows = [asyncio.create_task(one(index, item)) for index, item in enumerate(items)]
        try:
            while self._live > 0 and not errors:
                await self._changed.wait()
                self._changed.clear()
                if await self._round_due():
                    self._raise_if_stopped()  # the last round's records are stored: no new round
                    await self._round()
            self._raise_if_stopped()
        finally:
            for running in flows:
                running.cancel()
            await asyncio.gather(*flows, return_exceptions=True)
            bar.close()
            self.journal_made()
        if errors:
            raise errors[0]

    async def _round_due(self) -> bool:
        for _ in range(_SETTLE_TICKS):  # let the other calls of a step just started queue too
            await asyncio.sleep(0)
        return bool(self._queued) and self._live > 0 and len(+self._blocked) == self._live

    async def _round(self) -> None:
        self.journal_made()  # the records of the rounds before, all stored by now (every flow waits)
        queued, self._queued = self._queued, {}
        self.rounds += 1
        number = self.journal.rounds + 1
        queued = self._within_budget(queued)
        by_endpoint: dict[str, dict[str, _Queued]] = {}
        for custom_id, entry in queued.items():
            by_endpoint.setdefault(endpoint_of(entry.client.settings), {})[custom_id] = entry
        results = await asyncio.gather(*(self._endpoint_round(group, number) for group in by_endpoint.values()))
        running = [batch_id for outcome in results if isinstance(outcome, list) for batch_id in outcome]
        if running:
            raise BatchesRunningError(running)
        lines: dict[str, LineOutcome] = {}
        for outcomes in results:
            assert isinstance(outcomes, dict)
            lines.update(outcomes)
        self._count(queued, lines)
        for custom_id, line in lines.items():
            self._resolve(queued[custom_id], line.outcome)

    def _count(self, queued: dict[str, _Queued], lines: dict[str, LineOutcome]) -> None:
        """Count the round's requests on their clients and stop the run where online calls would:
        a model whose every request came back 401, 403 or 404 (a rejected key, an unknown model)
        stops at once with the online sentence; past the error budget, the run stops before the
        next round (and at the end, `Clients.check_failure_rates` holds as online)."""
        by_client: dict[int, tuple[LLMClient, list[LineOutcome]]] = {}
        for custom_id, line in lines.items():
            client = queued[custom_id].client
            by_client.setdefault(id(client), (client, []))[1].append(line)
        for client, outcomes in by_client.values():
            if all(line.status in STOPPING_STATUSES for line in outcomes):
                client.stop_for_status(outcomes[0].status)
            for line in outcomes:
                if line.ran:
                    client.count(line.outcome)
        for client, _ in by_client.values():
            try:
                client.check_error_budget()
            except ErrorBudgetExceededError as exc:
                self._stop = exc  # raised once the round's outcomes are stored, as online stores finished calls

    def _raise_if_stopped(self) -> None:
        if self._stop is not None:
            raise self._stop

    async def _endpoint_round(self, group: dict[str, _Queued], number: int) -> dict[str, LineOutcome] | list[str]:
        """The outcomes of one endpoint's requests; or, when not waiting, the batches still running."""
        client = next(iter(group.values())).client
        endpoint = endpoint_of(client.settings)
        api = BatchAPI(client.settings)
        try:
            round_ = Round(api, self.journal, endpoint, self.options, self._say)
            outcomes = await round_.run({custom_id: entry.body for custom_id, entry in group.items()}, number)
        except RemoteStepError as exc:
            client.stop_for_status(exc.status if exc.status == 401 else None)  # a rejected key: as online
            raise
        finally:
            await api.aclose()
        if outcomes is None:
            return [batch.batch_id or batch.file_id for batch in self.journal.active(endpoint)]
        return outcomes

    def _resolve(self, entry: _Queued, outcome: Outcome | BaseException) -> None:
        for future, flow in entry.waiters:
            self._blocked[flow] -= 1  # counted here, not when the flow wakes: it is no longer blocked
            if future.done():
                continue
            if isinstance(outcome, BaseException):
                future.set_exception(outcome)
            else:
                future.set_result(outcome)

    def _within_budget(self, queued: dict[str, _Queued]) -> dict[str, _Queued]:
        """The requests of the round that fit under the spending cap, counted as submitted work (input
        from the body, output assumed); the others end their flows as the cap does online."""
        if self.budget is None:
            return queued
        planned: dict[str, Usage] = {}
        fitting: dict[str, _Queued] = {}
        for custom_id, entry in queued.items():
            model = entry.client.settings.spec
            assumed = Usage(input_tokens=int(len(entry.body) / _CHARS_PER_TOKEN), output_tokens=_ASSUMED_OUTPUT_TOKENS)
            before = planned.get(model)
            trial = {**planned, model: assumed if before is None else add_usage(before, assumed)}
            if self.budget.over(trial):
                self.budget.reached = True
                self._resolve(entry, BudgetReachedError())
                continue
            planned = trial
            fitting[custom_id] = entry
        return fitting


def batch_executor(
    clients: Clients, root: Path, options: BatchOptions, *, budget: Budget | None = None
) -> BatchExecutor:
    """The batch executor of a run directory; refuses models that have no Batch API (LangChain ones)."""
    for client in clients.distinct():
        require_batchable(client.settings)
    return BatchExecutor(clients, Journal(root), options, budget=budget)
