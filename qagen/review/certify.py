"""Certified acceptance: the lowest threshold on the drafts' score at which the share of kept questions a
reviewer keeps is at least `precision`, with probability at least `confidence`, from reviewer labels of a
uniform random sample of the kept questions (`qagen.review.kept_sample`).

The method (Learn-then-Test, Angelopoulos et al. 2021, with a Clopper-Pearson bound; as in "Trust or
Escalate", Jung, Brahman and Choi 2025):

- at a threshold t, the labelled drafts whose score is at least t are a uniform sample of the kept drafts
  whose score is at least t (the sample is uniform over the kept set; holding a score to t keeps or drops
  a draft whatever its label). Of those n, e are errors (a reviewer did not keep them).
- the one-sided Clopper-Pearson upper bound on the error rate at t is the p at which a binomial(n, p)
  gives e errors or fewer with probability 1 - confidence (the Beta(e + 1, n - e) quantile at
  `confidence`). The hypothesis "the error above t exceeds 1 - precision" is rejected when the bound is
  at most 1 - precision.
- fixed-sequence testing: the thresholds are tested from the highest down, and the search stops at the
  first that fails; the certified threshold is the lowest that passed. As the order is fixed before the
  labels are read, every hypothesis is tested at the full level and the confidence holds over the whole
  search (the family-wise error is at most 1 - confidence).
- the sequence is the labelled drafts' distinct scores, and starts at the highest one with at least
  `labels_to_certify(precision, confidence)` labelled drafts at or above it: a threshold with fewer
  cannot pass even with no error, so testing it would only end the search. The order depends on the
  scores alone, not on the labels, so it is still fixed before the labels are read.

Labels across rounds (a build to a `target` size): the labels are of a uniform sample of one kept set,
K0, the drafts the settings kept of those asked of each type when the sample was drawn
(`KeptSample.kept_from`); the run may have drafted more since. The certificate is about the drafting, not
K0 alone: each draft is a draw of one process (passages from the sampling order, the generator's draft,
the checks' verdicts), and the labelled drafts at or above a threshold are draws of it given that they
pass there. So the certified threshold holds for any draft of the same process, a later round's included,
and a build to a target size counts only the drafts at or above it
(`qagen.generation.pipeline.certified_settings`). That needs:

- the same process, deciding as before: a run refuses another model or prompt, and the settings,
  filtering K0's drafts again, must keep K0 (its fingerprint), or the labels are stale. The check
  filters those drafts, not the run's latest sample, so growing the run by rounds (or choosing a smaller
  target from it) leaves the labels as they were; other cuts make them stale.
- the labelled drafts a uniform sample of K0: the sample's random order, counted up to the first question
  not labelled (`qagen.review.estimate.counted_ids`).
- a later draft exchangeable with K0's: the sampling order (`qagen.generation.sample.sampling_order`) takes
  each document's chunks in a random order, so a later draft is exchangeable with the earlier drafts of its
  document; across documents the order is coverage first, then by length, and the target's choice
  (`over_target`) spreads the kept questions over documents, reading no score. Where the share of good
  drafts at a score differs between documents, the claim for drafts far beyond the labelled ones leans on
  that difference being small; labels of a sample drawn from the grown kept set (`kept_sample` draws it
  anew from the kept set as it is) remove the lean.

Growth ends the sample's uniformity over the kept set (a later draft could never be drawn into it). The
certificate does not need it (the threshold is the process's, above); the Wilson estimate beside it reads
the labelled drafts the grown certified set holds as draws of the same process
(`qagen.review.estimate.within_certified`).

The score is the combined score `predicted_keep` (`qagen.generation.score`) when the labelled drafts' rows
have it, else the `supported` P(yes). Either is fixed before the labels it is certified from are read: the
check's P(yes) is the model's, and the combined score's coefficients are the shipped ones, fitted on qagen's
reviewed sets (`score_model.json` says which), never on the run's labels. A score fitted on the labels it
certifies from would choose its threshold on drafts it has already seen, and claim more than they back.

Nothing here calls a model: the scores are the measurements and the score the vetting already stored.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Literal, NamedTuple

from qagen.config import BuildConfig
from qagen.errors import QagenError
from qagen.generation.finalize import Kept, kept_of
from qagen.generation.kept_quality import kept_fingerprint
from qagen.generation.ledger import Ledger
from qagen.generation.score import SCORE_COLUMN
from qagen.generation.tasks import BuildTasks
from qagen.generation.vetting import CERTIFIED_CHECK, certified_config, row_decision
from qagen.generation.write import DATA_FILE
from qagen.records import BuildSummary, CandidateRow, Certified
from qagen.review.estimate import counted_ids, keep_decisions, refresh_kept_quality
from qagen.review.kept_sample import KeptSample, stored_kept_sample
from qagen.review.labels import LabelStore
from qagen.runs.rundir import RunDir

CONFIDENCE = BuildConfig.model_fields["confidence"].default
"""The default confidence of a certified threshold (`filter.confidence`)."""

CertificationStatus = Literal["certified", "too_few"]


class Scored(NamedTuple):
    """One labelled draft: its score (today the `supported` P(yes)) and whether a reviewer keeps it."""

    score: float
    kept: bool


class Certification(NamedTuple):
    """What the labels certify (see the module)."""

    status: CertificationStatus
    precision: float
    confidence: float
    labels: int
    """The labelled drafts the search read."""
    threshold: float | None
    """The certified threshold: keep the drafts whose score is at least it. None: nothing certified."""
    labels_above: int
    """Labelled drafts at or above the threshold (all of them when nothing is certified)."""
    errors_above: int
    """Of those, the ones a reviewer does not keep."""
    upper_bound: float | None
    """The Clopper-Pearson upper bound on the error at the threshold; None when nothing was tested."""
    more_labels: int
    """When nothing is certified: how many more labels at or above the first threshold tested (any label,
    when there were too few to test one), if they hold no error, would let its bound reach 1 - precision
    (0 when certified)."""


def error_upper_bound(errors: int, n: int, confidence: float) -> float:
    """The one-sided Clopper-Pearson upper bound on a binomial error rate from `errors` of `n`: the p
    with P(Binomial(n, p) <= errors) = 1 - confidence; 1 with no observation or every one an error."""
    if not 0 <= errors <= n:
        raise ValueError(f"errors must lie in [0, n], got {errors} of {n}")
    if not 0 < confidence < 1:
        raise ValueError(f"a confidence lies strictly between 0 and 1, got {confidence}")
    if errors == n:
        return 1.0
    alpha = 1 - confidence
    if errors == 0:  # closed form: (1 - p)^n = alpha
        return 1 - float(alpha ** (1 / n))
    low, high = errors / n, 1.0
    # The binomial CDF falls as p grows: bisect to well below any share a report prints.
    for _ in range(60):
        middle = (low + high) / 2
        if _binomial_cdf(errors, n, middle) > alpha:
            low = middle
        else:
            high = middle
    return high


def _binomial_cdf(k: int, n: int, p: float) -> float:
    """P(Binomial(n, p) <= k), summed in log space so that large n neither overflows nor underflows."""
    log_p, log_q = math.log(p), math.log1p(-p)
    terms = [
        math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * log_p + (n - i) * log_q
        for i in range(k + 1)
    ]
    top = max(terms)
    return min(1.0, math.exp(top) * sum(math.exp(term - top) for term in terms))


def bound_at_most(errors: int, n: int, confidence: float, level: float) -> bool:
    """Whether `error_upper_bound(errors, n, confidence)` is at most `level`, by one binomial CDF: the CDF at
    `errors` falls as p grows and equals 1 - confidence at the bound, so the bound is at most `level` exactly
    when P(Binomial(n, level) <= errors) is at most 1 - confidence (the search tests every threshold so)."""
    if errors == n:
        return level >= 1
    return _binomial_cdf(errors, n, level) <= 1 - confidence


def labels_to_certify(precision: float, confidence: float, errors: int = 0) -> int:
    """The fewest labelled drafts with `errors` errors whose bound reaches 1 - precision."""
    _check_precision(precision)
    level = 1 - precision
    # The bound falls as n grows with the errors held: double past the answer, then bisect to the fewest.
    low, high = max(errors, 1) - 1, max(errors, 1)
    while not bound_at_most(errors, high, confidence, level):
        low, high = high, high * 2
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if bound_at_most(errors, middle, confidence, level) else (middle, high)
    return high


def certify(scored: Sequence[Scored], precision: float, confidence: float = CONFIDENCE) -> Certification:
    """The lowest threshold the labels certify at `precision` with `confidence` (see the module)."""
    _check_precision(precision)
    ordered = sorted(scored, key=lambda item: item.score, reverse=True)
    total_errors = sum(not item.kept for item in ordered)
    fewest = labels_to_certify(precision, confidence)
    threshold: float | None = None
    above = errors = 0
    bound: float | None = None
    index = 0
    while index < len(ordered):
        score = ordered[index].score
        # Every draft tied at this score is at or above the threshold `score`.
        end = index
        while end < len(ordered) and ordered[end].score == score:
            end += 1
        index = end
        if end < fewest:
            continue
        tested_errors = sum(not item.kept for item in ordered[:end])
        if not bound_at_most(tested_errors, end, confidence, 1 - precision):
            if threshold is None:
                above, errors, bound = end, tested_errors, error_upper_bound(tested_errors, end, confidence)
            break
        threshold, above, errors = score, end, tested_errors
    if threshold is not None:
        bound = error_upper_bound(errors, above, confidence)
        return Certification("certified", precision, confidence, len(ordered), threshold, above, errors, bound, 0)
    if bound is None:  # fewer labels than any threshold needs
        above, errors = len(ordered), total_errors
    # At the first threshold tested (or all the labels, when none was), the labels it lacks if they hold no error.
    more = labels_to_certify(precision, confidence, errors) - above
    return Certification("too_few", precision, confidence, len(ordered), None, above, errors, bound, more)


def _check_precision(precision: float) -> None:
    if not 0 < precision < 1:
        raise ValueError(f"a precision lies strictly between 0 and 1, got {precision}")


def certify_run(run_dir: Path, config: BuildConfig) -> Certified:
    """What the labels of `run_dir`'s kept sample certify at `config.precision` (which must be set), with the
    labelled drafts' rows as `config` decides them before any certified cut; stale when `config` no longer
    keeps, of the drafts the sample's kept set was filtered from, that set (see the module)."""
    if config.precision is None:
        raise ValueError("certify_run needs a precision (`filter.precision`)")
    on: str = config.certify_on
    if config.target is not None and on != CERTIFIED_CHECK:
        # A build's rounds count their drafts from the records, without the BM25 ranks the combined score
        # reads (the ranks are the final write's), so they could not hold it to a threshold as the output does.
        if on == SCORE_COLUMN:
            raise QagenError(
                f"a build to a `target` size certifies on {CERTIFIED_CHECK} only: its rounds count drafts without "
                f"the BM25 ranks {SCORE_COLUMN} reads. Set `certify_on` to {CERTIFIED_CHECK}, or build without a "
                "`target`.",
                settings=("certify_on", "target"),
            )
        on = CERTIFIED_CHECK
    sample = stored_kept_sample(run_dir)
    with LabelStore(run_dir) as store:
        decisions = keep_decisions(store.of_kind("draft"))
    ids = counted_ids(sample, decisions) if sample is not None else []
    stale = False
    rows: list[CandidateRow] = []
    if sample is not None:
        kept = _kept_from(RunDir(run_dir), config, sample, ids)
        stale = sample.kept_fingerprint != kept_fingerprint(kept.ids)
        rows = list(kept.rows.values())
    stored = stored_scores(run_dir) if on != CERTIFIED_CHECK else None
    combined = stored is not None and any(stored.get(item_id) is not None for item_id in ids)
    if on == SCORE_COLUMN and not combined:
        raise QagenError(
            f"`certify_on` is {SCORE_COLUMN}, and the run's candidates have no such score for the labelled drafts "
            f"(written before it, or not scored): run the build again (no call), or certify on {CERTIFIED_CHECK}."
        )
    if stored is not None and combined:
        scores = stored
    else:
        scores = {row.id: decided.measurement for row in rows if (decided := row_decision(row, CERTIFIED_CHECK))}
    # A draft with no score (its check decided by its written word; not scored) is kept at any threshold: it
    # counts as scored above all.
    scored = [
        Scored(score if (score := scores.get(item_id)) is not None else math.inf, decisions[item_id]) for item_id in ids
    ]
    result = certify(scored, config.precision, config.confidence)
    return Certified(
        status="stale" if stale else result.status,
        precision=result.precision,
        confidence=result.confidence,
        score=f"{SCORE_COLUMN}, the combined score of coefficients fitted on qagen's reviewed sets"
        if combined
        else f"{CERTIFIED_CHECK} P(yes)",
        cut_on=SCORE_COLUMN if combined else CERTIFIED_CHECK,
        labels=result.labels,
        threshold=None if stale else result.threshold,
        labels_above=result.labels_above,
        errors_above=result.errors_above,
        upper_bound=result.upper_bound,
        more_labels=result.more_labels,
    )


def stored_scores(run_dir: Path) -> dict[str, float | None] | None:
    """Each candidate's combined score as the build wrote it (`candidates/`, with the BM25 ranks the build
    computed: the scores the filter holds to a certified cut); None when the run's candidates have no such
    column (written before it) or none are written yet."""
    import pyarrow as pa

    path = RunDir(run_dir).candidates_dir / DATA_FILE
    if not path.is_file():
        return None
    with pa.memory_map(str(path)) as source:
        table = pa.ipc.open_stream(source).read_all()
    if SCORE_COLUMN not in table.column_names:
        return None
    ids = [str(item_id) for item_id in table.column("id").to_pylist()]
    return dict(zip(ids, table.column(SCORE_COLUMN).to_pylist(), strict=True))


def _kept_from(run: RunDir, config: BuildConfig, sample: KeptSample, labelled: Collection[str]) -> Kept:
    """The drafts the sample's kept set was filtered from, filtered again as `config` filters them (to the
    target and certified threshold that set was kept at; no call), with the labelled drafts' rows. A sample
    that does not say what its set was kept from (an older file) is of the run's drafts as they are now."""
    from qagen.generation.pipeline import load_sample  # the build's module: only when certifying

    settings, drafts = config, None
    if (kept_from := sample.kept_from) is not None:
        drafts = kept_from.drafts
        settings = config.model_copy(update={"target": kept_from.target})
        if kept_from.threshold is not None:
            settings = certified_config(settings, kept_from.threshold, kept_from.cut_on)
    tasks = BuildTasks.for_config(settings, run.iter_chunks)
    ledger = Ledger.read(run)
    try:
        return kept_of(settings, tasks, load_sample(settings, run, drafts), ledger, set(labelled))
    finally:
        ledger.close()


def certifier(run: RunDir, config: BuildConfig) -> Certified:
    """`certify_run` as a build asks it (`qagen.generation.pipeline.Certifier`): under its lock, before any round."""
    return certify_run(run.root, config)


def certify_and_filter(run: RunDir, config: BuildConfig, tasks: BuildTasks) -> BuildSummary:
    """Filter the run's records into its outputs once (no call: `qagen stage filter`); with `config.precision`,
    holding the drafts to the threshold the run's labels certify when they certify one, with what was certified
    and the estimate beside it in `summary.json`. The caller holds the run's lock."""
    from qagen.generation.pipeline import certified_settings, finalize, load_sample  # the build's module

    certified = certify_run(run.root, config) if config.precision is not None else None
    kept_by = certified_settings(config, certified)
    summary = finalize(kept_by, run, tasks, load_sample(kept_by, run), certified)
    return summary if certified is None else with_estimate(run, summary)


def with_estimate(run: RunDir, summary: BuildSummary) -> BuildSummary:
    """`summary` with the estimate from the labels as they are now (of a certified set, from the labels at or
    above its threshold), put in `summary.json` too. The caller holds the run's lock."""
    quality = refresh_kept_quality(run.root)
    return summary if quality is None else summary.model_copy(update={"kept_quality": quality})
