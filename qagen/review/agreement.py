"""How far the critics (or an evaluation's judges) agree with the people who labelled their items.

For a run directory, per criterion and for the keep decision: the labels compared, raw agreement,
Cohen's kappa with a bootstrap interval, the confusion matrix, and where items have several
reviewers, the reviewers' agreement with each other (`qagen.review.kappa`). Each label is one
comparison: a draft two people labelled counts twice (their bootstrap draws the item whole).

The checks' verdict on a criterion is the decision the run's rows show (`qagen.generation.vetting`:
a yes/no check's P(yes) held to its cut, a 1-5 critic's rating to its threshold), their keep decision
"every check passed" (a question later dropped as a near-duplicate was kept by the checks). A label
whose draft has no decision for the criterion is counted as `unscored`, not compared. Where the checks
decided every labelled draft alike (a uniform sample of kept questions: every one passed), the labels
cannot measure them: no kappa is computed from one class, and the report says so
(`Measure.unmeasurable`); such labels estimate the share of good kept questions (`qagen profile`).

For each 1-5 critic, the threshold 1-5 whose verdicts on the same measurements agree best with the
people (highest kappa; on ties the stricter, higher one) is found, and when it beats the run's own
threshold on enough labels and better than chance, the run's kept count under it is computed the way
`qagen stage filter` computes it (`qagen.review.thresholds`); else the report says why none is recommended.

For an evaluation directory, people's `correct` labels are compared with the correctness judge
(correct when `(score - 1) / 4 >= 0.5`) and with each boolean grader present.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from itertools import combinations
from pathlib import Path

from pydantic import BaseModel, Field

from qagen.critics import CriticSpec
from qagen.errors import QagenError
from qagen.generation.vetting import at_cut, row_decision
from qagen.records import CandidateRow, Criterion
from qagen.review.eval_answers import is_eval_dir, judge_says_correct, judges_present, read_answers
from qagen.review.kappa import Pair, agreement, confusion, kappa_of
from qagen.review.kept_sample import stored_kept_sample
from qagen.review.labels import Label, LabelKind, LabelStore
from qagen.review.run_drafts import RunDrafts, read_run_drafts
from qagen.review.sample import stored_sample
from qagen.review.thresholds import THRESHOLDS, ThresholdFit, best_threshold, fit_threshold, recommend

KEEP = "keep"


class ReviewerPair(BaseModel):
    """Two reviewers' agreement with each other on the items both labelled."""

    reviewers: tuple[str, str]
    n: int = Field(description="Items both labelled.")
    agreement: float
    kappa: float | None


class Measure(BaseModel):
    """The machine against people on one criterion (or the keep decision, or one judge)."""

    n: int = Field(description="Labels compared (one per reviewer and item).")
    items: int = Field(description="Items those labels are of.")
    agreement: float | None = Field(description="Raw agreement: the share of labels the machine agrees with.")
    kappa: float | None = Field(description="Cohen's kappa (None: undefined, or nothing compared).")
    kappa_low: float | None = Field(description="Lower bound of kappa's 95% bootstrap interval.")
    kappa_high: float | None = Field(description="Upper bound of kappa's 95% bootstrap interval.")
    confusion: dict[str, int] = Field(
        description="true_pass, false_pass (a false keep), false_fail (a false reject), true_fail: they add up to n."
    )
    unscored: int = Field(description="Labels not compared: the machine has no verdict on their item.")
    inter_reviewer: list[ReviewerPair] = Field(description="Each pair of reviewers with shared items.")
    threshold: ThresholdFit | None = Field(default=None, description="Criteria of a run: the threshold that fits best.")
    unmeasurable: str | None = Field(
        default=None,
        description="Why these labels cannot measure it: the machine decided every labelled item alike (every "
        "one kept, say, as on a uniform sample of kept questions), so no kappa is computed from one class; None "
        "when they can.",
    )


class Recommendation(BaseModel):
    criterion: str
    threshold: int
    sentence: str


class AgreementReport(BaseModel):
    directory: str
    kind: LabelKind
    labels: int = Field(description="Labels read (the latest per reviewer and item).")
    elsewhere: int = Field(
        description="Labels of items the directory no longer has (e.g. a run chunked again): not compared."
    )
    reviewers: list[str]
    measures: dict[str, Measure] = Field(description="Per criterion and `keep` (runs), per judge (evaluations).")
    recommendations: list[Recommendation]
    thresholds: dict[str, int] = Field(description="Runs: every criterion's threshold, the recommended ones applied.")
    filter_settings: dict[str, int | float] = Field(
        description="Runs: every setting that decides what a filter keeps, the recommended thresholds applied."
    )
    kept_now: int | None = Field(description="Runs: questions kept now.")
    kept_then: int | None = Field(description="Runs: questions kept with every recommendation applied (None: none).")
    undecided_then: int | None = Field(description="Runs: drafts left waiting for a critic never asked, then.")
    drawn: dict[str, int] = Field(
        default_factory=dict,
        description="Runs: the labels by how their drafts were drawn: `stratified` (the review sample, over kept "
        "drafts and each check's rejections), `kept` (the uniform sample of kept questions, which estimates the "
        "share of good kept questions), `other` (neither sample holds the draft now).",
    )


def measure_agreement(directory: Path, *, thresholds: bool = True) -> AgreementReport:
    """The agreement report of a run or evaluation directory's labels (see the module). No call.

    `thresholds=False` leaves out what other thresholds would keep (each is a filter's work).
    """
    if is_eval_dir(directory):
        return _evaluation(directory)
    return _run(directory, thresholds=thresholds)


def _labels(directory: Path, kind: LabelKind) -> list[Label]:
    labels = LabelStore(directory).of_kind(kind)
    if not labels:
        raise QagenError(f"{directory} has no {kind} labels yet; label a sample first with `qagen review {directory}`.")
    return labels


def _run(directory: Path, *, thresholds: bool) -> AgreementReport:
    drafts = read_run_drafts(directory)
    given = _labels(directory, "draft")
    labels = [label for label in given if drafts.get(label.item_id) is not None]
    rows = {label.item_id: row for label in labels if (row := drafts.get(label.item_id)) is not None}
    measures: dict[str, Measure] = {}
    registry = drafts.config.critic_registry()
    for criterion in drafts.asked():
        verdicts = [(label, passed) for label in labels if (passed := _passed(label, criterion)) is not None]
        if not verdicts:
            continue
        decided = [
            (label.item_id, decision, passed)
            for label, passed in verdicts
            if (decision := row_decision(rows[label.item_id], criterion)) is not None
        ]
        people = _by_reviewer(verdicts)
        compared = [Pair(item_id, decision.passed, passed) for item_id, decision, passed in decided]
        spec = registry.get(criterion)
        fit = None
        if spec.scale == "rating":  # other cuts of a 1-5 critic's measurement: which agrees best with people
            measured = [(item_id, decision.measurement, passed) for item_id, decision, passed in decided]

            def pairs_at(
                threshold: int, measured: list[tuple[str, float | None, bool]] = measured, spec: CriticSpec = spec
            ) -> list[Pair]:
                return [
                    Pair(item_id, value is not None and at_cut(spec, value, threshold), passed)
                    for item_id, value, passed in measured
                ]

            current = drafts.config.threshold(criterion)
            kappas = {t: kappa_of(confusion(pairs_at(t))) for t in THRESHOLDS}
            best_low = agreement(pairs_at(best_threshold(current, kappas))).kappa_low if decided else None
            fit = fit_threshold(current, kappas, labels=len(decided), best_low=best_low)
        measures[criterion] = _measure(compared, len(verdicts), people, fit)
    keeps = [label for label in labels if label.keep is not None]
    if keeps:
        critics = [(label, _critics_keep(drafts, rows[label.item_id])) for label in keeps]
        pairs = [Pair(label.item_id, keep, bool(label.keep)) for label, keep in critics if keep is not None]
        people = _by_reviewer((label, bool(label.keep)) for label in keeps)
        measures[KEEP] = _measure(pairs, len(keeps), people, None)
    advice = recommend(drafts, measures, predict=thresholds)
    for name, fit in advice.fits.items():
        measures[name] = measures[name].model_copy(update={"threshold": fit})
    return AgreementReport(
        directory=str(directory),
        kind="draft",
        labels=len(labels),
        elsewhere=len(given) - len(labels),
        reviewers=sorted({label.reviewer for label in labels}),
        measures=measures,
        recommendations=[Recommendation.model_validate(r) for r in advice.recommendations],
        thresholds=advice.thresholds,
        filter_settings=advice.filter_settings,
        kept_now=advice.kept_now,
        kept_then=advice.kept_then,
        undecided_then=advice.undecided_then,
        drawn=_drawn(directory, labels),
    )


def _drawn(directory: Path, labels: list[Label]) -> dict[str, int]:
    """How the labelled drafts were drawn (`AgreementReport.drawn`): a draft in both samples counts as stratified."""
    stratified = stored_sample(directory)
    kept = stored_kept_sample(directory)
    counts = {"stratified": 0, "kept": 0, "other": 0}
    for label in labels:
        if stratified is not None and label.item_id in stratified.ids:
            counts["stratified"] += 1
        elif kept is not None and label.item_id in kept.ids:
            counts["kept"] += 1
        else:
            counts["other"] += 1
    return {name: count for name, count in counts.items() if count}


def _passed(label: Label, criterion: Criterion) -> bool | None:
    verdict = label.criteria.get(criterion)
    return None if verdict is None else verdict.passed


def _critics_keep(drafts: RunDrafts, row: CandidateRow) -> bool | None:
    """The critics' keep decision: False when one rejects, True when all three pass, else None."""
    if drafts.rejected_by(row):
        return False
    return None if drafts.missing_scores(row) else True


def _evaluation(directory: Path) -> AgreementReport:
    answers = read_answers(directory)
    given = [label for label in _labels(directory, "answer") if label.correct is not None]
    labels = [label for label in given if label.item_id in answers]
    measures: dict[str, Measure] = {}
    for judge in judges_present(answers):
        pairs = [
            Pair(label.item_id, judge_says_correct(judge, value), bool(label.correct))
            for label in labels
            if (value := answers[label.item_id].verdicts.get(judge)) is not None
        ]
        people = _by_reviewer((label, bool(label.correct)) for label in labels)
        measures[judge] = _measure(pairs, len(labels), people, None)
    return AgreementReport(
        directory=str(directory),
        kind="answer",
        labels=len(labels),
        elsewhere=len(given) - len(labels),
        reviewers=sorted({label.reviewer for label in labels}),
        measures=measures,
        recommendations=[],
        thresholds={},
        filter_settings={},
        kept_now=None,
        kept_then=None,
        undecided_then=None,
    )


def _by_reviewer(verdicts: Iterable[tuple[Label, bool]]) -> dict[str, dict[str, bool]]:
    """Each reviewer's yes/no by item."""
    by_reviewer: dict[str, dict[str, bool]] = defaultdict(dict)
    for label, value in verdicts:
        by_reviewer[label.reviewer][label.item_id] = value
    return by_reviewer


def _measure(
    pairs: list[Pair], labelled: int, by_reviewer: dict[str, dict[str, bool]], fit: ThresholdFit | None
) -> Measure:
    result = agreement(pairs)
    unmeasurable = _one_class(pairs)
    if unmeasurable is not None:
        result = result._replace(kappa=None, kappa_low=None, kappa_high=None)
        if fit is not None and fit.withheld is None:
            fit = fit.model_copy(update={"withheld": f"the labels cannot measure it: {unmeasurable}"})
    return Measure(
        n=result.n,
        items=result.items,
        agreement=result.agreement,
        kappa=result.kappa,
        kappa_low=result.kappa_low,
        kappa_high=result.kappa_high,
        confusion=result.confusion._asdict(),
        unscored=labelled - result.n,
        inter_reviewer=_inter_reviewer(by_reviewer),
        threshold=fit,
        unmeasurable=unmeasurable,
    )


def _one_class(pairs: list[Pair]) -> str | None:
    """Why labels cannot measure a machine that decided every one of their items alike; None when it did not."""
    decisions = {pair.machine for pair in pairs}
    if len(decisions) != 1:
        return None
    decided = "passed" if decisions == {True} else "rejected"
    return (
        f"it {decided} every one of the {len(pairs)} labelled drafts, so its errors of the other kind cannot show "
        "(a uniform sample of kept questions estimates the share of good ones: `qagen profile`)"
    )


def _inter_reviewer(by_reviewer: dict[str, dict[str, bool]]) -> list[ReviewerPair]:
    pairs: list[ReviewerPair] = []
    for first, second in combinations(sorted(by_reviewer), 2):
        shared = sorted(set(by_reviewer[first]) & set(by_reviewer[second]))
        if not shared:
            continue
        compared = [Pair(item, by_reviewer[first][item], by_reviewer[second][item]) for item in shared]
        matrix = confusion(compared)
        agreed = (matrix.true_pass + matrix.true_fail) / matrix.n
        pairs.append(ReviewerPair(reviewers=(first, second), n=matrix.n, agreement=agreed, kappa=kappa_of(matrix)))
    return pairs
