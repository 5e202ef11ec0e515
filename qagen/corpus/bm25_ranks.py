"""Where BM25 ranks each question's own chunk among all chunks, in memory that does not grow with them.

One index of every chunk (`bm25_index.bm25_retriever`) takes memory in proportion to the corpus
(building it over 125,000 chunks peaks near 600 MB), so the ranks of many questions are found over
shards of `SHARD_CHUNKS` chunks, one shard in memory at a time:

1. One counting pass over the chunks: the vocabulary, each token's document frequency, each chunk's
   length and id; the chunks' token ids go to a temporary file. BM25's IDF and average length are
   the whole corpus' (bm25s' own formulas over these counts), so a chunk scores in its shard exactly
   what it scores in one index of every chunk, to the last bit of bm25s' float32.
2. The questions, as token ids of that vocabulary (a token no chunk has scores nothing, as in bm25s).
3. The shards, each indexed with bm25s' formula for a document's tokens (all of a shard's chunks at
   once, the same operations in the same float types, so the same scores): every question is scored
   against each shard, and its own chunk's score taken from the shard that holds it. A question's
   rank is 1 + the chunks scoring strictly higher than its own, counted shard by shard; shards before
   a question's own one are counted in a second pass, from the shards kept on disk.

A question's score for a shard adds, token by token in the question's order, each token's scores
in float32, as bm25s' `get_scores_from_ids` does, so the sums are bm25s' to the bit; tokens in many
of a shard's chunks are held as dense vectors (adding one is many times faster than scattering
their scores into the sum, and adds the same numbers).
"""

from __future__ import annotations

import tempfile
from array import array
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping
from itertools import count
from pathlib import Path
from typing import BinaryIO, NamedTuple, cast

import numpy as np
from bm25s.scoring import _build_idf_array, _select_idf_scorer

from qagen.corpus.bm25_index import BM25_PARAMETERS, tokenize
from qagen.corpus.chunk_index import RankQuery, Ranks
from qagen.records import Chunk

_COUNT_BATCH = 1 << 20
"""Distinct token ids of chunks gathered before they are added to the document frequencies (4 MB)."""

DENSE_SHARE = 8
"""A token in at least 1 of this many of a shard's chunks is held as a dense vector over the shard."""

MOST_DENSE = 256
"""At most this many tokens a shard are held dense (the most frequent ones): a bound on its memory."""

_DTYPE = np.float32
"""bm25s' score type (its default `dtype`, which `BM25_PARAMETERS` keeps)."""


class _Corpus:
    """What the counting pass keeps of the chunks: the vocabulary and document frequencies, each
    chunk's length, where its token ids are in the token file, and the chunks' ids to find them by."""

    def __init__(self, chunks: Iterable[Chunk], tokens: BinaryIO) -> None:
        # A token's id is the order it was first seen in; the mapping runs in C (`map` over a dict
        # whose missing keys take the next id), not a Python call a token.
        vocab: defaultdict[str, int] = defaultdict(count().__next__)
        id_of = vocab.__getitem__
        self.vocab: dict[str, int] = vocab
        self.frequencies = np.zeros(0, dtype=np.int64)  # by token id
        self.lengths = array("i")
        self.documents: Counter[str] = Counter()
        ids, id_ends = bytearray(), array("q")  # every id's bytes, one after another: no object a chunk
        distinct = array("i")  # each chunk's distinct token ids, counted into `frequencies` a batch at a time
        for chunk in chunks:
            ids += chunk.id.encode("utf-8")
            id_ends.append(len(ids))
            self.documents[chunk.source] += 1
            tokens_of_chunk = array("i", map(id_of, tokenize(chunk.text)))
            distinct.extend(set(tokens_of_chunk))
            if len(distinct) >= _COUNT_BATCH:
                self._count(distinct)
            self.lengths.append(len(tokens_of_chunk))
            tokens_of_chunk.tofile(tokens)
        self._count(distinct)
        vocab.default_factory = None  # read only from here on: a token no chunk has has no id
        self.ends = np.cumsum(np.asarray(self.lengths, dtype=np.int64))
        # Sorted ids, and where each is in the corpus: a chunk's position by binary search, in a few
        # bytes a chunk instead of a dict. Stable, so of two chunks with one id the later is found, as a
        # dict keeps the later.
        by_id = _id_array(ids, id_ends)
        del ids, id_ends
        self._order = np.argsort(by_id, kind="stable")
        self._sorted = by_id[self._order]

    def _count(self, distinct: array[int]) -> None:
        """Add the chunks' distinct token ids to the document frequencies, and empty `distinct`."""
        found = np.bincount(np.frombuffer(distinct, dtype=np.int32), minlength=len(self.vocab))
        found[: len(self.frequencies)] += self.frequencies
        self.frequencies = found
        del distinct[:]

    def __len__(self) -> int:
        return len(self.lengths)

    def positions(self, chunk_ids: list[str]) -> list[int]:
        """Each chunk's position in the corpus (the later one of a repeated id), -1 for one not indexed: all
        found in one search."""
        if not chunk_ids or not len(self._sorted):
            return [-1] * len(chunk_ids)
        # (numpy orders and compares byte strings of two widths whole, as Python does.)
        wanted = np.array([chunk_id.encode("utf-8") for chunk_id in chunk_ids])
        found = np.searchsorted(self._sorted, wanted, side="right") - 1
        hit = found >= 0
        hit[hit] = self._sorted[found[hit]] == wanted[hit]
        positions: list[int] = np.where(hit, self._order[np.maximum(found, 0)], -1).tolist()
        return positions

    def idf(self) -> np.ndarray:
        """Each token's IDF over the whole corpus, as bm25s computes it when it indexes every chunk."""
        scorer = _select_idf_scorer(BM25_PARAMETERS["method"])
        frequencies = _ByTokenId(self.frequencies)
        idf: np.ndarray = _build_idf_array(frequencies, n_docs=len(self), compute_idf_fn=scorer, dtype=_DTYPE)
        return idf

    def average_length(self) -> np.float64:
        """The chunks' mean length in tokens, as bm25s computes it: numpy's mean of the lengths (an
        integer array's mean adds them as float64, whatever its integer type, so the lengths are read
        in place instead of as a list of Python ints), kept a numpy float64 (a Python float would make
        bm25s' term-frequency part float32, not float64)."""
        return np.float64(np.asarray(self.lengths).mean())


def _id_array(ids: bytearray, ends: array[int]) -> np.ndarray:
    """The ids (the n-th is `ids[ends[n - 1]:ends[n]]`) as numpy bytes, padded with NULs to the
    longest, as `np.array` pads a list of them."""
    stops = np.asarray(ends, dtype=np.int64)
    widths = np.diff(stops, prepend=0)
    by_id = np.zeros(len(stops), dtype=f"S{max(int(widths.max(initial=0)), 1)}")
    for number in range(len(stops)):
        start = ends[number - 1] if number else 0
        by_id[number] = bytes(ids[start : ends[number]])
    return by_id


class _ByTokenId(Mapping[int, int]):
    """The document frequencies by token id as bm25s' IDF reads them (a mapping), over the counting
    pass' array, instead of a dict of the whole vocabulary made to be read once."""

    def __init__(self, frequencies: np.ndarray) -> None:
        self._frequencies = frequencies

    def __getitem__(self, token: int) -> int:
        return int(self._frequencies[token])

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self._frequencies)))

    def __len__(self) -> int:
        return len(self._frequencies)


class _Queries:
    """The questions as token ids of the corpus' vocabulary, each with its own chunk's position."""

    def __init__(self, questions: Iterable[RankQuery], corpus: _Corpus) -> None:
        self.tokens = array("i")
        self.ends = array("q")
        asked: list[int] = []  # the questions with a chunk to rank, by number
        chunk_ids: list[str] = []
        for number, query in enumerate(questions):
            self.tokens.extend(
                token for word in tokenize(query.question) if (token := corpus.vocab.get(word)) is not None
            )
            self.ends.append(len(self.tokens))
            if query.chunk_id is not None:
                asked.append(number)
                chunk_ids.append(query.chunk_id)
        self.positions = array("q", [-1]) * len(self.ends)  # -1: not ranked
        for number, position in zip(asked, corpus.positions(chunk_ids), strict=True):
            self.positions[number] = position

    def __len__(self) -> int:
        return len(self.positions)

    def ids(self, number: int) -> list[int]:
        start = self.ends[number - 1] if number else 0
        return self.tokens[start : self.ends[number]].tolist()


class _Shard:
    """One shard's index: each token's scores by chunk (bm25s' sparse columns), the frequent tokens'
    also as dense vectors."""

    def __init__(self, start: int, size: int, data: np.ndarray, chunks: np.ndarray, columns: np.ndarray) -> None:
        self.start, self.size = start, size
        self.data, self.chunks, self.columns = data, chunks, columns
        counts = np.diff(columns)
        frequent = np.flatnonzero(counts * DENSE_SHARE >= max(size, 1))
        frequent = frequent[np.argsort(-counts[frequent], kind="stable")][:MOST_DENSE]
        self.dense: dict[int, np.ndarray] = {}
        for token in frequent.tolist():
            vector = np.zeros(size, dtype=_DTYPE)
            vector[chunks[columns[token] : columns[token + 1]]] = data[columns[token] : columns[token + 1]]
            self.dense[token] = vector

    def scores(self, ids: list[int]) -> np.ndarray:
        """Each of the shard's chunks' score for a question of these token ids, added in their order."""
        scores = np.zeros(self.size, dtype=_DTYPE)
        for token in ids:
            vector = self.dense.get(token)
            if vector is not None:
                np.add(scores, vector, out=scores)  # a zero where the token is not: the same sum
                continue
            start, end = self.columns[token], self.columns[token + 1]
            if end > start:
                np.add.at(scores, self.chunks[start:end], self.data[start:end])
        return scores

    def save(self, folder: Path) -> None:
        np.save(folder / f"{self.start}-data.npy", self.data)
        np.save(folder / f"{self.start}-chunks.npy", self.chunks)
        np.save(folder / f"{self.start}-columns.npy", self.columns)

    @classmethod
    def load(cls, folder: Path, start: int, size: int) -> _Shard:
        parts = (np.load(folder / f"{start}-{part}.npy") for part in ("data", "chunks", "columns"))
        return cls(start, size, *parts)


def _index_shard(
    tokens: BinaryIO, corpus: _Corpus, start: int, stop: int, idf: np.ndarray, average: np.float64
) -> _Shard:
    """Chunks `start` to `stop` indexed with the whole corpus' IDF and average length: bm25s' scores
    of each chunk's tokens, as sparse columns by token (a chunk's scores are its own, whatever the shard).

    bm25s (`scoring._build_scores_and_indices_for_matrix`) scores a chunk at a time; here each chunk's
    tokens are counted (as it counts them) and all of them scored at once, with its formula's operations
    in its order and types (the length part in float64, the term frequencies float32 made float64, the
    product rounded to float32), so each score is bm25s' to the bit.
    """
    tokens.seek(4 * (int(corpus.ends[start - 1]) if start else 0))
    every = array("i")
    every.fromfile(tokens, int(corpus.ends[stop - 1]) - (int(corpus.ends[start - 1]) if start else 0))
    keys, counts, per_chunk = array("i"), array("f"), array("q")
    at = 0
    for length in corpus.lengths[start:stop]:
        counted = Counter(every[at : at + length])
        at += length
        keys.extend(counted.keys())
        counts.extend(counted.values())
        per_chunk.append(len(counted))
    del every
    k1, b = cast(float, BM25_PARAMETERS["k1"]), cast(float, BM25_PARAMETERS["b"])
    lengths = np.asarray(corpus.lengths[start:stop], dtype=np.float64)
    part = np.repeat(k1 * ((1 - b) + b * lengths / average), np.asarray(per_chunk, dtype=np.int64))
    frequency = np.asarray(counts, dtype=_DTYPE).astype(np.float64)
    token_of = np.asarray(keys, dtype=np.int32)
    data = (idf[token_of] * (frequency / (part + frequency))).astype(_DTYPE)
    chunks = np.repeat(np.arange(stop - start, dtype=np.int32), np.asarray(per_chunk, dtype=np.int64))
    # By token, each token's chunks in order (they came chunk by chunk): the columns bm25s builds.
    order = np.argsort(token_of, kind="stable")
    columns = np.zeros(len(corpus.vocab) + 1, dtype=np.int64)
    np.cumsum(np.bincount(token_of, minlength=len(corpus.vocab)), out=columns[1:])
    return _Shard(start, stop - start, data[order], chunks[order], columns)


def bm25_ranks(chunks: Iterable[Chunk], questions: Iterable[RankQuery], shard_chunks: int) -> BM25Ranks:
    """The rank of each question's own chunk among `chunks` (see the module), and the chunks per document."""
    with CountedChunks(chunks) as counted:
        return counted.ranks(questions, shard_chunks)


class CountedChunks:
    """The counting pass over the chunks (step 1 of the module), made before the questions are known,
    so it can run while they are still being drafted; its token file is in a temporary folder until
    `close`. `ranks` may be asked once."""

    def __init__(self, chunks: Iterable[Chunk]) -> None:
        self._folder = tempfile.TemporaryDirectory(prefix="qagen-bm25-ranks-")
        self._tokens = (Path(self._folder.name) / "tokens").open("w+b")
        self._indexed: int | None = None  # the shards' size when `index_ahead` saved them all
        try:
            self._corpus = _Corpus(chunks, self._tokens)
            self._tokens.flush()
        except BaseException:
            self.close()
            raise

    def index_ahead(self, shard_chunks: int) -> None:
        """Index every shard now (step 3's indexing, which needs no question) and keep them on disk, one
        in memory at a time: `ranks` at this shard size then scores the questions only."""
        corpus, folder = self._corpus, Path(self._folder.name)
        if corpus.vocab:
            idf, average = corpus.idf(), corpus.average_length()
            for start in range(0, len(corpus), shard_chunks):
                _index_shard(self._tokens, corpus, start, min(start + shard_chunks, len(corpus)), idf, average).save(
                    folder
                )
        self._indexed = shard_chunks

    def ranks(self, questions: Iterable[RankQuery], shard_chunks: int) -> BM25Ranks:
        """Steps 2 and 3 of the module for these questions."""
        corpus, tokens = self._corpus, self._tokens
        queries = _Queries(questions, corpus)
        ranks = array("q", (0 if position < 0 else 1 for position in queries.positions))
        if corpus.vocab and any(position >= 0 for position in queries.positions):
            indexed = self._indexed == shard_chunks
            _count_higher(tokens, corpus, queries, ranks, Path(self._folder.name), shard_chunks, indexed=indexed)
        return BM25Ranks(Ranks(ranks), corpus.documents)

    def close(self) -> None:
        self._tokens.close()
        self._folder.cleanup()

    def __enter__(self) -> CountedChunks:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class BM25Ranks(NamedTuple):
    ranks: Ranks
    documents: Counter[str]
    """How many chunks each document has (`Chunk.source`): read on the way."""


def _count_higher(
    tokens: BinaryIO,
    corpus: _Corpus,
    queries: _Queries,
    ranks: array[int],
    folder: Path,
    shard_chunks: int,
    *,
    indexed: bool = False,
) -> None:
    """Add to each ranked question's rank the chunks scoring higher than its own chunk, shard by shard
    (`indexed`: every shard is in `folder` already, `CountedChunks.index_ahead`)."""
    idf, average = corpus.idf(), corpus.average_length()
    starts = range(0, len(corpus), shard_chunks)
    own_scores = array("f", bytes(4 * len(queries)))  # float32, as bm25s' scores
    own_shard = [position // shard_chunks if position >= 0 else -1 for position in queries.positions]
    for start in starts:
        stop = min(start + shard_chunks, len(corpus))
        if indexed:
            shard = _Shard.load(folder, start, stop - start)
        else:
            shard = _index_shard(tokens, corpus, start, stop, idf, average)
            if stop < len(corpus):
                shard.save(folder)  # read again by the second pass
        here = start // shard_chunks
        for number, position in enumerate(queries.positions):
            if own_shard[number] < 0 or own_shard[number] > here or not (ids := queries.ids(number)):
                continue  # (a question with no token of the corpus: every chunk scores 0, its own ranks 1)
            scores = shard.scores(ids)
            if own_shard[number] == here:
                own_scores[number] = scores[position - start]
            ranks[number] += int(np.count_nonzero(scores > own_scores[number]))
        del shard  # before the next one is indexed
    # The shards before each question's own one, which were indexed before its own score was known.
    for start in starts[:-1]:
        shard = _Shard.load(folder, start, min(start + shard_chunks, len(corpus)) - start)
        here = start // shard_chunks
        for number in range(len(queries)):
            if own_shard[number] > here and (ids := queries.ids(number)):
                scores = shard.scores(ids)
                ranks[number] += int(np.count_nonzero(scores > own_scores[number]))
