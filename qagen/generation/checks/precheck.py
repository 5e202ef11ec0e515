"""Every check a draft passes before any critic is paid, in one place: the build's flow asks it
before the critics, and the filter gives its reason to the drafts it rejects.

In order: too long to be a factoid (`too_long`), a free check of the prompts' rules
(`checks.rules`), evidence not in the chunk (`checks.evidence`), and the optional `too_close`
bound (`checks.easiness`). Like the length limits, these are checks of the run's settings, not of
the reply: a changed setting applies to drafts already made, without a new call.
"""

from __future__ import annotations

from typing import NamedTuple

from qagen.config import BuildConfig
from qagen.generation.checks.easiness import TOO_CLOSE, too_close
from qagen.generation.checks.evidence import EVIDENCE_NOT_FOUND, EvidencePlacement, place_evidence
from qagen.generation.checks.rules import failed_check
from qagen.records import Chunk, Draft


class Precheck(NamedTuple):
    """Why a parsed draft is rejected before the critics (None: it goes on to them), and where its
    evidence is in its chunk (None when a length limit rejected it first)."""

    reason: str | None
    evidence: EvidencePlacement | None


def precheck(draft: Draft, chunk: Chunk, config: BuildConfig) -> Precheck:
    """The checks of the module's docstring, the first that rejects giving the reason."""
    too_long = config.too_long(draft)
    if too_long is not None:
        return Precheck(too_long, None)
    question, answer = draft.question or "", draft.answer or ""
    evidence = place_evidence(draft.evidence, answer, chunk.text)
    failed = failed_check(question, answer, config.enabled_checks())
    if failed is not None:
        return Precheck(failed.reason, evidence)
    if config.check_evidence and not evidence.found:
        return Precheck(EVIDENCE_NOT_FOUND, evidence)
    if config.max_copied_share is not None and too_close(question, chunk.text, config.max_copied_share):
        return Precheck(TOO_CLOSE, evidence)
    return Precheck(None, evidence)
