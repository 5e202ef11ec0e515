"""What a build knows of its stored drafts and critiques, kept small (`qagen.runs.record_index`).

The LLM stage decides from these states alone (is a record finished, did the draft parse, does a
score stop the critics); finalize reads each sampled chunk's whole records back from the logs.
Both logs are scanned once per build, by the LLM stage; the records it appends are kept as they are
written, so finalize (handed the same ledger) scans nothing again.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import NamedTuple

from qagen.records import Critique, Draft
from qagen.runs.record_index import RecordIndex
from qagen.runs.rundir import RunDir
from qagen.runs.store import RecordLog


class DraftState(NamedTuple):
    """What the LLM stage needs of a stored draft."""

    retry: bool
    """No reply came back: the next run asks again (`Failure.retryable`)."""
    ok: bool
    """The draft parsed: it has a question and an answer."""
    question: str | None
    answer: str | None
    model: str
    paid: bool
    """A reply came, readable or not (a failed call is not paid for)."""
    input_tokens: int
    output_tokens: int


class CritiqueState(NamedTuple):
    """What the LLM stage needs of a stored critique."""

    retry: bool
    call_failure: bool
    """No reply came back (stops the critics after it until the next run)."""
    score: int | None
    """The rating (None when no valid rating was read)."""
    draft_id: str
    model: str
    paid: bool
    input_tokens: int
    output_tokens: int


def _draft_state(draft: Draft) -> DraftState:
    failure = draft.failure
    return DraftState(
        retry=failure is not None and failure.retryable,
        ok=failure is None,
        question=draft.question,
        answer=draft.answer,
        # Interned: every record of a model names it, one string serves them all.
        model=sys.intern(draft.model),
        paid=failure is None or not failure.is_call_failure,
        input_tokens=draft.usage.input_tokens,
        output_tokens=draft.usage.output_tokens,
    )


def _critique_state(critique: Critique) -> CritiqueState:
    failure = critique.failure
    call_failure = failure is not None and failure.is_call_failure
    return CritiqueState(
        retry=failure is not None and failure.retryable,
        call_failure=call_failure,
        score=critique.score,
        draft_id=sys.intern(critique.draft_id),
        model=sys.intern(critique.model),
        paid=not call_failure,
        input_tokens=critique.usage.input_tokens,
        output_tokens=critique.usage.output_tokens,
    )


class PaidCalls(NamedTuple):
    """Calls paid for and their tokens."""

    calls: int
    input_tokens: int
    output_tokens: int


class Ledger:
    """The drafts and critiques of a run, indexed (call `scan` to read what is new in the logs)."""

    def __init__(self, drafts: RecordLog[Draft], critiques: RecordLog[Critique]) -> None:
        self.drafts: RecordIndex[Draft, DraftState] = RecordIndex(drafts, _draft_state)
        self.critiques: RecordIndex[Critique, CritiqueState] = RecordIndex(critiques, _critique_state)
        self.retry_later = 0
        """Records added here whose call failed: the next run asks again (`BuildFlow` counts them)."""

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

    def spent(self) -> dict[str, tuple[int, int]]:
        """Input and output tokens of every stored record, by model (what the spending cap counts)."""
        spent: dict[str, tuple[int, int]] = {}
        states: Iterable[DraftState | CritiqueState] = itertools.chain(self.drafts.states(), self.critiques.states())
        for state in states:
            before = spent.get(state.model, (0, 0))
            spent[state.model] = (before[0] + state.input_tokens, before[1] + state.output_tokens)
        return spent

    def paid_for(self, draft_ids: set[str]) -> tuple[PaidCalls, PaidCalls]:
        """The generation and critique calls paid for these drafts (every critique of them counts)."""
        drafts = [state for key in draft_ids if (state := self.drafts.state(key)) is not None and state.paid]
        critiques = [state for state in self.critiques.states() if state.draft_id in draft_ids and state.paid]
        return _usage(drafts), _usage(critiques)


def _usage(states: list[DraftState] | list[CritiqueState]) -> PaidCalls:
    return PaidCalls(
        calls=len(states),
        input_tokens=sum(state.input_tokens for state in states),
        output_tokens=sum(state.output_tokens for state in states),
    )
