"""The critic threshold that agrees best with people, and what it would do to the run.

For each criterion, the critic's verdicts at every threshold 1-5 are compared with the people's
labels; the threshold with the highest kappa fits best (on ties the stricter, higher one, which
keeps fewer questions for the same agreement). It is recommended when it beats the run's own
threshold, on at least `MIN_LABELS` labels, and agrees with people better than chance (a kappa
above 0 whose 95% bootstrap interval does not reach below 0). Otherwise no threshold is recommended and the
fit says why (`ThresholdFit.withheld`): a kappa from 4 labels, or a rise from -0.10 to 0.00 on
labels no threshold matches, is no reason to move one. What it would do is computed, not estimated: the run's
candidates are made again from its records with the new threshold, exactly as `qagen stage filter` makes
them (no call), and their kept count is the one filtering with it gives.

A lower threshold can leave drafts undecided: a score that stopped a draft's critics now passes, and
the critics after it were never asked. Those are counted (`undecided_then`), never guessed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, NamedTuple

from pydantic import BaseModel, Field

from qagen.review.run_drafts import RunDrafts, read_run_drafts

if TYPE_CHECKING:
    from qagen.review.agreement import Measure

MIN_LABELS = 20
"""Fewer labels than this on a criterion make its kappa too uncertain to act on."""
THRESHOLDS: tuple[int, ...] = (1, 2, 3, 4, 5)
_DIGITS = 12  # kappas equal to this many digits are a tie (the same agreement computed two ways)


class ThresholdFit(BaseModel):
    """The critic's agreement with people at each threshold, and the one that fits best."""

    current: int = Field(description="The run's threshold for the criterion.")
    best: int = Field(description="The threshold with the highest kappa (ties: the higher one).")
    kappas: dict[int, float | None] = Field(description="Kappa at each threshold 1-5 (None: undefined).")
    best_low: float | None = Field(
        default=None,
        description="The lower end of the 95% bootstrap interval of the kappa at `best` (None: undefined).",
    )
    withheld: str | None = Field(
        default=None,
        description="Why no threshold is recommended for the criterion: too few labels, or no threshold agrees "
        "with people better than chance; None when the fit can be acted on.",
    )
    kept_then: int | None = Field(default=None, description="Questions the run keeps at `best` (when recommended).")
    undecided_then: int | None = Field(default=None, description="Drafts left undecided at `best` (when recommended).")


def best_threshold(current: int, kappas: Mapping[int, float | None]) -> int:
    """The threshold of the highest of `kappas` (threshold -> kappa; ties: the higher threshold); the
    current threshold when none is defined."""
    defined = {threshold: kappa for threshold, kappa in kappas.items() if kappa is not None}
    return max(defined, key=lambda t: (round(defined[t], _DIGITS), t)) if defined else current


def fit_threshold(
    current: int, kappas: Mapping[int, float | None], *, labels: int, best_low: float | None
) -> ThresholdFit:
    """The fit of `kappas` over `labels` labels; `best_low` is the lower end of the best kappa's interval."""
    best = best_threshold(current, kappas)
    fit = ThresholdFit(current=current, best=best, kappas=dict(kappas), best_low=best_low)
    return fit.model_copy(update={"withheld": _withheld(fit, labels)})


def _withheld(fit: ThresholdFit, labels: int) -> str | None:
    """Why this fit is no ground to move a threshold (see the module); None when it is."""
    if labels < MIN_LABELS:
        return (
            f"only {labels} label{'s' if labels != 1 else ''} compared, too few to act on a kappa (at least "
            f"{MIN_LABELS} are needed): label more drafts with `qagen review`"
        )
    best = fit.kappas.get(fit.best)
    # Below 0, not at it: resamples that happen to hold no rejection by the critic give a kappa of exactly
    # 0, so a clear agreement with few rejections can have its interval end at 0.00; chance-level labels
    # reach below it.
    if best is None or best <= 0 or fit.best_low is None or fit.best_low < 0:
        interval = "" if fit.best_low is None else f", 95% interval from {fit.best_low:.2f}"
        return (
            f"no threshold agrees with your reviewers better than chance (the best, {fit.best}, has kappa "
            f"{_kappa(best)}{interval}): look at the labels and the critic's prompt before moving its threshold"
        )
    return None


def improves(fit: ThresholdFit) -> bool:
    """Whether the best threshold agrees better with people than the current one."""
    best, now = fit.kappas.get(fit.best), fit.kappas.get(fit.current)
    return fit.best != fit.current and best is not None and (now is None or round(best - now, _DIGITS) > 0)


class Advice(NamedTuple):
    recommendations: list[dict[str, object]]
    fits: dict[str, ThresholdFit]
    """The fits, with what each recommended threshold alone does to the run."""
    thresholds: dict[str, int]
    filter_settings: dict[str, int | float]
    kept_now: int
    kept_then: int | None
    undecided_then: int | None


def recommend(drafts: RunDrafts, measures: Mapping[str, Measure], *, predict: bool = True) -> Advice:
    """One recommendation per criterion whose best threshold beats the current one (see the module),
    and the kept count with all of them applied (none with `predict=False`: the fits only)."""
    kept_now = _kept(drafts)[0]
    fits: dict[str, ThresholdFit] = {}
    recommendations: list[dict[str, object]] = []
    changed: dict[str, int] = {}
    for criterion, measure in measures.items():
        fit = measure.threshold
        if fit is None:
            continue
        if predict and fit.withheld is None and improves(fit):
            kept, undecided = _kept(_with(drafts, {criterion: fit.best}))
            fit = fit.model_copy(update={"kept_then": kept, "undecided_then": undecided})
            changed[criterion] = fit.best
            recommendations.append(
                {
                    "criterion": criterion,
                    "threshold": fit.best,
                    "sentence": _sentence(criterion, fit, measure.n, kept_now),
                }
            )
        fits[criterion] = fit
    thresholds: dict[str, int] = {
        criterion: changed.get(criterion, drafts.config.threshold(criterion)) for criterion in drafts.rated()
    }
    kept_then = undecided_then = None
    if changed:
        kept_then, undecided_then = _kept(_with(drafts, changed))
    return Advice(
        recommendations, fits, thresholds, filter_settings(drafts, thresholds), kept_now, kept_then, undecided_then
    )


def filter_settings(drafts: RunDrafts, thresholds: Mapping[str, int]) -> dict[str, int | float]:
    """Every setting that decides which drafts a filter keeps, with `thresholds` for the critics: a filter
    given all of them keeps what `recommend` predicts, whatever its defaults are."""
    config = drafts.config
    settings: dict[str, int | float] = {f"min_{criterion}": thresholds[criterion] for criterion in drafts.rated()}
    # The other checks' cuts are the run's own: a filter given them decides them as the run did.
    settings.update({f"cut_{name}": value for name, value in sorted(config.cuts.items())})
    settings.update(
        max_answer_chars=config.max_answer_chars,
        max_question_chars=config.max_question_chars,
        dedup_threshold=config.dedup_threshold,
    )
    return settings


def _with(drafts: RunDrafts, thresholds: dict[str, int]) -> RunDrafts:
    """The run's candidates made again with these thresholds (as `qagen stage filter` would make them)."""
    config = drafts.config
    scores: dict[str, int] = {str(criterion): score for criterion, score in config.min_scores.items()}
    scores.update(thresholds)
    return read_run_drafts(drafts.run.root, config.model_copy(update={"min_scores": scores}))


def _kept(drafts: RunDrafts) -> tuple[int, int]:
    statuses = [row.status for row in drafts.rows]
    return statuses.count("kept"), statuses.count("undecided")


def _sentence(criterion: str, fit: ThresholdFit, n: int, kept_now: int) -> str:
    now, best = fit.kappas.get(fit.current), fit.kappas.get(fit.best)
    kept = fit.kept_then or 0
    if kept_now == 0:
        change = f"keeps {kept} questions instead of none"
    else:
        percent = round(100 * abs(kept - kept_now) / kept_now)
        change = "keeps as many" if kept == kept_now else f"keeps {percent}% {'more' if kept > kept_now else 'fewer'}"
        change += f" ({kept_now} -> {kept} questions)"
    waiting = f"; {fit.undecided_then} drafts would wait for a critic not asked yet" if fit.undecided_then else ""
    return (
        f"{criterion}: threshold {fit.best} matches your reviewers better (kappa {_kappa(now)} -> {_kappa(best)}, "
        f"{n} labels) and {change}{waiting}"
    )


def _kappa(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.2f}"
