"""How sure a score is: bootstrap confidence intervals and a paired comparison of two runs.

Deterministic: the randomness is numpy's `default_rng(seed)`, so the same inputs and seed give the
same interval and p-value (numpy keeps a Generator's stream stable within a release line). The
resamples are drawn a block of rows at a time, so memory stays ~50 MB whatever the number of
questions.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

__all__ = ["MeanCI", "PairedResult", "mean_ci", "paired_test", "resampled_positions"]

BLOCK_DRAWS = 1 << 20
"""Draws per block: resamples are made a block of rows at a time, so memory stays bounded whatever n is."""

# Resampled statistics that equal the observed one in exact arithmetic can differ from it in the
# last bits of a float; compare with this relative tolerance, as scipy.stats.permutation_test does.
_RELATIVE_TOLERANCE = 100 * 2.220446049250313e-16


class MeanCI(NamedTuple):
    """The mean of `n` values and a percentile-bootstrap confidence interval `[low, high]`."""

    mean: float
    low: float
    high: float
    n: int


class PairedResult(NamedTuple):
    """Run A minus run B on `n` shared questions.

    `mean_diff` is the mean of the per-question differences `a_i - b_i`, `[low, high]` its
    percentile-bootstrap confidence interval, `p_value` the two-sided sign-flip test of "no
    difference".
    """

    mean_diff: float
    low: float
    high: float
    p_value: float
    n: int


def _checked(values: Sequence[float], name: str) -> list[float]:
    checked = [float(value) for value in values]
    if not checked:
        raise ValueError(f"{name} is empty: there is nothing to average")
    if not all(math.isfinite(value) for value in checked):
        # A NaN would silently poison every resample; missing scores must be dropped by the caller.
        raise ValueError(f"{name} contains NaN or infinite values")
    return checked


def _check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")


def _check_resamples(n_resamples: int) -> None:
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be at least 1, got {n_resamples}")


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


def resampled_positions(rng: np.random.Generator, count: int, n: int) -> Iterator[npt.NDArray[np.int64]]:
    """`count` resamples of `range(n)` with replacement (one a row), a block of rows at a time."""
    rows_per_block = max(1, BLOCK_DRAWS // n)
    for done in range(0, count, rows_per_block):
        yield rng.integers(0, n, size=(min(rows_per_block, count - done), n))


def _bootstrap_interval(
    values: Sequence[float], confidence: float, n_resamples: int, rng: np.random.Generator
) -> tuple[float, float]:
    """Percentile bootstrap: the (1-c)/2 and (1+c)/2 quantiles of the means of resamples drawn with
    replacement, each as large as `values` (quantiles interpolated linearly, numpy's default)."""
    n = len(values)
    if n == 1:
        # Every resample is the one value: the interval is a point (and carries no information).
        return values[0], values[0]
    array = np.array(values, dtype=np.float64)
    means = np.concatenate([array[picks].mean(axis=1) for picks in resampled_positions(rng, n_resamples, n)])
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return float(low), float(high)


def mean_ci(
    values: Sequence[float],
    *,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> MeanCI:
    """Mean of `values` with a percentile-bootstrap confidence interval.

    Draw `n_resamples` resamples of size n with replacement, take each one's mean, and report the
    `(1 - confidence) / 2` and `(1 + confidence) / 2` quantiles of those means (linear
    interpolation).
    The percentile bootstrap needs no normality assumption, which suits scores bounded in [0, 1]
    with many 0s and 1s (hit@k, exact match); with few questions (n < ~20) it is too narrow, so read
    such intervals as rough.

    Raises `ValueError` on an empty sequence (a mean of nothing is undefined, and returning a
    placeholder would let an empty run look like a score), on NaN or infinite values, and on
    `confidence` outside (0, 1). With n == 1, `low == high == mean`.
    """
    data = _checked(values, "values")
    _check_confidence(confidence)
    _check_resamples(n_resamples)
    low, high = _bootstrap_interval(data, confidence, n_resamples, np.random.default_rng(seed))
    return MeanCI(mean=_mean(data), low=low, high=high, n=len(data))


def _sign_flip_p_value(differences: Sequence[float], n_resamples: int, rng: np.random.Generator) -> float:
    """Two-sided p-value of the sign-flip (paired permutation) test of mean difference zero.

    Under the null hypothesis that runs A and B are exchangeable on each question, each difference
    is as likely to have either sign, so the statistic T = sum(s_i d_i) over random signs s_i = ±1
    is the null distribution of the observed sum. p = P(|T| >= |observed|).

    When 2^n <= n_resamples every sign pattern is enumerated and p is exact. Otherwise it is
    estimated from `n_resamples` random patterns as (1 + hits) / (1 + n_resamples) (the observed
    pattern counts as one), which is never 0 and keeps the test valid (Phipson & Smyth 2010).
    """
    n = len(differences)
    observed = abs(math.fsum(differences))
    threshold = observed - _RELATIVE_TOLERANCE * observed
    n_patterns = 1 << n
    if n_patterns <= n_resamples:
        hits = sum(
            abs(math.fsum(s * d for s, d in zip(signs, differences, strict=True))) >= threshold
            for signs in itertools.product((1.0, -1.0), repeat=n)
        )
        return hits / n_patterns
    array = np.array(differences, dtype=np.float64)
    total = float(array.sum())
    rows_per_block = max(1, BLOCK_DRAWS // n)
    hits = 0
    for done in range(0, n_resamples, rows_per_block):
        # One random bit per question: 1 keeps the sign of the difference, 0 flips it, so the
        # flipped sum is 2 * (sum of the kept) - (sum of all).
        kept = rng.integers(0, 2, size=(min(rows_per_block, n_resamples - done), n)).astype(np.float64)
        hits += int(np.count_nonzero(np.abs(2.0 * (kept @ array) - total) >= threshold))
    return (1 + hits) / (1 + n_resamples)


def paired_test(
    a: Sequence[float],
    b: Sequence[float],
    *,
    confidence: float = 0.95,
    n_resamples: int = 10000,
    seed: int = 0,
) -> PairedResult:
    """Compare two runs scored on the same questions, question by question.

    `a[i]` and `b[i]` must be the two runs' scores on the same question (align them by question id
    first, keeping only shared questions). With d_i = a_i - b_i:

    - `mean_diff` = mean(d); positive means run A scored higher;
    - `[low, high]`: percentile-bootstrap interval of mean(d), resampling questions (as `mean_ci`);
    - `p_value`: two-sided sign-flip permutation test of "no difference"; see `_sign_flip_p_value`.
      Exact when 2^n <= n_resamples, otherwise a Monte Carlo estimate.

    Pairing removes the question-to-question variation that both runs share (hard questions are hard
    for both), so it detects much smaller differences than comparing two independent means.
    Identical runs give mean_diff 0, interval [0, 0] and p-value 1.

    Raises `ValueError` if the lengths differ, the runs are empty or contain NaN/infinite values,
    or `confidence` is outside (0, 1).
    """
    first = _checked(a, "a")
    second = _checked(b, "b")
    if len(first) != len(second):
        raise ValueError(f"a and b must score the same questions: got {len(first)} and {len(second)} scores")
    _check_confidence(confidence)
    _check_resamples(n_resamples)
    differences = [x - y for x, y in zip(first, second, strict=True)]
    rng = np.random.default_rng(seed)
    low, high = _bootstrap_interval(differences, confidence, n_resamples, rng)
    p_value = _sign_flip_p_value(differences, n_resamples, rng)
    return PairedResult(mean_diff=_mean(differences), low=low, high=high, p_value=p_value, n=len(differences))
