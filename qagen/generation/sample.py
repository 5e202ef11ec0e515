"""Choose which chunks to draft from: reproducible with a seed, spread across documents; and the
sample of a build, the passages of every draft of every question type."""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from qagen.records import Passages


class ChunkRef(NamedTuple):
    """The two facts sampling needs about a chunk."""

    id: str
    source: str


def sampling_order(chunks: Iterable[ChunkRef], seed: int) -> list[str]:
    """A permutation of all chunk ids; drafting from its first N chunks samples N chunks.

    Round robin over documents: every round takes one not-yet-taken chunk from each document, in a
    seeded order of documents, and each document's chunks come in a seeded order too. So a large
    file cannot crowd out small ones (N chunks touch min(N, documents) documents), and because
    the order is a fixed permutation, asking for more chunks later only extends the sample: a run
    resumed with a larger `n_generations` keeps every draft it already paid for.

    Only `random.Random(seed)` and sorted inputs are used, so the order is the same in every
    process and on every platform.
    """
    by_source: dict[str, list[str]] = {}
    for ref in chunks:
        by_source.setdefault(ref.source, []).append(ref.id)
    rng = random.Random(seed)
    sources = sorted(by_source)
    rng.shuffle(sources)
    queues: list[list[str]] = []
    for source in sources:
        ids = sorted(by_source[source])
        rng.shuffle(ids)
        queues.append(ids)
    order: list[str] = []
    depth = 0
    while queues:
        queues = [queue for queue in queues if len(queue) > depth]
        order.extend(queue[depth] for queue in queues)
        depth += 1
    return order


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
