"""The share of a build's kept questions a reviewer keeps, estimated from the labels of a uniform random
sample of them (`qagen.review.kept_sample`), with a Wilson score interval (`summary.json`'s `kept_quality`).

Which labels count: the keep decisions on the sample's questions, in its order, up to the first
question nobody decided on (the beginning of a random order is a uniform random sample; a reviewer who
skips a question may skip the hard ones, so the labels after it are reported, not counted). A question
several reviewers decided on counts once, as their majority; a tie counts as not kept, since a question
half its reviewers reject is not one a reviewer keeps.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from statistics import NormalDist

from qagen.errors import QagenError
from qagen.generation.finalize import replace_summary
from qagen.generation.kept_quality import carried_over, kept_fingerprint, read_kept_ids, stored_certified
from qagen.records import MIN_KEPT_LABELS, BuildSummary, KeptQuality
from qagen.review.kept_sample import KeptSample, stored_kept_sample
from qagen.review.labels import Label, LabelStore
from qagen.runs.rundir import RunDir

CONFIDENCE = 0.95


def wilson_interval(successes: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The Wilson score interval of a binomial share (Wilson 1927; no continuity correction): the shares
    p whose normal test against `successes / n` is not rejected at `confidence`, that is the roots of
    (phat - p)^2 = z^2 p (1 - p) / n. Unlike the normal approximation it stays inside [0, 1] and keeps
    its coverage near 0 and 1, and with few labels. Needs n > 0."""
    if n <= 0 or not 0 <= successes <= n:
        raise ValueError(f"a share needs 0 <= successes <= n and n > 0, got {successes} of {n}")
    z = NormalDist().inv_cdf(1 - (1 - confidence) / 2)
    share, spread = successes / n, z * z / n
    centre = (share + spread / 2) / (1 + spread)
    half = z * math.sqrt(share * (1 - share) / n + spread / (4 * n)) / (1 + spread)
    # At 0 or n successes an end is exactly 0 or 1; computed, it would be off by a rounding error.
    low = 0.0 if successes == 0 else centre - half
    high = 1.0 if successes == n else centre + half
    return low, high


def keep_decisions(labels: Iterable[Label]) -> dict[str, bool]:
    """Each drafted question's keep decision, by id: its reviewers' majority (a tie: not kept)."""
    votes: dict[str, list[bool]] = defaultdict(list)
    for label in labels:
        if label.kind == "draft" and label.keep is not None:
            votes[label.item_id].append(label.keep)
    return {item_id: sum(kept) * 2 > len(kept) for item_id, kept in votes.items()}


def counted_ids(sample: KeptSample, decisions: dict[str, bool]) -> list[str]:
    """The sample's questions whose labels count: its beginning up to the first nobody decided on."""
    counted = 0
    while counted < len(sample.ids) and sample.ids[counted] in decisions:
        counted += 1
    return sample.ids[:counted]


def estimate_from(sample: KeptSample, decisions: dict[str, bool], kept_ids: list[str]) -> KeptQuality:
    """The estimate from a sample, the keep decisions by question id, and the run's kept questions now."""
    counted = len(counted_ids(sample, decisions))
    kept_by_reviewers = sum(decisions[item_id] for item_id in sample.ids[:counted])
    later = sum(item_id in decisions for item_id in sample.ids[counted:])
    quality = KeptQuality(
        status="not_estimated" if counted == 0 and not later else "too_few",
        labels=counted,
        kept_by_reviewers=kept_by_reviewers,
        labels_not_counted=later,
        kept=sample.kept,
        kept_fingerprint=sample.kept_fingerprint,
    )
    if counted >= MIN_KEPT_LABELS:
        low, high = wilson_interval(kept_by_reviewers, counted, CONFIDENCE)
        quality = quality.model_copy(
            update={
                "status": "estimated",
                "share": kept_by_reviewers / counted,
                "low": low,
                "high": high,
                "confidence": CONFIDENCE,
                "method": "wilson",
            }
        )
    return carried_over(quality, lambda: kept_ids)


def within_certified(sample: KeptSample, decisions: dict[str, bool], kept_ids: list[str]) -> KeptSample:
    """The sample's counted questions that a certified threshold still keeps (`qagen.review.certify`): the
    labelled questions of a uniform sample of the kept set at or above a threshold on their score are a
    uniform sample of the questions kept there, so they estimate the share of the certified set."""
    kept = set(kept_ids)
    return sample.model_copy(
        update={
            "ids": [item_id for item_id in counted_ids(sample, decisions) if item_id in kept],
            "kept": len(kept_ids),
            "kept_fingerprint": kept_fingerprint(kept_ids),
        }
    )


def estimate_kept_quality(run_dir: Path) -> KeptQuality:
    """The estimate for the run in `run_dir` from its kept sample and labels as they are now (no write); of the
    certified kept set, from the labels at or above its threshold, when the run's summary says one was."""
    sample = stored_kept_sample(run_dir)
    if sample is None:
        return KeptQuality()
    with LabelStore(run_dir) as store:
        decisions = keep_decisions(store.of_kind("draft"))
    kept_ids = read_kept_ids(RunDir(run_dir))
    certified = stored_certified(RunDir(run_dir).summary_file)
    if certified is not None and certified.status == "certified":
        sample = within_certified(sample, decisions, kept_ids)
    return estimate_from(sample, decisions, kept_ids)


def refresh_kept_quality(run_dir: Path) -> KeptQuality | None:
    """Estimate again and put the estimate in the run's `summary.json` when it changed; None when the run
    has no summary yet (a build not finished: it has no kept question to estimate either)."""
    run = RunDir(run_dir)
    if not run.summary_file.is_file():
        return None
    quality = estimate_kept_quality(run_dir)
    try:
        summary = BuildSummary.model_validate_json(run.summary_file.read_bytes())
    except (OSError, ValueError) as exc:
        raise QagenError(
            f"{run.summary_file} cannot be read ({exc}); write it again with `qagen stage filter {run_dir}` "
            "(no LLM call), then estimate again."
        ) from exc
    if summary.kept_quality != quality:
        replace_summary(run, summary.model_copy(update={"kept_quality": quality}))
    return quality
