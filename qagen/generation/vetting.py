"""Every check's keep/reject decision, made here once: a stored critique and the build's settings give
a `Verdict` (`qagen.records.Verdict`) that the early stop, the filter, a dry run, batch rounds and the
rows read; the review tools, the profile and the card read it from the rows. Nothing else compares a
check's score, probability or agreement with its cut.

How each kind of check decides (`CriticSpec.scale`):

- a yes/no check: P(yes), read from the server's token probabilities (`Critique.probability`), at
  least its cut (`BuildConfig.cuts`, else the check's own `yes_at`). With no usable probabilities (the
  server sent none, or impossible ones: `qagen.llm.verdict_probability`) its written yes or no decides,
  and the verdict says so (`measured_as="written"`).
- a 1-5 critic: its expected rating over the rating tokens, or its written rating without token
  probabilities, at least its threshold (`BuildConfig.threshold`: `min_scores`, its default, `min_score`).
- a reader: its answer's agreement with the drafted one at least its cut (`BuildConfig.cuts`, else
  `READER_AGREEMENT`); a lone reader (one passage of a question that needs two) passes below it. A reader
  that found no answer, or that read for a question drafted as unanswerable, is decided by what it wrote.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from qagen.config import DEFAULT_AUDIENCE, BuildConfig
from qagen.critics import CriticSpec
from qagen.generation.score import SCORE_COLUMN
from qagen.records import CandidateRow, CheckReading, Critique, MeasuredAs, Verdict

READER_AGREEMENT = 0.5
"""A reader's answer agrees with the drafted one at this agreement or above (`Critique.agreement`: the
larger of token F1 and the share of the drafted answer's words it holds). Set between the 0.4 and 0.6
of issue 28's probes, not tuned; applied when filtering, so a changed cut re-filters the same records."""

PASSING_WRITTEN = 3
"""A written verdict on the 1-5 scale passes a yes/no or reader check above the middle: a yes (5) passes,
a no (1) does not."""

NOT_ANSWERED_BY_PASSAGE = "not_answered_by_passage"
"""The reason a reader check gives a draft whose passages, the reader says, do not answer its question."""
ANSWERABLE = "answerable"
"""The reason a question drafted as unanswerable is rejected when the corpus answers it."""


def cut(config: BuildConfig, spec: CriticSpec) -> float:
    """The cut a check's measurement is held to in this build (see the module)."""
    if spec.scale == "rating":
        return float(config.threshold(spec.name))
    default = spec.yes_at if spec.scale == "yes_no" else READER_AGREEMENT
    return config.cuts.get(spec.name, default)


CERTIFIED_CHECK = "supported"
"""The check whose measurement certified acceptance thresholds (`qagen.review.certify`): its P(yes)."""


def certified_config(config: BuildConfig, threshold: float, on: str = CERTIFIED_CHECK) -> BuildConfig:
    """The settings that also hold a certified threshold: on `CERTIFIED_CHECK`'s measurement, one more cut,
    never below the check's own; on the combined score (`on` is `SCORE_COLUMN`), `score_cut`, applied after
    every check passed. A draft with no such measurement or score (decided by its written word; not scored)
    is kept or not as before: the certificate counts such labelled drafts as scored above any threshold."""
    if on == SCORE_COLUMN:
        return config.model_copy(update={"score_cut": threshold})
    if on != CERTIFIED_CHECK:
        raise ValueError(f"a certified threshold holds {CERTIFIED_CHECK} or {SCORE_COLUMN}, not {on}")
    spec = config.critic_registry().get(CERTIFIED_CHECK)
    return config.model_copy(update={"cuts": {**config.cuts, CERTIFIED_CHECK: max(cut(config, spec), threshold)}})


def score_rejection(config: BuildConfig, predicted_keep: float | None) -> str | None:
    """Why a draft every check passed is rejected by the certified cut on its combined score
    (`BuildConfig.score_cut`), or None: no such cut, no score, or a score at or above it."""
    if config.score_cut is None or predicted_keep is None or predicted_keep >= config.score_cut:
        return None
    return f"{SCORE_COLUMN}={predicted_keep:.2f}<{config.score_cut:.2f} (certified)"


def vet(config: BuildConfig, critique: Critique) -> Verdict | None:
    """The verdict of a stored critique under this build's settings; None when it has none (the call or
    its reply failed)."""
    return Vetter(config).vet(critique)


class Vetter:
    """`vet` under one build's settings, each check's spec and cut found once (the final write vets every
    critique of the build: the registry and the cut would otherwise be made anew for each)."""

    def __init__(self, config: BuildConfig) -> None:
        self._config = config
        self._held: dict[str, tuple[CriticSpec, float]] = {}

    def spec(self, criterion: str) -> CriticSpec:
        """The check of this name (`BuildConfig.critic_registry`)."""
        return self._held_to(criterion)[0]

    def vet(self, critique: Critique) -> Verdict | None:
        """The verdict of a stored critique; None when it has none (the call or its reply failed)."""
        spec, held_to = self._held_to(critique.criterion)
        return decide(spec, critique, held_to)

    def _held_to(self, criterion: str) -> tuple[CriticSpec, float]:
        held = self._held.get(criterion)
        if held is None:
            spec = self._config.critic_registry().get(criterion)
            held = self._held[criterion] = (spec, cut(self._config, spec))
        return held


def decide(spec: CriticSpec, critique: Critique, held_to: float) -> Verdict | None:
    """The verdict of `critique` by the check `spec` at the cut `held_to`; None when it has none."""
    if not critique.ok or critique.score is None:
        return None
    measured_as, measurement = _measurement(spec, critique)
    # Only a yes/no or a reader goes unmeasured (a rating is measured as written at least): its word decides.
    passed = written_yes(critique.score) if measurement is None else at_cut(spec, measurement, held_to)
    verdict = Verdict(
        name=spec.name,
        kind=spec.scale,
        written=critique.score,
        measured_as=measured_as,
        measurement=measurement,
        cut=held_to,
        passed=passed,
        why=None,
    )
    return verdict if passed else verdict.model_copy(update={"why": _why(spec, critique, verdict)})


def at_cut(spec: CriticSpec, measurement: float, held_to: float) -> bool:
    """Whether a measurement passes the check at a cut: the one comparison every decision makes (the
    review tools ask it of other cuts, to see how the same measurements would have been decided)."""
    if spec.scale == "lone_reader":  # one passage alone should not answer as both do
        return measurement < held_to
    return measurement >= held_to


def written_yes(written: int | None) -> bool:
    """Whether a yes/no or reader verdict, as written on the 1-5 scale, says yes (5) rather than no (1)."""
    return written is not None and written > PASSING_WRITTEN


def reader_agrees(agreement: float) -> bool:
    """A reader's answer agrees with the drafted one at the default cut: the written verdict a reader
    check records (`CriticTask.parse`); the build decides with its own cut."""
    return agreement >= READER_AGREEMENT


def _measurement(spec: CriticSpec, critique: Critique) -> tuple[MeasuredAs, float | None]:
    if spec.scale in ("reader", "lone_reader"):
        return ("agreement", critique.agreement) if critique.agreement is not None else ("written", None)
    if critique.probability is not None:
        return ("p_yes", critique.probability) if spec.scale == "yes_no" else ("expected_rating", critique.probability)
    # A 1-5 rating as written is still a rating held to the threshold; a written yes/no is not a P(yes).
    return "written", float(critique.score) if spec.scale == "rating" and critique.score is not None else None


def rejected_as(spec: CriticSpec, critique: Critique) -> str:
    """What a rejection by this check shows. A reader: `answer_mismatch` when its answer differs from
    the drafted one, `not_answered_by_passage` when it found no answer, `answerable` when it answered
    a question drafted as unanswerable (its answer is kept, no agreement measured). Otherwise the
    check's `rejects_as`, or its name."""
    if spec.scale == "reader" and critique.agreement is None:  # a lone reader rejects only by agreeing
        return NOT_ANSWERED_BY_PASSAGE if critique.rationale is None else ANSWERABLE
    return spec.rejects_as or spec.name


def _why(spec: CriticSpec, critique: Critique, verdict: Verdict) -> str:
    """The reason a rejected draft is given: `relevance=2<4`, `relevance=3.62<4` (an expected rating),
    `unsupported_answer (supported P(yes)=0.66<0.70)`, `unsupported_answer (supported=no)` (written),
    `answer_mismatch (reader agreement=0.31<0.50)`, `single_hop (lone_reader agreement=0.80>=0.50)`."""
    measurement = verdict.measurement
    if spec.scale == "rating":
        assert measurement is not None  # a rating is always measured, as written at least
        shown = f"{measurement:.2f}" if verdict.measured_as == "expected_rating" else f"{measurement:.0f}"
        measured = f"{spec.name}={shown}<{verdict.cut:g}"
    elif measurement is None:
        measured = f"{spec.name}={'yes' if written_yes(verdict.written) else 'no'}"
        if spec.scale == "reader" and critique.agreement is None:
            measured = f"{spec.name}: {'no answer found' if critique.rationale is None else 'answered'}"
    else:
        label = "P(yes)" if verdict.measured_as == "p_yes" else "agreement"
        relation = ">=" if spec.scale == "lone_reader" else "<"
        measured = f"{spec.name} {label}={measurement:.2f}{relation}{verdict.cut:.2f}"
    reason = rejected_as(spec, critique)
    return measured if reason == spec.name else f"{reason} ({measured})"


_MEASURED_AS: dict[str, MeasuredAs] = {
    "rating": "expected_rating",
    "yes_no": "p_yes",
    "reader": "agreement",
    "lone_reader": "agreement",
}


def readings(
    config: BuildConfig, asked_of: Mapping[str, Sequence[str]], reads_audience: Mapping[str, bool]
) -> dict[str, CheckReading]:
    """How each check the build asks is decided: `asked_of` gives the question types each is asked of
    (in the order asked), `reads_audience` whether its prompt reads the audience."""
    registry = config.critic_registry()
    return {
        name: CheckReading(
            kind=(spec := registry.get(name)).scale,
            measured_as=_MEASURED_AS[spec.scale],
            cut=cut(config, spec),
            question_types=tuple(types),
            reads_audience=reads_audience.get(name, False),
            help=spec.help,
        )
        for name, types in asked_of.items()
    }


class RowDecision(NamedTuple):
    """A check's decision as a candidate row shows it: what the views (review, agreement, profile) read."""

    written: int | None
    """The verdict as written, on the 1-5 scale."""
    measurement: float | None
    """What was held to the cut (P(yes), an expected or written rating, an agreement); None: the written word."""
    passed: bool


def row_decision(row: CandidateRow | Mapping[str, Any], check: str) -> RowDecision | None:
    """A check's decision on a candidate row (a record, or a dict of its columns), from the check's own
    columns (the cookbook's three) or its entry in `extra_critics`; None when it made none (not asked,
    or its call failed)."""
    columns: Mapping[str, Any] = row if isinstance(row, Mapping) else row.__dict__
    if f"{check}_passed" in columns:
        passed, measured, written = (columns[f"{check}_{field}"] for field in ("passed", "measurement", "score"))
        return None if passed is None else RowDecision(written, measured, passed)
    for entry in columns.get("extra_critics") or ():
        verdict = entry if isinstance(entry, Mapping) else entry.__dict__
        if verdict["name"] == check:
            passed = verdict.get("passed")
            return None if passed is None else RowDecision(verdict["score"], verdict.get("measurement"), passed)
    return None


def settings_without_effect(config: BuildConfig, checks: Mapping[str, CheckReading]) -> list[str]:
    """What to say once at the start of a build whose settings name something no check it asks reads:
    an audience no prompt reads, a minimum score with no 1-5 critic asked."""
    said: list[str] = []
    if config.audience != DEFAULT_AUDIENCE and not any(check.reads_audience for check in checks.values()):
        said.append(
            "The `audience` has no effect on this build: only the relevance critic reads it, and this `vetting` "
            f"({config.vetting}) does not ask it (the cookbook's vetting does)."
        )
    ratings = [name for name, check in checks.items() if check.kind == "rating"]
    if config.min_score != type(config).model_fields["min_score"].default and not ratings:
        said.append(
            f"The `min_score` {config.min_score} has no effect on this build: no 1-5 critic is asked; its checks "
            f"({', '.join(checks)}) are held to their `cuts`."
        )
    return said
