"""Bootstrap intervals and the paired test: properties, and agreement with scipy and exact enumeration."""

from __future__ import annotations

import itertools
import math
import random
import statistics as pystats

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qagen.evaluate.metrics.statistics import MeanCI, PairedResult, mean_ci, paired_test

scores = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


def sample(n: int, seed: int, p: float = 0.6) -> list[float]:
    """n scores in [0, 1] shaped like a RAG metric: many exact 0s and 1s, some partial credit."""
    rng = random.Random(seed)
    return [1.0 if (u := rng.random()) < p * 0.8 else 0.0 if u > 0.8 + 0.2 * p else rng.random() for _ in range(n)]


# --------------------------------------------------------------------------------------------------
# mean_ci
# --------------------------------------------------------------------------------------------------


@given(st.lists(scores, min_size=1, max_size=40), st.integers(0, 2**32))
@settings(max_examples=150, deadline=None)
def test_mean_ci_contains_the_mean(values: list[float], seed: int) -> None:
    result = mean_ci(values, n_resamples=200, seed=seed)
    assert result.mean == pystats.fmean(values)
    assert result.low <= result.mean + 1e-12
    assert result.mean <= result.high + 1e-12
    assert result.n == len(values)


def test_mean_ci_is_deterministic_with_a_seed() -> None:
    values = sample(50, seed=1)
    assert mean_ci(values, seed=7) == mean_ci(values, seed=7)
    assert mean_ci(values, seed=7) != mean_ci(values, seed=8)


def test_mean_ci_narrows_with_n() -> None:
    widths = []
    for n in (25, 100, 400, 1600):
        result = mean_ci(sample(n, seed=n), n_resamples=1000)
        widths.append(result.high - result.low)
    # The width shrinks like 1/sqrt(n): about half for each fourfold n.
    for wider, narrower in itertools.pairwise(widths):
        assert 0.35 < narrower / wider < 0.7


def test_mean_ci_widens_with_confidence() -> None:
    values = sample(60, seed=3)
    ci80 = mean_ci(values, confidence=0.8)
    ci95 = mean_ci(values, confidence=0.95)
    ci99 = mean_ci(values, confidence=0.99)
    assert ci99.low < ci95.low < ci80.low < ci80.high < ci95.high < ci99.high


def test_mean_ci_agrees_with_scipy_percentile_bootstrap() -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    np = pytest.importorskip("numpy")
    values = sample(80, seed=11)
    ours = mean_ci(values, n_resamples=20000, seed=0)
    theirs = scipy_stats.bootstrap(
        (np.array(values),),
        np.mean,
        n_resamples=20000,
        method="percentile",
        confidence_level=0.95,
        rng=np.random.default_rng(0),
    ).confidence_interval
    standard_error = pystats.stdev(values) / math.sqrt(len(values))
    # Two Monte Carlo estimates of the same quantiles: they differ by ~0.02 standard errors.
    assert ours.low == pytest.approx(theirs.low, abs=0.1 * standard_error)
    assert ours.high == pytest.approx(theirs.high, abs=0.1 * standard_error)


def test_mean_ci_is_close_to_the_normal_interval_for_large_n() -> None:
    values = sample(600, seed=5)
    result = mean_ci(values, n_resamples=4000)
    half_width = 1.959964 * pystats.stdev(values) / math.sqrt(len(values))
    assert result.low == pytest.approx(result.mean - half_width, abs=0.1 * half_width)
    assert result.high == pytest.approx(result.mean + half_width, abs=0.1 * half_width)


def test_mean_ci_coverage_is_near_nominal() -> None:
    # Repeated samples from a known distribution: about 95% of intervals hold the true mean.
    rng = random.Random(2024)
    true_mean = 0.5
    covered = 0
    trials = 200
    for trial in range(trials):
        values = [rng.random() for _ in range(40)]  # uniform(0, 1): mean 0.5
        result = mean_ci(values, n_resamples=400, seed=trial)
        covered += result.low <= true_mean <= result.high
    assert 0.88 <= covered / trials <= 0.99


def test_mean_ci_edge_cases() -> None:
    assert mean_ci([0.7]) == MeanCI(mean=0.7, low=0.7, high=0.7, n=1)
    assert mean_ci([0.25] * 10) == MeanCI(mean=0.25, low=0.25, high=0.25, n=10)
    with pytest.raises(ValueError, match="empty"):
        mean_ci([])
    with pytest.raises(ValueError, match="NaN"):
        mean_ci([0.1, math.nan])
    with pytest.raises(ValueError, match="NaN"):
        mean_ci([0.1, math.inf])
    for bad in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError, match="confidence"):
            mean_ci([0.1, 0.2], confidence=bad)
    with pytest.raises(ValueError, match="n_resamples"):
        mean_ci([0.1, 0.2], n_resamples=0)


# --------------------------------------------------------------------------------------------------
# paired_test
# --------------------------------------------------------------------------------------------------


def exact_sign_flip_p(differences: list[float]) -> float:
    """P(|sum of randomly signed differences| >= |observed sum|), over all 2^n sign patterns."""
    observed = abs(sum(differences))
    patterns = list(itertools.product((1, -1), repeat=len(differences)))
    extreme = sum(
        abs(sum(s * d for s, d in zip(signs, differences, strict=True))) >= observed - 1e-9 for signs in patterns
    )
    return extreme / len(patterns)


def test_identical_runs() -> None:
    a = sample(30, seed=2)
    assert paired_test(a, a) == PairedResult(mean_diff=0.0, low=0.0, high=0.0, p_value=1.0, n=30)


def test_clearly_different_runs() -> None:
    b = sample(100, seed=4, p=0.4)
    a = [min(1.0, x + 0.2) for x in b]
    result = paired_test(a, b)
    assert result.mean_diff > 0.1
    assert 0 < result.low <= result.mean_diff <= result.high
    assert result.p_value < 0.001
    flipped = paired_test(b, a)
    assert flipped.mean_diff == -result.mean_diff
    assert flipped.p_value == result.p_value


def test_small_noisy_difference_is_not_significant() -> None:
    rng = random.Random(9)
    b = sample(40, seed=9)
    a = [x + rng.choice((-0.01, 0.01)) for x in b]
    result = paired_test(a, b)
    assert result.p_value > 0.05
    assert result.low < 0 < result.high


@pytest.mark.parametrize("n", [1, 2, 5, 9, 12])
def test_p_value_is_exact_for_small_n(n: int) -> None:
    rng = random.Random(n)
    a = [rng.random() for _ in range(n)]
    b = [x - rng.uniform(-0.2, 0.5) for x in a]
    differences = [x - y for x, y in zip(a, b, strict=True)]
    assert paired_test(a, b).p_value == pytest.approx(exact_sign_flip_p(differences))


def test_p_value_agrees_with_scipy_permutation_test() -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    np = pytest.importorskip("numpy")
    rng = random.Random(3)
    a = [rng.random() for _ in range(10)]
    b = [x - rng.uniform(-0.1, 0.3) for x in a]
    theirs = scipy_stats.permutation_test(
        (np.array(a), np.array(b)),
        lambda x, y, axis: np.mean(x - y, axis=axis),
        permutation_type="samples",  # paired: swap a_i and b_i, i.e. flip the sign of d_i
        vectorized=True,
        n_resamples=np.inf,  # exact: all 2^10 patterns
        alternative="two-sided",
    )
    assert paired_test(a, b).p_value == pytest.approx(theirs.pvalue)


def test_monte_carlo_p_value_is_close_to_the_exact_one() -> None:
    rng = random.Random(17)
    a = [rng.random() for _ in range(15)]
    b = [x - rng.uniform(-0.25, 0.35) for x in a]
    differences = [x - y for x, y in zip(a, b, strict=True)]
    exact = exact_sign_flip_p(differences)
    assert 0.01 < exact < 0.5  # a p-value worth estimating
    estimate = paired_test(a, b, n_resamples=10000).p_value  # 2^15 > 10000: sampled
    # Standard error sqrt(p (1 - p) / 10000) <= 0.005.
    assert estimate == pytest.approx(exact, abs=0.02)


def test_p_values_under_the_null_are_not_too_small() -> None:
    # Two runs drawn from the same distribution: "significant at 5%" about 5% of the time.
    rng = random.Random(99)
    trials = 120
    rejections = 0
    for trial in range(trials):
        a = [rng.random() for _ in range(20)]
        b = [rng.random() for _ in range(20)]
        rejections += paired_test(a, b, n_resamples=500, seed=trial).p_value < 0.05
    assert rejections / trials <= 0.12


def test_paired_interval_is_the_bootstrap_interval_of_the_differences() -> None:
    a = sample(50, seed=21)
    b = sample(50, seed=22)
    result = paired_test(a, b, n_resamples=3000, seed=5)
    differences = [x - y for x, y in zip(a, b, strict=True)]
    ci = mean_ci(differences, n_resamples=3000, seed=5)
    assert (result.mean_diff, result.low, result.high, result.n) == (ci.mean, ci.low, ci.high, ci.n)


def test_paired_test_is_deterministic_with_a_seed() -> None:
    a = sample(40, seed=31)
    b = sample(40, seed=32)
    assert paired_test(a, b, seed=1) == paired_test(a, b, seed=1)


def test_paired_test_validation() -> None:
    with pytest.raises(ValueError, match="same questions"):
        paired_test([0.1, 0.2], [0.1])
    with pytest.raises(ValueError, match="empty"):
        paired_test([], [])
    with pytest.raises(ValueError, match="NaN"):
        paired_test([math.nan], [0.1])
    with pytest.raises(ValueError, match="confidence"):
        paired_test([0.1], [0.2], confidence=0.0)


def test_paired_test_single_question() -> None:
    assert paired_test([0.9], [0.4]) == PairedResult(mean_diff=0.5, low=0.5, high=0.5, p_value=1.0, n=1)


def test_blocks_do_not_change_the_numbers(monkeypatch: pytest.MonkeyPatch) -> None:
    # Resamples are drawn a block of rows at a time; where the blocks end must not change them.
    from qagen.evaluate.metrics import statistics as module

    a, b = sample(97, seed=1), sample(97, seed=2)
    expected = (mean_ci(a, n_resamples=301, seed=3), paired_test(a, b, n_resamples=301, seed=3))
    for block in (1, 97, 98, 500, 97 * 301 + 1):
        monkeypatch.setattr(module, "BLOCK_DRAWS", block)
        assert (mean_ci(a, n_resamples=301, seed=3), paired_test(a, b, n_resamples=301, seed=3)) == expected
