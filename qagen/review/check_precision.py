"""How well the free checks (`qagen.generation.checks`) and the critics agree with a reviewer, on
drafts a person reviewed: each check's precision and recall, and each critic's Cohen's kappa.

The reviewed drafts are a JSON-lines file, one draft a line: the chunk, the generator's recorded
reply (`generation_raw`), each critic's recorded reply and score (`critics`), and the reviewer's
`review` {groundedness, relevance, standalone: 1-5, keep: bool, note}. The recorded reply is read
again with today's parser (a replay: no model is asked), so a reply without the evidence line is
checked by its answer's words, as a build checks it.

What a check's rejection is compared with (`CHECK_LABELS`): the reviewer's score on the criterion
the check stands for, a fail being below `PASS_SCORE`; for `answer_in_question` (a trivial
draft, no criterion of its own) the reviewer's `keep`. Precision is the share of a check's
rejections the reviewer also fails; recall the share of the reviewer's fails the check rejects;
`kept_rejected` counts the drafts the reviewer kept that the check rejects (a check with any ships
off by default).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from qagen.critics import CRITICS
from qagen.generation.checks.evidence import EVIDENCE_NOT_FOUND, EvidencePlacement, place_evidence
from qagen.generation.checks.rules import FREE_CHECKS
from qagen.generation.replies import parse_factoid_qa, parse_rating
from qagen.generation.vetting import at_cut
from qagen.review.kappa import Agreement, Pair, agreement

PASS_SCORE = 4
"""A 1-5 score passes from here on: the build's default threshold, for critics and reviewer alike."""
EVIDENCE_CHECK = "evidence"
CHECK_LABELS: dict[str, str] = {
    EVIDENCE_CHECK: "groundedness",
    "source_pointing": "standalone",
    "ungrounded_answer": "groundedness",
    "answer_in_question": "keep",
    "answer_pointing": "keep",
    "code_not_in_passages": "groundedness",
}
"""The reviewer's label each check is measured against (a criterion, or `keep`)."""


class ReviewedDraft(NamedTuple):
    """One reviewed draft, its reply read again."""

    id: str
    chunk: str
    question: str
    answer: str
    evidence: str | None
    critic_scores: dict[str, int | None]
    review: dict[str, Any]

    def reviewer_fails(self, label: str) -> bool | None:
        """Whether the reviewer failed the draft on `label` (None: not labelled)."""
        if label == "keep":
            keep = self.review.get("keep")
            return None if keep is None else not keep
        score = self.review.get(label)
        return None if score is None else int(score) < PASS_SCORE


class CheckMeasure(NamedTuple):
    """One check against the reviewer's labels."""

    name: str
    reason: str
    label: str
    rejected: int
    true_rejections: int
    reviewer_fails: int
    kept_rejected: int

    @property
    def precision(self) -> float | None:
        return self.true_rejections / self.rejected if self.rejected else None

    @property
    def recall(self) -> float | None:
        return self.true_rejections / self.reviewer_fails if self.reviewer_fails else None


def read_reviewed(path: Path) -> list[ReviewedDraft]:
    """The reviewed drafts of a JSON-lines file, their recorded replies parsed again (drafts whose
    reply no longer parses are left out: the measure is about the checks)."""
    drafts: list[ReviewedDraft] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        parsed = parse_factoid_qa(row["generation_raw"])
        if parsed.question is None or parsed.answer is None:
            continue
        scores: dict[str, int | None] = {}
        for criterion, critic in (row.get("critics") or {}).items():
            scores[criterion] = parse_rating(critic["raw"]).score if critic.get("raw") else critic.get("score")
        drafts.append(
            ReviewedDraft(
                row["id"], row["chunk"], parsed.question, parsed.answer, parsed.evidence, scores, row["review"]
            )
        )
    return drafts


def evidence_of(draft: ReviewedDraft) -> EvidencePlacement:
    return place_evidence(draft.evidence, draft.answer, draft.chunk)


def rejections(draft: ReviewedDraft) -> dict[str, bool]:
    """Each check's verdict on the draft (True: rejected), every check asked, whether on or off."""
    verdicts = {EVIDENCE_CHECK: not evidence_of(draft).found}
    verdicts.update({check.name: check.rejects(draft.question, draft.answer, (draft.chunk,)) for check in FREE_CHECKS})
    return verdicts


def measure_checks(drafts: Sequence[ReviewedDraft]) -> list[CheckMeasure]:
    """Every check's rejections against the reviewer's labels (see the module docstring)."""
    verdicts = [rejections(draft) for draft in drafts]
    reasons = {EVIDENCE_CHECK: EVIDENCE_NOT_FOUND, **{check.name: check.reason for check in FREE_CHECKS}}
    measures: list[CheckMeasure] = []
    for name, label in CHECK_LABELS.items():
        rejected = true = fails = kept = 0
        for draft, verdict in zip(drafts, verdicts, strict=True):
            fail = draft.reviewer_fails(label)
            fails += bool(fail)
            if verdict[name]:
                rejected += 1
                true += bool(fail)
                kept += draft.review.get("keep") is True
        measures.append(CheckMeasure(name, reasons[name], label, rejected, true, fails, kept))
    return measures


def critic_agreement(drafts: Iterable[ReviewedDraft], criterion: str, *, threshold: int = PASS_SCORE) -> Agreement:
    """Cohen's kappa (with its bootstrap interval) of the critic's pass (its score held to `threshold`, as
    `vetting.at_cut` holds it) and the reviewer's, over the drafts both scored."""
    spec = CRITICS.get(criterion)
    pairs = [
        Pair(draft.id, at_cut(spec, score, threshold), int(draft.review[criterion]) >= PASS_SCORE)
        for draft in drafts
        if (score := draft.critic_scores.get(criterion)) is not None and draft.review.get(criterion) is not None
    ]
    return agreement(pairs)


def groundedness_agrees(drafts: Iterable[ReviewedDraft], *, threshold: int = PASS_SCORE) -> tuple[int, int]:
    """Of the drafts the evidence check rejects that the groundedness critic scored: how many it
    also fails, and how many there are."""
    agreed = scored = 0
    for draft in drafts:
        score = draft.critic_scores.get("groundedness")
        if score is None or evidence_of(draft).found:
            continue
        scored += 1
        agreed += not at_cut(CRITICS.get("groundedness"), score, threshold)
    return agreed, scored
