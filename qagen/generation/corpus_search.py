"""The chunks of a run's corpus that BM25 ranks first for a question: what a critic reading
`{retrieved}` is shown (the unanswerable type's check that the corpus does not answer its question).

The evaluator's BM25 (`qagen.evaluate.systems.bm25_index`: its tokens, parameters and tie rule), over
the run's own chunks, built once per build on first use and only when a critic of the build reads
`{retrieved}`.
"""

from __future__ import annotations

from qagen.question_types.spec import ChunkSource
from qagen.records import Chunk

RETRIEVED_CHUNKS = 5
"""How many chunks a critic reading `{retrieved}` is shown: the top of what a RAG system would read."""


class CorpusSearch:
    """BM25 over every chunk of a run, built on the first search."""

    def __init__(self, chunks: ChunkSource, k: int = RETRIEVED_CHUNKS) -> None:
        self._source = chunks
        self.k = k
        self._chunks: list[Chunk] | None = None
        self._index: object | None = None

    def search(self, question: str) -> tuple[Chunk, ...]:
        """The top `k` chunks for `question`, best first (fewer when fewer share a word with it)."""
        from qagen.evaluate.systems.bm25_index import BM25Index

        index, chunks = self._built()
        if index is None:
            return ()
        assert isinstance(index, BM25Index)
        return tuple(chunks[position] for position, _ in index.ranked(question, self.k))

    def _built(self) -> tuple[object | None, list[Chunk]]:
        if self._chunks is None:
            import bm25s

            from qagen.evaluate.records import RetrievedContext
            from qagen.evaluate.systems.bm25_index import BM25_PARAMETERS, BM25Index, tokenize

            self._chunks = list(self._source())
            vocab: dict[str, int] = {}
            token_ids = [[vocab.setdefault(token, len(vocab)) for token in tokenize(c.text)] for c in self._chunks]
            if vocab:
                retriever = bm25s.BM25(**BM25_PARAMETERS)
                retriever.index((token_ids, vocab), create_empty_token=False, show_progress=False)
                contexts = [RetrievedContext(text="", source=c.source) for c in self._chunks]
                self._index = BM25Index(retriever=retriever, contexts=contexts)
        return self._index, self._chunks
