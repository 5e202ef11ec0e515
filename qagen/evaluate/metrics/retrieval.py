"""Ranking metrics for the retrieval step, at document level and at chunk level.

Every metric is computed in two steps:

1. turn what was retrieved into a *binary relevance list*, one bool per retrieved item in rank
   order: `binary_relevance` for source ids (document level); at chunk level,
   `evidence_hits.ReferenceEvidence.relevance` (a chunk is relevant when it holds the reference
   answer's evidence);
2. score that list with a `*_from_relevance` function.

The id-based functions (`hit_at_k`, `reciprocal_rank_at_k`, `ndcg_at_k`, `precision_at_k`,
`recall_at_k`) are step 1 followed by step 2, so both levels share one implementation of each
formula.

Every metric the evaluator reports has a cutoff k, and its name says so (`hit@k`, `ndcg@k`,
`mrr@k`): the mean of `reciprocal_rank_at_k` is MRR@k, which is 0 for a question whose first
relevant item ranks below k, where an uncut MRR would still give it 1/rank.

Ranks are 1-based: the first retrieved item has rank 1.

Repeated items
--------------
A retriever can return the same document more than once (several chunks of one document, or a
hybrid retriever that does not deduplicate). A relevant item counts only at its **first
occurrence**; later repeats get gain 0 but still take up a slot in the top k. Counting every repeat
would let a list that returns the one relevant document three times score NDCG > 1 and precision
1.0 while it carries no more relevant information than a list that returns it once; and recall
could exceed 1.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from typing import NamedTuple

__all__ = [
    "Span",
    "binary_relevance",
    "hit_at_k",
    "hit_at_k_from_relevance",
    "ndcg_at_k",
    "ndcg_at_k_from_relevance",
    "precision_at_k",
    "precision_at_k_from_relevance",
    "recall_at_k",
    "recall_at_k_from_relevance",
    "reciprocal_rank",
    "reciprocal_rank_at_k",
    "reciprocal_rank_at_k_from_relevance",
    "reciprocal_rank_from_relevance",
    "span_overlap",
]


class Span(NamedTuple):
    """A half-open character range `[start, end)` of the text of document `source`.

    The same convention as `qagen.records.Chunk`: `document_text[start:end]` is the chunk's text.
    """

    source: str
    start: int
    end: int


# --------------------------------------------------------------------------------------------------
# Step 1: relevance lists
# --------------------------------------------------------------------------------------------------


def _relevant_set(relevant: str | Collection[str]) -> frozenset[str]:
    # A bare string is one id: `relevant=record.source_doc` must not be read as a set of characters.
    ids = frozenset((relevant,)) if isinstance(relevant, str) else frozenset(relevant)
    if not ids:
        raise ValueError("relevant must name at least one id: a question with none has no score")
    return ids


def binary_relevance(retrieved: Sequence[str], relevant: str | Collection[str]) -> list[bool]:
    """One bool per retrieved id: True where a relevant id occurs for the first time.

    `relevant` is one id (a `str`, e.g. a question's `source_doc`) or a collection of ids.
    Repeats of a relevant id are False (see the module docstring). Raises `ValueError` if `relevant`
    is empty.
    """
    ids = _relevant_set(relevant)
    seen: set[str] = set()
    relevance: list[bool] = []
    for doc in retrieved:
        is_new_hit = doc in ids and doc not in seen
        if is_new_hit:
            seen.add(doc)
        relevance.append(is_new_hit)
    return relevance


def span_overlap(a_start: int, a_end: int, b_start: int, b_end: int) -> int:
    """Characters shared by the half-open ranges `[a_start, a_end)` and `[b_start, b_end)`.

    `max(0, min(a_end, b_end) - max(a_start, b_start))`; 0 for disjoint or merely touching ranges.
    """
    return max(0, min(a_end, b_end) - max(a_start, b_start))


# --------------------------------------------------------------------------------------------------
# Step 2: metrics of a relevance list
# --------------------------------------------------------------------------------------------------


def _check_k(k: int) -> None:
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")


def _check_n_relevant(relevance: Sequence[bool], n_relevant: int) -> None:
    if n_relevant < 1:
        raise ValueError(f"n_relevant must be at least 1, got {n_relevant}")
    hits = sum(relevance)
    if hits > n_relevant:
        # Only possible when repeats were counted; the score would exceed 1.
        raise ValueError(
            f"relevance has {hits} hits but there are only {n_relevant} relevant items; "
            "count each relevant item once (see binary_relevance)"
        )


def hit_at_k_from_relevance(relevance: Sequence[bool], k: int) -> float:
    """1.0 if any of the first `k` items is relevant, else 0.0."""
    _check_k(k)
    return 1.0 if any(relevance[:k]) else 0.0


def reciprocal_rank_from_relevance(relevance: Sequence[bool]) -> float:
    """`1 / rank` of the first relevant item, 0.0 if none is relevant.

    No cutoff; `reciprocal_rank_at_k_from_relevance` has one.
    """
    for rank, is_relevant in enumerate(relevance, start=1):
        if is_relevant:
            return 1.0 / rank
    return 0.0


def reciprocal_rank_at_k_from_relevance(relevance: Sequence[bool], k: int) -> float:
    """`1 / rank` of the first relevant item among the first `k`, 0.0 if none of them is relevant.

    Its mean over questions is MRR@k (ranx's `mrr@k`).
    """
    _check_k(k)
    return reciprocal_rank_from_relevance(relevance[:k])


def _dcg(relevance: Sequence[bool]) -> float:
    # rank i (1-based) is discounted by log2(i + 1).
    return math.fsum(1.0 / math.log2(rank + 1) for rank, rel in enumerate(relevance, 1) if rel)


def ndcg_at_k_from_relevance(relevance: Sequence[bool], k: int, *, n_relevant: int) -> float:
    """Binary-relevance NDCG@k.

        DCG@k  = sum_{i=1..k} rel_i / log2(i + 1)
        IDCG@k = sum_{i=1..min(n_relevant, k)} 1 / log2(i + 1)
        NDCG@k = DCG@k / IDCG@k

    `n_relevant` is the number of relevant items that exist (retrieved or not), so a list that
    misses some of them scores below 1 even if everything it returned is relevant. The ideal list is
    not truncated to `len(relevance)`: a list shorter than `k` is not excused for being short.
    Raises `ValueError` if `n_relevant < 1` or the list has more hits than `n_relevant`.
    """
    _check_k(k)
    _check_n_relevant(relevance, n_relevant)
    ideal = _dcg([True] * min(n_relevant, k))
    return _dcg(relevance[:k]) / ideal


def precision_at_k_from_relevance(relevance: Sequence[bool], k: int) -> float:
    """Fraction of the returned top-k items that are relevant.

        precision@k = (relevant items among the first k) / min(k, len(relevance))

    The denominator is the number of items actually returned (at most k), not k: a retriever that
    filters by a threshold and returns only the one right document scores 1.0, which is the point of
    measuring precision for such systems (seed 003). For a fixed top-k retriever that always returns
    k items this is the usual precision@k. An empty list scores 0.0.
    """
    _check_k(k)
    considered = relevance[:k]
    if not considered:
        return 0.0
    return sum(considered) / len(considered)


def recall_at_k_from_relevance(relevance: Sequence[bool], k: int, *, n_relevant: int) -> float:
    """Fraction of the relevant items found in the first k: `(hits in top k) / n_relevant`.

    Raises `ValueError` if `n_relevant < 1` or the list has more hits than `n_relevant`.
    """
    _check_k(k)
    _check_n_relevant(relevance, n_relevant)
    return sum(relevance[:k]) / n_relevant


# --------------------------------------------------------------------------------------------------
# Document level: retrieved ids against relevant ids
# --------------------------------------------------------------------------------------------------
# Each takes `relevant` as one id (str) or a collection of ids, raises ValueError when it is empty,
# and applies the first-occurrence rule for repeated ids.


def hit_at_k(retrieved: Sequence[str], relevant: str | Collection[str], k: int) -> float:
    """1.0 if a relevant id is among the first `k` retrieved ids, else 0.0."""
    return hit_at_k_from_relevance(binary_relevance(retrieved, relevant), k)


def reciprocal_rank(retrieved: Sequence[str], relevant: str | Collection[str]) -> float:
    """`1 / rank` of the first relevant retrieved id; 0.0 if none is retrieved (no cutoff)."""
    return reciprocal_rank_from_relevance(binary_relevance(retrieved, relevant))


def reciprocal_rank_at_k(retrieved: Sequence[str], relevant: str | Collection[str], k: int) -> float:
    """`1 / rank` of the first relevant id among the first `k` retrieved; 0.0 if none is there."""
    return reciprocal_rank_at_k_from_relevance(binary_relevance(retrieved, relevant), k)


def ndcg_at_k(retrieved: Sequence[str], relevant: str | Collection[str], k: int) -> float:
    """Binary-relevance NDCG@k with `n_relevant = len(set(relevant))`.

    See `ndcg_at_k_from_relevance` for the formula.
    """
    relevance = binary_relevance(retrieved, relevant)
    return ndcg_at_k_from_relevance(relevance, k, n_relevant=len(_relevant_set(relevant)))


def precision_at_k(retrieved: Sequence[str], relevant: str | Collection[str], k: int) -> float:
    """Relevant ids among the first k retrieved, over `min(k, len(retrieved))`.

    See `precision_at_k_from_relevance` for why the denominator is the number returned.
    """
    return precision_at_k_from_relevance(binary_relevance(retrieved, relevant), k)


def recall_at_k(retrieved: Sequence[str], relevant: str | Collection[str], k: int) -> float:
    """Distinct relevant ids among the first k retrieved, over `len(set(relevant))`."""
    relevance = binary_relevance(retrieved, relevant)
    return recall_at_k_from_relevance(relevance, k, n_relevant=len(_relevant_set(relevant)))
