"""Retrieval metrics against textbook formulas written here independently of the package."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qagen.evaluate.metrics.retrieval import (
    binary_relevance,
    hit_at_k,
    hit_at_k_from_relevance,
    ndcg_at_k,
    ndcg_at_k_from_relevance,
    precision_at_k,
    precision_at_k_from_relevance,
    recall_at_k,
    recall_at_k_from_relevance,
    reciprocal_rank,
    reciprocal_rank_at_k,
    reciprocal_rank_at_k_from_relevance,
    reciprocal_rank_from_relevance,
    span_overlap,
)

# --------------------------------------------------------------------------------------------------
# Textbook references. A retrieved id at 0-based position i is a *gain* when it is relevant and did
# not already occur among retrieved[:i] (the documented first-occurrence rule).
# --------------------------------------------------------------------------------------------------


def gains(retrieved: list[str], relevant: set[str]) -> list[int]:
    return [int(doc in relevant and doc not in retrieved[:i]) for i, doc in enumerate(retrieved)]


def ref_hit(retrieved: list[str], relevant: set[str], k: int) -> float:
    return float(any(doc in relevant for doc in retrieved[:k]))


def ref_rr(retrieved: list[str], relevant: set[str]) -> float:
    ranks = [i + 1 for i, doc in enumerate(retrieved) if doc in relevant]
    return 1 / ranks[0] if ranks else 0.0


def ref_rr_at_k(retrieved: list[str], relevant: set[str], k: int) -> float:
    # ranx's `mrr@k` per query: the first relevant id counts only if it ranks within k.
    ranks = [i + 1 for i, doc in enumerate(retrieved) if doc in relevant]
    return 1 / ranks[0] if ranks and ranks[0] <= k else 0.0


def ref_ndcg(retrieved: list[str], relevant: set[str], k: int) -> float:
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains(retrieved, relevant)[:k]))
    idcg = sum(1 / math.log2(i + 2) for i in range(min(len(relevant), k)))
    return dcg / idcg


def ref_precision(retrieved: list[str], relevant: set[str], k: int) -> float:
    top = retrieved[:k]
    return sum(gains(retrieved, relevant)[:k]) / len(top) if top else 0.0


def ref_recall(retrieved: list[str], relevant: set[str], k: int) -> float:
    return len(set(retrieved[:k]) & relevant) / len(relevant)


ids = st.sampled_from([f"doc{i}" for i in range(8)])
retrieved_lists = st.lists(ids, max_size=12)
relevant_sets = st.sets(ids, min_size=1, max_size=4)
cutoffs = st.integers(min_value=1, max_value=15)


@given(retrieved_lists, relevant_sets, cutoffs)
@settings(max_examples=500)
def test_id_metrics_equal_the_textbook_formulas(retrieved: list[str], relevant: set[str], k: int) -> None:
    assert hit_at_k(retrieved, relevant, k) == ref_hit(retrieved, relevant, k)
    assert reciprocal_rank(retrieved, relevant) == ref_rr(retrieved, relevant)
    assert reciprocal_rank_at_k(retrieved, relevant, k) == ref_rr_at_k(retrieved, relevant, k)
    assert ndcg_at_k(retrieved, relevant, k) == pytest.approx(ref_ndcg(retrieved, relevant, k))
    assert precision_at_k(retrieved, relevant, k) == pytest.approx(ref_precision(retrieved, relevant, k))
    assert recall_at_k(retrieved, relevant, k) == pytest.approx(ref_recall(retrieved, relevant, k))


@given(retrieved_lists, relevant_sets, cutoffs)
def test_metrics_are_in_the_unit_interval(retrieved: list[str], relevant: set[str], k: int) -> None:
    for metric in (hit_at_k, ndcg_at_k, precision_at_k, recall_at_k):
        assert 0.0 <= metric(retrieved, relevant, k) <= 1.0 + 1e-12
    assert 0.0 <= reciprocal_rank(retrieved, relevant) <= 1.0


def test_reciprocal_rank_at_k_is_zero_below_the_cutoff() -> None:
    retrieved = ["x", "y", "a"]
    assert reciprocal_rank(retrieved, "a") == pytest.approx(1 / 3)  # no cutoff
    assert reciprocal_rank_at_k(retrieved, "a", 3) == pytest.approx(1 / 3)
    assert reciprocal_rank_at_k(retrieved, "a", 2) == 0.0
    assert reciprocal_rank_at_k_from_relevance([False, True], 1) == 0.0
    with pytest.raises(ValueError, match="k must be at least 1"):
        reciprocal_rank_at_k(retrieved, "a", 0)


@given(relevant_sets, st.lists(ids, max_size=6), cutoffs)
def test_ndcg_is_one_exactly_for_an_ideal_list(relevant: set[str], tail: list[str], k: int) -> None:
    # All relevant ids first (any order), then anything: ideal whenever k covers no more slots.
    ideal = sorted(relevant) + tail
    assert ndcg_at_k(ideal, relevant, k) == pytest.approx(1.0)


@given(retrieved_lists, relevant_sets)
def test_deeper_cutoffs_never_lower_hit_or_recall(retrieved: list[str], relevant: set[str]) -> None:
    for k in range(1, 14):
        assert hit_at_k(retrieved, relevant, k) <= hit_at_k(retrieved, relevant, k + 1)
        assert recall_at_k(retrieved, relevant, k) <= recall_at_k(retrieved, relevant, k + 1)


def test_ndcg_against_sklearn() -> None:
    metrics = pytest.importorskip("sklearn.metrics")
    np = pytest.importorskip("numpy")
    cases = [
        (["a", "x", "b", "y"], {"a", "b", "c"}, 3),
        (["x", "y", "a"], {"a"}, 3),
        (["x", "a", "y", "b"], {"a", "b"}, 4),
        (["a", "x"], {"a"}, 1),  # sklearn refuses a single item, so never (["a"], {"a"})
    ]
    for retrieved, relevant, k in cases:
        # Every item once: retrieved ones scored by rank, unretrieved relevant ones below them all.
        items = retrieved + sorted(relevant - set(retrieved))
        y_true = np.array([[1.0 if item in relevant else 0.0 for item in items]])
        y_score = np.array([[float(len(items) - i) for i in range(len(items))]])
        assert k <= len(retrieved)  # so the unretrieved items never enter sklearn's top k
        expected = metrics.ndcg_score(y_true, y_score, k=k)
        assert ndcg_at_k(retrieved, relevant, k) == pytest.approx(expected)


# --------------------------------------------------------------------------------------------------
# Edge cases
# --------------------------------------------------------------------------------------------------


def test_known_ndcg_values() -> None:
    assert ndcg_at_k(["a", "x", "b"], {"a", "b", "c"}, 3) == pytest.approx((1 + 1 / 2) / (1 + 1 / math.log2(3) + 1 / 2))
    assert ndcg_at_k(["x", "a"], "a", 2) == pytest.approx(1 / math.log2(3))
    assert ndcg_at_k(["x", "y", "a"], "a", 2) == 0.0


def test_no_relevant_item_retrieved() -> None:
    retrieved = ["x", "y", "z"]
    assert hit_at_k(retrieved, "a", 3) == 0.0
    assert reciprocal_rank(retrieved, "a") == 0.0
    assert ndcg_at_k(retrieved, "a", 3) == 0.0
    assert precision_at_k(retrieved, "a", 3) == 0.0
    assert recall_at_k(retrieved, "a", 3) == 0.0


def test_repeated_ids_count_at_their_first_occurrence_only() -> None:
    retrieved = ["a", "a", "b", "a"]
    assert binary_relevance(retrieved, "a") == [True, False, False, False]
    assert ndcg_at_k(retrieved, "a", 4) == 1.0  # not > 1
    assert precision_at_k(retrieved, "a", 4) == 0.25  # the repeats take up slots
    assert recall_at_k(retrieved, "a", 4) == 1.0  # not 3
    assert reciprocal_rank(retrieved, "a") == 1.0
    late = ["x", "a", "a"]
    assert ndcg_at_k(late, "a", 3) == pytest.approx(1 / math.log2(3))
    assert reciprocal_rank(late, "a") == 0.5


def test_k_larger_than_the_list() -> None:
    assert hit_at_k(["a"], "a", 10) == 1.0
    assert ndcg_at_k(["a"], "a", 10) == 1.0
    assert recall_at_k(["a"], "a", 10) == 1.0
    # Precision is over what was returned: one right document out of one.
    assert precision_at_k(["a"], "a", 10) == 1.0
    assert precision_at_k(["a", "x"], "a", 10) == 0.5
    # The ideal list has both relevant ids, so the short list that returned one is not ideal.
    assert ndcg_at_k(["a"], {"a", "b"}, 10) == pytest.approx(1 / (1 + 1 / math.log2(3)))


def test_k_equals_one() -> None:
    assert hit_at_k(["x", "a"], "a", 1) == 0.0
    assert hit_at_k(["a", "x"], "a", 1) == 1.0
    assert ndcg_at_k(["a", "x"], {"a", "b"}, 1) == 1.0  # IDCG@1 has one slot
    assert precision_at_k(["a", "x"], "a", 1) == 1.0
    assert recall_at_k(["a", "b"], {"a", "b"}, 1) == 0.5


def test_empty_retrieved_list_scores_zero() -> None:
    assert hit_at_k([], "a", 5) == 0.0
    assert reciprocal_rank([], "a") == 0.0
    assert ndcg_at_k([], "a", 5) == 0.0
    assert precision_at_k([], "a", 5) == 0.0
    assert recall_at_k([], "a", 5) == 0.0


def test_a_bare_string_is_one_id_not_a_set_of_characters() -> None:
    assert hit_at_k(["d", "o", "c"], "doc", 3) == 0.0
    assert hit_at_k(["doc"], "doc", 1) == 1.0
    assert recall_at_k(["doc"], "doc", 1) == 1.0


@pytest.mark.parametrize("metric", [hit_at_k, ndcg_at_k, precision_at_k, recall_at_k])
def test_empty_relevant_or_bad_k_raise(metric: object) -> None:
    assert callable(metric)
    with pytest.raises(ValueError, match="relevant"):
        metric(["a"], set(), 1)
    with pytest.raises(ValueError, match="relevant"):
        metric(["a"], [], 1)
    with pytest.raises(ValueError, match="k must be"):
        metric(["a"], "a", 0)


def test_reciprocal_rank_with_empty_relevant_raises() -> None:
    with pytest.raises(ValueError):
        reciprocal_rank(["a"], frozenset())


def test_from_relevance_rejects_more_hits_than_relevant_items() -> None:
    with pytest.raises(ValueError, match="count each relevant item once"):
        ndcg_at_k_from_relevance([True, True], 2, n_relevant=1)
    with pytest.raises(ValueError, match="count each relevant item once"):
        recall_at_k_from_relevance([True, True], 2, n_relevant=1)
    with pytest.raises(ValueError, match="n_relevant"):
        ndcg_at_k_from_relevance([False], 1, n_relevant=0)


@given(st.lists(st.booleans(), max_size=12), cutoffs)
def test_from_relevance_variants_agree_with_the_id_variants(relevance: list[bool], k: int) -> None:
    # Give each True its own relevant id and each False a distinct irrelevant one.
    retrieved = [f"rel{i}" if hit else f"other{i}" for i, hit in enumerate(relevance)]
    relevant = {doc for doc in retrieved if doc.startswith("rel")} | {"unretrieved"}
    n_relevant = len(relevant)
    assert hit_at_k_from_relevance(relevance, k) == hit_at_k(retrieved, relevant, k)
    assert reciprocal_rank_from_relevance(relevance) == reciprocal_rank(retrieved, relevant)
    assert ndcg_at_k_from_relevance(relevance, k, n_relevant=n_relevant) == ndcg_at_k(retrieved, relevant, k)
    assert precision_at_k_from_relevance(relevance, k) == precision_at_k(retrieved, relevant, k)
    assert recall_at_k_from_relevance(relevance, k, n_relevant=n_relevant) == recall_at_k(retrieved, relevant, k)


# --------------------------------------------------------------------------------------------------
# Character ranges (the chunk-level rule: tests/evaluate/metrics/test_evidence_hits.py)
# --------------------------------------------------------------------------------------------------

positions = st.integers(min_value=0, max_value=60)


@given(positions, positions, positions, positions)
def test_span_overlap_counts_shared_characters(a: int, b: int, c: int, d: int) -> None:
    a_start, a_end = sorted((a, b))
    b_start, b_end = sorted((c, d))
    expected = len(set(range(a_start, a_end)) & set(range(b_start, b_end)))
    assert span_overlap(a_start, a_end, b_start, b_end) == expected
    assert span_overlap(b_start, b_end, a_start, a_end) == expected


def test_span_overlap_cases() -> None:
    assert span_overlap(0, 10, 10, 20) == 0  # touching half-open ranges share nothing
    assert span_overlap(0, 10, 20, 30) == 0
    assert span_overlap(0, 10, 5, 20) == 5
    assert span_overlap(0, 100, 10, 20) == 10  # nested
