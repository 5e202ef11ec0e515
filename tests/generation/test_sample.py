"""Sampling: reproducible, spread across documents, and extendable."""

from __future__ import annotations

import random
from collections import Counter
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qagen.generation import sample as sample_module
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


def _order_by_fractions(chunks: list[ChunkRef], seed: int) -> list[str]:
    """The order `sampling_order` is defined by: its keys as exact fractions."""
    by_source: dict[str, list[str]] = {}
    for ref in chunks:
        by_source.setdefault(ref.source, []).append(ref.id)
    rng = random.Random(seed)
    sources = sorted(by_source)
    rng.shuffle(sources)
    keyed: list[tuple[Fraction, int, str]] = []
    for turn, source in enumerate(sources):
        ids = sorted(by_source[source])
        rng.shuffle(ids)
        keyed.extend((Fraction(k, len(ids)), turn, chunk_id) for k, chunk_id in enumerate(ids))
    return [chunk_id for _, _, chunk_id in sorted(keyed)]


@settings(max_examples=60, deadline=None)
@given(lengths=st.lists(st.integers(min_value=1, max_value=400), min_size=1, max_size=40), seed=st.integers(0, 99))
def test_the_order_is_the_order_of_exact_fractions(lengths: list[int], seed: int) -> None:
    chunks = [ChunkRef(f"d{d}-c{c}", f"d{d}") for d, n in enumerate(lengths) for c in range(n)]
    assert sampling_order(chunks, seed) == _order_by_fractions(chunks, seed)


def test_documents_too_long_for_exact_floats_are_ordered_by_fractions(monkeypatch: pytest.MonkeyPatch) -> None:
    chunks = [ChunkRef(f"d{d}-c{c}", f"d{d}") for d, n in enumerate([3, 7, 12, 5, 7]) for c in range(n)]
    monkeypatch.setattr(sample_module, "_EXACT_FLOAT_CHUNKS", 4)
    assert sampling_order(chunks, 5) == _order_by_fractions(chunks, 5)
