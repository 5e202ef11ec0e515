"""Certified acceptance (`qagen.review.certify`) against an independent computation: the Clopper-Pearson
bound is scipy's Beta quantile, the search a direct reading of fixed-sequence testing over scipy's bounds."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import beta, binomtest

from qagen.review.certify import Scored, bound_at_most, certify, error_upper_bound, labels_to_certify


@pytest.mark.parametrize(
    ("errors", "n", "confidence"),
    [
        (0, 1, 0.9),
        (0, 22, 0.9),
        (0, 21, 0.9),
        (1, 30, 0.9),
        (2, 40, 0.9),
        (3, 40, 0.95),
        (5, 80, 0.9),
        (10, 100, 0.8),
        (0, 500, 0.99),
        (49, 50, 0.9),
        (40, 1000, 0.9),
    ],
)
def test_the_bound_is_the_clopper_pearson_beta_quantile(errors: int, n: int, confidence: float) -> None:
    expected = beta.ppf(confidence, errors + 1, n - errors)
    assert error_upper_bound(errors, n, confidence) == pytest.approx(expected, abs=1e-9)
    # The same bound read from the exact binomial test: its one-sided ("less") interval's upper end.
    interval = binomtest(errors, n, alternative="less").proportion_ci(confidence_level=confidence, method="exact")
    assert error_upper_bound(errors, n, confidence) == pytest.approx(interval.high, abs=1e-9)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 300), st.data(), st.sampled_from([0.8, 0.9, 0.95]), st.floats(0.01, 0.5))
def test_each_threshold_is_tested_by_one_cdf_as_the_bound_would_decide(
    n: int, data: st.DataObject, confidence: float, level: float
) -> None:
    errors = data.draw(st.integers(0, n))
    bound = 1.0 if errors == n else beta.ppf(confidence, errors + 1, n - errors)
    if abs(bound - level) > 1e-9:  # off the boundary, where rounding could tip either
        assert bound_at_most(errors, n, confidence, level) == (bound <= level)


def test_every_error_gives_the_bound_one() -> None:
    assert error_upper_bound(7, 7, 0.9) == 1.0


@pytest.mark.parametrize(
    ("precision", "confidence", "errors", "needed"),
    [(0.9, 0.9, 0, 22), (0.9, 0.95, 0, 29), (0.8, 0.9, 0, 11), (0.9, 0.9, 2, 52)],
)
def test_labels_to_certify_is_the_fewest_whose_bound_reaches_the_level(
    precision: float, confidence: float, errors: int, needed: int
) -> None:
    assert labels_to_certify(precision, confidence, errors) == needed
    assert beta.ppf(confidence, errors + 1, needed - errors) <= 1 - precision + 1e-12
    assert beta.ppf(confidence, errors + 1, needed - 1 - errors) > 1 - precision


def reference_certify(scored: list[Scored], precision: float, confidence: float) -> float | None:
    """Fixed-sequence testing written out: the distinct scores from the highest, those with fewer labelled
    drafts at or above than any could pass with skipped, each tested with scipy's bound; the lowest passed."""
    fewest = next(n for n in range(1, 10_000) if beta.ppf(confidence, 1, n) <= 1 - precision)
    passed = None
    for score in sorted({item.score for item in scored}, reverse=True):
        above = [item for item in scored if item.score >= score]
        if len(above) < fewest:
            continue
        errors = sum(not item.kept for item in above)
        bound = 1.0 if errors == len(above) else beta.ppf(confidence, errors + 1, len(above) - errors)
        if bound > 1 - precision:
            break
        passed = score
    return passed


def test_a_table_of_searches() -> None:
    clean = [Scored(0.5 + i / 100, True) for i in range(30)]
    # 30 labels, no error: certified down to the lowest score.
    assert certify(clean, 0.9).threshold == pytest.approx(0.5)
    # An error at the lowest score: 30 labels with one error bound at 0.125 > 0.1, so the search stops
    # one score above it (29 labels, no error).
    with_low_error = [Scored(0.49, False), *clean]
    result = certify(with_low_error, 0.9)
    assert (result.threshold, result.labels_above, result.errors_above) == (pytest.approx(0.5), 30, 0)
    # An error among the 22 highest: the first threshold tested fails, nothing is certified.
    with_high_error = [*clean[:-1], Scored(0.95, False)]
    failed = certify(with_high_error, 0.9)
    assert failed.status == "too_few" and failed.threshold is None
    assert (failed.labels_above, failed.errors_above) == (22, 1)
    assert failed.more_labels == labels_to_certify(0.9, 0.9, 1) - 22
    # Eight labels: too few for any threshold; 14 more with no error would do.
    few = certify(clean[:8], 0.9)
    assert (few.status, few.threshold, few.more_labels, few.upper_bound) == ("too_few", None, 14, None)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 40), st.booleans()), min_size=0, max_size=90),
    st.sampled_from([0.8, 0.9]),
    st.sampled_from([0.8, 0.9, 0.95]),
)
def test_the_search_is_fixed_sequence_testing(
    drafts: list[tuple[int, bool]], precision: float, confidence: float
) -> None:
    scored = [Scored(score / 40, kept) for score, kept in drafts]
    result = certify(scored, precision, confidence)
    expected = reference_certify(scored, precision, confidence)
    assert result.threshold == (pytest.approx(expected) if expected is not None else None)
    if result.threshold is not None:
        above = [item for item in scored if item.score >= result.threshold]
        assert result.labels_above == len(above)
        assert result.errors_above == sum(not item.kept for item in above)
        assert result.upper_bound is not None and result.upper_bound <= 1 - precision
    else:
        assert result.more_labels >= 1


def test_it_claims_too_much_no_more_often_than_the_confidence_allows() -> None:
    """Where a reviewer keeps 85% of the drafts at every score (error 0.15 > 0.1 everywhere), any
    certificate at precision 0.9 is a false claim: at confidence 0.9 it may be made in at most 10% of draws."""
    rng = random.Random(7)
    trials, claims = 200, 0
    for _ in range(trials):
        scored = [Scored(rng.random(), rng.random() < 0.85) for _ in range(50)]
        claims += certify(scored, 0.9, 0.9).status == "certified"
    # Binomial(200, 0.1) exceeds 32 with probability under 0.5%.
    assert claims <= 32
