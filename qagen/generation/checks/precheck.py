"""Every check a draft passes before any critic is paid, in one place: the build's flow asks it
before the critics, and the filter gives its reason to the drafts it rejects.

In order: too long to be a factoid (`too_long`), a free check of the prompts' rules
(`checks.rules`), evidence not in the chunk (`checks.evidence`), and the optional `too_close`
bound (`checks.easiness`). Like the length limits, these are checks of the run's settings, not of
the reply: a changed setting applies to drafts already made, without a new call.

A draft of several passages may quote any of them: its evidence is looked for in each, in order. A
draft composed from parts (`Draft.parts`, a multi-hop question: `qagen.generation.compose`) has each
part's evidence looked for in that part's own passage, with that part's answer; its own question and
answer are checked by the rules. A question type whose answer is not in its passages (an unanswerable question,
whose reference answer is an abstention) is checked on its question alone: its length, the rules
that read the question (`rules.QUESTION_CHECKS`) and the `too_close` bound.
"""

from __future__ import annotations

from typing import NamedTuple

from qagen.config import BuildConfig
from qagen.generation.checks.easiness import TOO_CLOSE, too_close
from qagen.generation.checks.evidence import EVIDENCE_NOT_FOUND, EvidencePlacement, place_evidence
from qagen.generation.checks.rules import QUESTION_CHECKS, failed_check
from qagen.records import Chunk, Draft, Passages


class Precheck(NamedTuple):
    """Why a parsed draft is rejected before the critics (None: it goes on to them), where its
    evidence is (None when a length limit rejected it first, or its answer is in no passage), and
    the passage it was placed in."""

    reason: str | None
    evidence: EvidencePlacement | None
    passage: Chunk | None = None


def precheck(draft: Draft, item: Passages, config: BuildConfig, *, answered: bool = True) -> Precheck:
    """The checks of the module's docstring, the first that rejects giving the reason; `answered`:
    the draft's answer is in its passages (False: an unanswerable question's abstention)."""
    too_long = config.too_long(draft)
    if too_long is not None:
        return Precheck(too_long, None)
    question, answer = draft.question or "", draft.answer or ""
    chunk = item.first
    texts = [passage.text for passage in item.chunks]
    if not answered:
        failed = failed_check(question, answer, config.enabled_checks() & QUESTION_CHECKS, texts)
        if failed is not None:
            return Precheck(failed.reason, None)
        if config.max_copied_share is not None and too_close(question, chunk.text, config.max_copied_share):
            return Precheck(TOO_CLOSE, None)
        return Precheck(None, None)
    if draft.parts:
        placed = [
            (place_evidence(part.evidence, part.answer or "", passage.text), passage)
            for part, passage in zip(draft.parts, item.chunks, strict=True)
        ]
        evidence, passage = next(((found, at) for found, at in placed if not found.found), placed[0])
    else:
        placed = [(place_evidence(draft.evidence, answer, passage.text), passage) for passage in item.chunks]
        evidence, passage = next(((found, at) for found, at in placed if found.found), placed[0])
    failed = failed_check(question, answer, config.enabled_checks(), texts)
    if failed is not None:
        return Precheck(failed.reason, evidence, passage)
    if config.check_evidence and not evidence.found:
        return Precheck(EVIDENCE_NOT_FOUND, evidence, passage)
    if config.max_copied_share is not None and too_close(question, chunk.text, config.max_copied_share):
        return Precheck(TOO_CLOSE, evidence, passage)
    return Precheck(None, evidence, passage)


class _Found(NamedTuple):
    """A draft's `Precheck` as `Prechecks` keeps it: its passage by place, not the chunk (whose text
    the memo would otherwise hold for the whole build)."""

    content: int
    """A hash of what the checks read of the draft: a draft of the same id with other text (a composed
    draft as its parts ended it) is checked anew."""
    reason: str | None
    evidence: EvidencePlacement | None
    passage: int | None


class Prechecks:
    """`precheck` once per draft and settings in a process: the build's flow asks it before the critics
    and the filter again for each row, of the same draft; the second time reads the first's result."""

    def __init__(self) -> None:
        self._config: BuildConfig | None = None
        self._found: dict[str, _Found] = {}

    def __call__(self, draft: Draft, item: Passages, config: BuildConfig, *, answered: bool = True) -> Precheck:
        """`precheck(draft, item, config, answered=answered)`, from the memo when it holds this draft."""
        if draft.parts:  # (composed drafts are few; their parts' placements would need a key of their own)
            return precheck(draft, item, config, answered=answered)
        if config is not self._config:  # other settings: other results
            self._config, self._found = config, {}
        content = hash((draft.question, draft.answer, draft.evidence, answered))
        found = self._found.get(draft.id)
        if found is not None and found.content == content:
            passage = None if found.passage is None else item.chunks[found.passage]
            return Precheck(found.reason, found.evidence, passage)
        checked = precheck(draft, item, config, answered=answered)
        place = None if checked.passage is None else _place(checked.passage, item)
        self._found[draft.id] = _Found(content, checked.reason, checked.evidence, place)
        return checked


def _place(passage: Chunk, item: Passages) -> int:
    return next(number for number, chunk in enumerate(item.chunks) if chunk is passage)
