"""What a build knows of its stored drafts and critiques, kept small (`qagen.runs.record_index`).

A state is a record without its replies (raw text, rationale, reasoning), and a draft's without its
question, answer and evidence: what the LLM stage needs to decide (is a record finished, does a
score stop the critics) and what the spending cap counts, at a fraction of the size (about 0.5 KB
a draft and 0.4 KB a critique as Python objects), held for every record of the run in the index's
scratch database on disk, not in memory. The stage's flow reads them
as records through `LedgerStore` (the executor's store), a stored draft read back from the log
whole, so it runs exactly as over whole records; finalize reads each sampled chunk's whole records back
from the logs. Both logs are scanned once per build, by the LLM stage; the records it appends are
kept as they are written, so finalize (handed the same ledger) scans nothing again.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Container, Iterable, Iterator
from contextlib import contextmanager
from typing import Generic, NamedTuple, Protocol, TypeVar

from pydantic import BaseModel

from qagen.failures import Failure
from qagen.records import Critique, Draft, Usage
from qagen.runs.record_index import RecordIndex
from qagen.runs.rundir import RunDir
from qagen.runs.scratch import KeySet
from qagen.runs.store import RecordLog

R = TypeVar("R", bound=BaseModel)


class DraftState(NamedTuple):
    """A stored draft without its reply, and without the question, answer and evidence read from it:
    a stored draft asked for whole (`LedgerStore.get`) is read back from the log."""

    chunk_id: str
    model: str
    prompt_hash: str
    failure: Failure | None
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int
    from_reply: bool = False
    """A pair read from a reply of several (`Draft.reply_id`): that reply's record is the call, not this."""

    @property
    def retry(self) -> bool:
        """No reply came back: the next run asks again (`Failure.retryable`)."""
        return self.failure is not None and self.failure.retryable

    @property
    def paid(self) -> bool:
        """A call of its own, and a reply came, readable or not (a failed call is not paid for)."""
        return not self.from_reply and (self.failure is None or not self.failure.is_call_failure)


class CritiqueState(NamedTuple):
    """A stored critique without its reply and rationale: what the flow's next step reads of it."""

    draft_id: str
    criterion: str
    model: str
    prompt_hash: str
    failure: Failure | None
    score: int | None
    # A verdict is read from these when it has them (`vetting.vet`): without them a resumed
    # build judged a "Yes" at P(yes) 0.63 by its written word and paid for critics after its rejection.
    probability: float | None
    agreement: float | None
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int

    @property
    def retry(self) -> bool:
        return self.failure is not None and self.failure.retryable

    @property
    def paid(self) -> bool:
        return self.failure is None or not self.failure.is_call_failure


def _draft_state(draft: Draft) -> DraftState:
    return DraftState(
        chunk_id=draft.chunk_id,
        model=draft.model,
        prompt_hash=draft.prompt_hash,
        failure=draft.failure,
        input_tokens=draft.usage.input_tokens,
        output_tokens=draft.usage.output_tokens,
        cached_input_tokens=draft.usage.cached_input_tokens,
        from_reply=draft.reply_id is not None,
    )


def _critique_state(critique: Critique) -> CritiqueState:
    return CritiqueState(
        draft_id=critique.draft_id,
        criterion=critique.criterion,
        model=critique.model,
        prompt_hash=critique.prompt_hash,
        failure=critique.failure,
        score=critique.score,
        probability=critique.probability,
        agreement=critique.agreement,
        input_tokens=critique.usage.input_tokens,
        output_tokens=critique.usage.output_tokens,
        cached_input_tokens=critique.usage.cached_input_tokens,
    )


_BLANK_CRITIQUE = Critique(id="", model="", draft_id="", criterion="", prompt_hash="")


def _critique_of(key: str, state: CritiqueState) -> Critique:
    # A copy of a blank record: `model_copy` is several times cheaper than `model_construct`.
    usage = _usage(state)
    fields = state._asdict()
    del fields["input_tokens"], fields["output_tokens"], fields["cached_input_tokens"]
    return _BLANK_CRITIQUE.model_copy(update={"id": key, **fields, "usage": usage})


def _usage(state: DraftState | CritiqueState) -> Usage:
    return Usage(
        input_tokens=state.input_tokens,
        output_tokens=state.output_tokens,
        cached_input_tokens=state.cached_input_tokens,
    )


class Tokens(NamedTuple):
    """Calls, and their tokens, counted up."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0

    @property
    def usage(self) -> Usage:
        """The tokens alone."""
        return Usage(
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cached_input_tokens=self.cached_input_tokens,
        )


class Paid(NamedTuple):
    """Calls paid for (a reply came, readable or not), counted up: those answered online and those
    answered in batches (priced at batch prices)."""

    online: Tokens = Tokens()
    batched: Tokens = Tokens()

    @property
    def total(self) -> Tokens:
        return Tokens(*(a + b for a, b in zip(self.online, self.batched, strict=True)))


class _State(Protocol):
    @property
    def retry(self) -> bool: ...

    @property
    def paid(self) -> bool: ...


S = TypeVar("S", bound=_State)


class LedgerStore(Generic[R, S]):
    """An index's records as the executor's store: a stored one comes back without its reply, a
    new one is appended to the log at once (and counted when a later run must make it again)."""

    def __init__(self, ledger: Ledger, index: RecordIndex[R, S], record_of: Callable[[str, S], R]) -> None:
        self._ledger = ledger
        self._index: RecordIndex[R, S] = index
        self._record_of: Callable[[str, S], R] = record_of

    def get(self, key: str) -> R | None:
        state = self._index.state(key)
        return None if state is None else self._record_of(key, state)

    def add(self, record: R) -> None:
        self._ledger.retry_later += self._index.add(record).retry


class Ledger:
    """The drafts and critiques of a run, indexed (call `scan` to read what is new in the logs)."""

    def __init__(self, drafts: RecordLog[Draft], critiques: RecordLog[Critique]) -> None:
        self.drafts: RecordIndex[Draft, DraftState] = RecordIndex(drafts, _draft_state)
        self.critiques: RecordIndex[Critique, CritiqueState] = RecordIndex(critiques, _critique_state)
        self.retry_later = 0
        """Records added here whose call failed: a later run asks again."""
        # A stored draft is read back whole (its question, answer and evidence are not kept): the
        # critics of a resumed run need them, and a draft is asked for once per run.
        self.draft_store: LedgerStore[Draft, DraftState] = LedgerStore(self, self.drafts, self._whole_draft)
        self.critique_store: LedgerStore[Critique, CritiqueState] = LedgerStore(self, self.critiques, _critique_of)

    def _whole_draft(self, key: str, state: DraftState) -> Draft:
        draft = self.drafts.get(key)
        if draft is None:  # a state without its record: the index lost track of its own log
            raise RuntimeError(f"{self.drafts.log.path} has no draft {key}; run the command again")
        return draft

    @classmethod
    def read(cls, run: RunDir) -> Ledger:
        """The run directory's ledger, its logs scanned."""
        ledger = cls(run.drafts, run.critiques)
        ledger.scan()
        return ledger

    @contextmanager
    def appending(self) -> Iterator[None]:
        """New drafts and critiques may be added while this lasts."""
        with self.drafts.appending(), self.critiques.appending():
            yield

    def scan(self) -> None:
        self.drafts.scan()
        self.critiques.scan()

    def close(self) -> None:
        self.drafts.close()
        self.critiques.close()

    def spent(self) -> dict[str, Usage]:
        """The tokens of every stored record, by model (what the spending cap counts)."""
        spent: dict[str, list[int]] = {}
        states: Iterable[DraftState | CritiqueState] = itertools.chain(self.drafts.states(), self.critiques.states())
        for state in states:
            tokens = spent.setdefault(state.model, [0, 0, 0])
            tokens[0] += state.input_tokens
            tokens[1] += state.output_tokens
            tokens[2] += state.cached_input_tokens
        return {
            model: Usage(input_tokens=input_tokens, output_tokens=output_tokens, cached_input_tokens=cached)
            for model, (input_tokens, output_tokens, cached) in spent.items()
        }

    def paid_for(self, draft_ids: Container[str] | None, batched: Container[str]) -> tuple[Paid, Paid]:
        """The generation and critique calls paid for these drafts (None: every draft; every critique
        of them counts), those whose record ids are in `batched` (the run's batch journal) apart;
        counted up as the records are gone through, not listed (a build of 100,000 drafts pays for
        about 280,000 calls)."""
        drafts, critiques = _PaidSums(), _PaidSums()
        for key, draft in _paid_of(self.drafts.items(), lambda key, _: key, draft_ids):
            drafts.add(key in batched, draft)
        for key, critique in _paid_of(self.critiques.items(), lambda _, critique: critique.draft_id, draft_ids):
            critiques.add(key in batched, critique)
        return drafts.paid(), critiques.paid()


_ASKED_AT_ONCE = 1000
"""Records whose drafts are looked for in a `KeySet` of draft ids in one statement (`_paid_of`)."""


def _paid_of(
    states: Iterable[tuple[str, S]], draft_of: Callable[[str, S], str], draft_ids: Container[str] | None
) -> Iterator[tuple[str, S]]:
    """The records paid for (`paid`) of the drafts `draft_ids` names (None: every draft), a record's draft
    found by `draft_of(key, state)`; a `KeySet` of them asked a batch of records at a time."""
    paid = ((key, state) for key, state in states if state.paid)
    if draft_ids is None:
        yield from paid
        return
    while batch := list(itertools.islice(paid, _ASKED_AT_ONCE)):
        drafts = [draft_of(key, state) for key, state in batch]
        asked = draft_ids.among(drafts) if isinstance(draft_ids, KeySet) else draft_ids
        yield from (record for record, draft in zip(batch, drafts, strict=True) if draft in asked)


class _PaidSums:
    """`Paid` counted up in plain integers, one call's state at a time (a `Usage` and two tuples made for
    each of a build's records were a fifth of the count's CPU)."""

    def __init__(self) -> None:
        self._sums = {False: [0, 0, 0, 0], True: [0, 0, 0, 0]}  # by `in_batch`: calls and `Tokens`' three counts

    def add(self, in_batch: bool, state: DraftState | CritiqueState) -> None:
        sums = self._sums[in_batch]
        sums[0] += 1
        sums[1] += state.input_tokens
        sums[2] += state.output_tokens
        sums[3] += state.cached_input_tokens

    def paid(self) -> Paid:
        return Paid(online=Tokens(*self._sums[False]), batched=Tokens(*self._sums[True]))
