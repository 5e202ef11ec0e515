"""Choose which chunks to draft from: reproducible with a seed, every document covered first; and the
sample of a build, the passages of every draft of every question type."""

from __future__ import annotations

import random
from array import array
from collections.abc import Collection, Iterable, Iterator, Sequence
from fractions import Fraction
from pathlib import Path
from typing import BinaryIO, NamedTuple, overload

from qagen.records import Chunk, Passages


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
    same in every process and on every platform. The fractions are compared as the floats k / n where
    that is exact (`_EXACT_FLOAT_CHUNKS`): sorting 6,500 chunks by `Fraction` took 0.04 s of CPU
    before a build's first call, as floats 0.006 s.
    """
    by_source: dict[str, list[str]] = {}
    for ref in chunks:
        by_source.setdefault(ref.source, []).append(ref.id)
    rng = random.Random(seed)
    sources = sorted(by_source)
    rng.shuffle(sources)
    exact_as_float = all(len(ids) < _EXACT_FLOAT_CHUNKS for ids in by_source.values())
    keyed: list[tuple[float | Fraction, int, str]] = []
    for turn, source in enumerate(sources):
        ids = sorted(by_source[source])
        rng.shuffle(ids)
        n = len(ids)
        if exact_as_float:
            keyed.extend((k / n, turn, chunk_id) for k, chunk_id in enumerate(ids))
        else:
            keyed.extend((Fraction(k, n), turn, chunk_id) for k, chunk_id in enumerate(ids))
    keyed.sort()
    return [chunk_id for _, _, chunk_id in keyed]


_EXACT_FLOAT_CHUNKS = 2**26
"""Below this many chunks in every document, the floats k / n order as the fractions do: two fractions
of [0, 1) with denominators under 2**26 that differ, differ by more than 2**-52, more than the rounding of
each division (at most 2**-54 there) can close, and equal ones round alike."""


def take(order: Sequence[str], n: int | None) -> list[str]:
    """The first `n` ids of the order (all of them when n is None)."""
    return list(order if n is None else order[:n])


class PassagesPlan(NamedTuple):
    """One draft's passages as a picker chose them: its question type, its chunks by id, their link."""

    question_type: str
    chunk_ids: tuple[str, ...]
    link: tuple[str, ...] = ()
    pair: int | None = None
    """Its place among the pairs its drafting call asks for (`Passages.pair`); None: drafted alone."""


class StoredPassages(Sequence[Passages]):
    """Drafts' passages read back from the run's chunk file when they are asked for.

    Each draft keeps where its chunks' lines are (two 8-byte offsets a chunk), its type and its link
    (the link only when it has one: a multi-hop pair's), not the chunks: a build of 100,000 drafts
    would hold about 200 MB of chunk text otherwise. Reading them back costs a seek and a parse per
    chunk each time the sample is gone through (the LLM stage, the final write).
    """

    def __init__(self, chunks_file: Path, plans: Iterable[PassagesPlan]) -> None:
        """`plans`, in order; every chunk they name must be in `chunks_file` (a `KeyError` names one that is not)."""
        plans = list(plans)
        self._file = chunks_file
        self._types: list[str] = []
        self._type_of = array("H")
        self._passage_ends = array("q")
        self._starts, self._ends = array("q"), array("q")
        self._links: dict[int, tuple[str, ...]] = {}
        self._pairs = array("B")  # a draft's place in its call's reply; 0: drafted alone
        places = _line_places(chunks_file, {chunk_id for plan in plans for chunk_id in plan.chunk_ids})
        for number, plan in enumerate(plans):
            if plan.question_type not in self._types:
                self._types.append(plan.question_type)
            self._type_of.append(self._types.index(plan.question_type))
            for chunk_id in plan.chunk_ids:
                start, end = places[chunk_id]
                self._starts.append(start)
                self._ends.append(end)
            self._passage_ends.append(len(self._starts))
            if plan.link:
                self._links[number] = plan.link
            self._pairs.append(plan.pair or 0)
        self._stamp = _file_stamp(chunks_file)

    def __len__(self) -> int:
        return len(self._type_of)

    @overload
    def __getitem__(self, index: int) -> Passages: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Passages]: ...
    def __getitem__(self, index: int | slice) -> Passages | Sequence[Passages]:
        if isinstance(index, slice):
            return [self[number] for number in range(len(self))[index]]
        number = range(len(self))[index]  # an IndexError out of range, negative indexes from the end
        with self._open() as handle:
            return self._passages(handle, number)

    def __iter__(self) -> Iterator[Passages]:
        with self._open() as handle:
            for number in range(len(self)):
                yield self._passages(handle, number)

    def _open(self) -> BinaryIO:
        if _file_stamp(self._file) != self._stamp:
            raise RuntimeError(f"{self._file} changed after the sample was drawn from it; run the command again")
        return self._file.open("rb")

    def _passages(self, handle: BinaryIO, number: int) -> Passages:
        first = self._passage_ends[number - 1] if number else 0
        chunks = []
        for passage in range(first, self._passage_ends[number]):
            handle.seek(self._starts[passage])
            chunks.append(Chunk.model_validate_json(handle.read(self._ends[passage] - self._starts[passage])))
        question_type = self._types[self._type_of[number]]
        pair = self._pairs[number] or None
        return Passages(question_type=question_type, chunks=tuple(chunks), link=self._links.get(number, ()), pair=pair)


def _line_places(chunks_file: Path, wanted: Collection[str]) -> dict[str, tuple[int, int]]:
    """Where the line of each wanted chunk is in the chunk file: (start, end) byte offsets."""
    places: dict[str, tuple[int, int]] = {}
    offset = 0
    with chunks_file.open("rb") as handle:
        for line in handle:
            end = offset + len(line)
            chunk_id = Chunk.model_validate_json(line).id
            if chunk_id in wanted:
                places[chunk_id] = (offset, end)
            offset = end
    return places


def _file_stamp(path: Path) -> tuple[int, int]:
    stat = path.stat()
    return stat.st_size, stat.st_mtime_ns


class Sample(Sequence[Passages]):
    """A build's sampled items, each question type's in its sampling order, the types in the build's
    order; with what was asked of each type and how many drafts the corpus could not give passages to.

    The items are any sequence of passages: a build's are read back from its chunk file as they are
    gone through (`StoredPassages`), so a sample holds a few numbers a draft, not its chunks."""

    def __init__(
        self,
        items: Sequence[Passages] = (),
        requested: dict[str, int | None] | None = None,
        short: dict[str, int] | None = None,
    ) -> None:
        self.items: Sequence[Passages] = items
        self.requested: dict[str, int | None] = dict(requested or {})
        """The drafts asked of each type (None: one per chunk)."""
        self.short: dict[str, int] = dict(short or {})
        """Drafts asked of a type that the corpus could not give passages to."""

    def __len__(self) -> int:
        return len(self.items)

    @overload
    def __getitem__(self, index: int) -> Passages: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Passages]: ...
    def __getitem__(self, index: int | slice) -> Passages | Sequence[Passages]:
        return self.items[index]

    def __iter__(self) -> Iterator[Passages]:
        return iter(self.items)
