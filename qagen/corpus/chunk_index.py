"""BM25 over every chunk of a run, built once per build process on its first use, and asked two
things about a question:

- `top`: the chunks BM25 ranks first for it, what a critic reading `{retrieved}` is shown (the
  unanswerable type's check that the corpus does not answer its question);
- `rank`: where its own chunk ranks among all the run's chunks, the easiness figure `bm25_rank`
  of every candidate row (rank 1: the evaluator's BM25 baseline retrieves the right chunk first).

It is the evaluator's BM25 (`qagen.corpus.bm25_index`: its tokens, parameters and tie
rules) over the run's own chunks. The build's tasks hold the one index (`BuildTasks.chunk_index`),
so the critics' searches and the final write's ranks share it: a build tokenizes and indexes its
chunks once, whatever asks. The index keeps the chunks' ids, not their texts: a build that only
ranks holds no more than its ids; the chunks themselves are read once more, and kept, on the first
`top`.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from qagen.corpus.chunk import ChunkSource
from qagen.records import Chunk

RETRIEVED_CHUNKS = 5
"""How many chunks a critic reading `{retrieved}` is shown: the top of what a RAG system would read."""


class ChunkIndex:
    """BM25 over the chunks of `chunks` (every chunk of a run), read and indexed on the first question."""

    def __init__(self, chunks: ChunkSource) -> None:
        self._source = chunks
        self._built = False
        self._position: dict[str, int] = {}
        self._documents: Counter[str] = Counter()
        self._retriever: Any = None  # bm25s.BM25 (untyped library)
        """None while not built, and for chunks without a single word (then every chunk scores 0)."""
        self._chunks: list[Chunk] | None = None
        """The chunks in index order, read on the first `top`."""

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

    def chunks_per_document(self) -> Counter[str]:
        """How many chunks each document (`Chunk.source`) has in the index."""
        self._build()
        return Counter(self._documents)

    def _build(self) -> None:
        if self._built:
            return
        # Imported here: a build whose chunks are never asked about loads no bm25s.
        from qagen.corpus.bm25_index import TokenIds, bm25_retriever

        ids = TokenIds()
        for chunk in self._source():
            self._position[chunk.id] = len(ids)
            self._documents[chunk.source] += 1
            ids.add(chunk.text)
        if ids.vocab:
            self._retriever = bm25_retriever(ids)
        self._built = True

    def _read_chunks(self) -> list[Chunk]:
        if self._chunks is None:
            chunks = list(self._source())
            if len(chunks) != sum(self._documents.values()):
                raise RuntimeError("the run's chunks changed after they were indexed; run the command again")
            self._chunks = chunks
        return self._chunks
