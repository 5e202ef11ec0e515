"""BM25 over every chunk of a run, asked two things about a question:

- `top`: the chunks BM25 ranks first for it, what a critic reading `{retrieved}` is shown (the
  unanswerable type's check that the corpus does not answer its question);
- `rank` (one question) and `ranks` (many): where its own chunk ranks among all the run's chunks,
  the easiness figure `bm25_rank` of every candidate row (rank 1: the evaluator's BM25 baseline
  retrieves the right chunk first).

It is the evaluator's BM25 (`qagen.corpus.bm25_index`: its tokens, parameters and tie
rules) over the run's own chunks. `top` and `rank` ask one index of every chunk, built on the first
of them and kept; the build's tasks hold it (`BuildTasks.chunk_index`), so the critics' searches and
the final write's ranks share it. `ranks` asks that index when it is built already, and otherwise
ranks shard by shard (`bm25_ranks`), the same ranks in memory that does not grow with the corpus:
the final write of a build whose critics never searched builds no index of every chunk. The index
keeps the chunks' ids, not their texts; the chunks themselves are read once more, and kept, on the
first `top`.
"""

from __future__ import annotations

import threading
from array import array
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, overload

from qagen.corpus.chunk import ChunkSource
from qagen.records import Chunk

if TYPE_CHECKING:
    from qagen.corpus.bm25_ranks import CountedChunks

RETRIEVED_CHUNKS = 5
"""How many chunks a critic reading `{retrieved}` is shown: the top of what a RAG system would read."""

SHARD_CHUNKS = 10_000
"""Chunks `ranks` indexes at once when there is no index of every chunk: building a shard peaks at
about 4 KB a chunk (word-salad chunks of 2,000 characters), and each question is scored once a shard."""


class RankQuery(NamedTuple):
    """A question and the id of its own chunk; None: not to be ranked (its rank is None)."""

    question: str
    chunk_id: str | None


class Ranks(Sequence[int | None]):
    """The questions' ranks, in their order: 1 + the chunks scoring strictly higher than the own
    chunk (ties count in its favour); None for a question not ranked or whose chunk is not indexed."""

    def __init__(self, ranks: array[int]) -> None:
        self._ranks = ranks  # 0: None

    def __len__(self) -> int:
        return len(self._ranks)

    @overload
    def __getitem__(self, index: int) -> int | None: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[int | None]: ...
    def __getitem__(self, index: int | slice) -> int | Sequence[int | None] | None:
        if isinstance(index, slice):
            return [rank or None for rank in self._ranks[index]]
        return self._ranks[index] or None


class ChunkIndex:
    """BM25 over the chunks of `chunks` (every chunk of a run), read and indexed on the first question."""

    def __init__(self, chunks: ChunkSource, *, shard_chunks: int = SHARD_CHUNKS) -> None:
        """`shard_chunks`: the chunks `ranks` indexes at once when there is no index of every chunk."""
        self._source = chunks
        self._shard_chunks = shard_chunks
        self._built = False
        self._position: dict[str, int] = {}
        self._documents: Counter[str] | None = None
        """The chunks of each document, once the chunks were read (by an index, `ranks`, `chunks_per_document`)."""
        self._retriever: Any = None  # bm25s.BM25 (untyped library)
        """None while not built, and for chunks without a single word (then every chunk scores 0)."""
        self._chunks: list[Chunk] | None = None
        """The chunks in index order, read on the first `top`."""
        self._counted: CountedChunks | None = None
        """`ranks`' counting pass over the chunks, when `count_ahead` made it and `ranks` did not use it yet."""
        self._counting = threading.Lock()
        """Held while `count_ahead` counts, so `ranks` waits for it instead of counting again."""

    def top(self, question: str, k: int = RETRIEVED_CHUNKS) -> tuple[Chunk, ...]:
        """The top `k` chunks for `question`, best first; ties go to the earlier chunk, and chunks
        sharing no word with the question are left out (so fewer than `k` may come back)."""
        from qagen.corpus.bm25_index import best_positions

        self._build()
        if self._retriever is None:
            return ()
        chunks = self._read_chunks()
        return tuple(chunks[position] for position, _ in best_positions(self._retriever, question, k))

    def rank(self, question: str, chunk_id: str) -> int | None:
        """1 + the chunks scoring strictly higher than `chunk_id` for `question` (ties count in the
        chunk's favour: a question sharing no word with any chunk ranks it 1); None for a chunk not
        indexed."""
        from qagen.corpus.bm25_index import rank_of_position

        self._build()
        position = self._position.get(chunk_id)
        if position is None:
            return None
        return 1 if self._retriever is None else rank_of_position(self._retriever, question, position)

    def count_ahead(self) -> None:
        """Make the counting pass of `ranks` over the chunks, and index its shards, now: before the
        questions are known (from another thread: a build makes it while its calls are in flight, so its
        final write does not wait for it). Nothing when `ranks` will not need it, or it was made
        already; an error is raised here, and again by `ranks`."""
        with self._counting:
            if self._built or self._counted is not None:
                return
            from qagen.corpus.bm25_ranks import CountedChunks  # (numpy and bm25s: loaded when asked)

            counted = CountedChunks(self._source())
            try:
                counted.index_ahead(self._shard_chunks)
            except BaseException:
                counted.close()
                raise
            self._counted = counted

    def ranks(self, questions: Iterable[RankQuery]) -> Ranks:
        """Each question's `rank`, in order (None where `RankQuery.chunk_id` is None or not indexed):
        from the index of every chunk when `top` or `rank` built it, else shard by shard (`bm25_ranks`),
        over the counting pass `count_ahead` made when it did (waiting for it while it runs)."""
        if not self._built:
            from qagen.corpus.bm25_ranks import CountedChunks

            with self._counting:
                counted, self._counted = self._counted, None
            with counted if counted is not None else CountedChunks(self._source()) as counting:
                found = counting.ranks(questions, self._shard_chunks)
            self._documents = found.documents
            return found.ranks
        ranks = array("q")
        for question, chunk_id in questions:
            rank = self.rank(question, chunk_id) if chunk_id is not None else None
            ranks.append(rank or 0)
        return Ranks(ranks)

    def chunks_per_document(self) -> Counter[str]:
        """How many chunks each document (`Chunk.source`) has among the chunks (read once, by whatever
        reads them first)."""
        if self._documents is None:
            self._documents = Counter(chunk.source for chunk in self._source())
        return Counter(self._documents)

    def _build(self) -> None:
        if self._built:
            return
        # Imported here: a build whose chunks are never asked about loads no bm25s.
        from qagen.corpus.bm25_index import TokenIds, bm25_retriever

        ids = TokenIds()
        documents: Counter[str] = Counter()
        for chunk in self._source():
            self._position[chunk.id] = len(ids)
            documents[chunk.source] += 1
            ids.add(chunk.text)
        self._documents = documents
        if ids.vocab:
            self._retriever = bm25_retriever(ids)
        self._built = True

    def _read_chunks(self) -> list[Chunk]:
        if self._chunks is None:
            chunks = list(self._source())
            if len(chunks) != sum(self.chunks_per_document().values()):
                raise RuntimeError("the run's chunks changed after they were indexed; run the command again")
            self._chunks = chunks
        return self._chunks
