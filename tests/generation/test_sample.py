"""Sampling: reproducible, spread across documents, and extendable."""

from __future__ import annotations

from collections import Counter

from qagen.generation.sample import ChunkRef, sampling_order, take


def _corpus() -> list[ChunkRef]:
    # One huge document and twenty small ones.
    refs = [ChunkRef(f"big-{i}", "big.txt") for i in range(1000)]
    refs += [ChunkRef(f"small-{d}-{i}", f"small-{d}.txt") for d in range(20) for i in range(2)]
    return refs


def test_same_seed_same_order_other_seed_other_order() -> None:
    assert sampling_order(_corpus(), 7) == sampling_order(list(reversed(_corpus())), 7)
    assert sampling_order(_corpus(), 7) != sampling_order(_corpus(), 8)


def test_large_files_do_not_crowd_out_small_ones() -> None:
    sample = take(sampling_order(_corpus(), 7), 21)
    sources = Counter(chunk_id.rsplit("-", 1)[0] for chunk_id in sample)
    assert len(sources) == 21  # every document once, the big one included
    assert sources["big"] == 1


def test_order_is_a_permutation_and_larger_samples_extend_smaller_ones() -> None:
    order = sampling_order(_corpus(), 3)
    assert sorted(order) == sorted(ref.id for ref in _corpus())
    assert take(order, 50) == take(order, 80)[:50]
    assert take(order, None) == order


def test_every_document_of_thirty_before_any_second_chunk_then_by_length() -> None:
    # Thirty documents of 1 to 30 chunks.
    refs = [ChunkRef(f"d{d}-{i}", f"d{d}.txt") for d in range(30) for i in range(d + 1)]
    order = sampling_order(refs, 11)
    first = [chunk_id.split("-")[0] for chunk_id in order[:30]]
    assert sorted(first) == sorted(f"d{d}" for d in range(30))  # each document once
    # Then long documents weigh more: by the time half the corpus is sampled, each document has
    # about half of its chunks (k / n ordering), so the longest has many and the shortest one.
    half = Counter(chunk_id.split("-")[0] for chunk_id in order[: len(order) // 2])
    assert half["d0"] == 1 and half["d29"] >= 14
    for d in range(30):
        assert abs(half[f"d{d}"] - (d + 1) / 2) <= 1.5
