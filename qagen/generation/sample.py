"""Choose which chunks to draft from: reproducible with a seed, every document covered first; and the
sample of a build, the passages of every draft of every question type."""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import NamedTuple

from qagen.records import Passages


class ChunkRef(NamedTuple):
    """The two facts sampling needs about a chunk."""

    id: str
    source: str


def sampling_order(chunks: Iterable[ChunkRef], seed: int) -> list[str]:
    """A permutation of all chunk ids; drafting from its first N chunks samples N chunks.

    Coverage first: the first chunk of every document comes before the second chunk of any, so N
    chunks touch min(N, documents) documents. After that, long documents weigh more: the k-th chunk
    (k = 0, 1, ...) of a document of n chunks comes at k / n, so a document gets further chunks in
    proportion to its length, and documents at the same point alternate in a seeded order. Each
    document's chunks come in a seeded order too.

    Because the order is a fixed permutation, asking for more chunks later only extends the
    sample: a run resumed with a larger `n_generations` keeps every draft it already paid for.
    Only `random.Random(seed)`, exact fractions and sorted inputs are used, so the order is the
    same in every process and on every platform.
    """
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
    keyed.sort()
    return [chunk_id for _, _, chunk_id in keyed]


def take(order: Sequence[str], n: int | None) -> list[str]:
    """The first `n` ids of the order (all of them when n is None)."""
    return list(order if n is None else order[:n])


class Sample(list[Passages]):
    """A build's sampled items, each question type's in its sampling order, the types in the build's
    order; with what was asked of each type and how many drafts the corpus could not give passages to."""

    def __init__(
        self,
        items: Iterable[Passages] = (),
        requested: dict[str, int | None] | None = None,
        short: dict[str, int] | None = None,
    ) -> None:
        super().__init__(items)
        self.requested: dict[str, int | None] = dict(requested or {})
        """The drafts asked of each type (None: one per chunk)."""
        self.short: dict[str, int] = dict(short or {})
        """Drafts asked of a type that the corpus could not give passages to."""
