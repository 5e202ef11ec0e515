"""How easy a question is for retrieval: how much of it its chunk spells out, and where BM25 ranks
its chunk when the question is the query.

- `copied_share`: the share of the question's distinct content words (`checks.words`) that occur in
  its chunk. 1.0 is a question made of the chunk's words; a reworded question scores lower.
- `ChunkRanker.rank`: the rank of the question's own chunk among all the corpus' chunks, by BM25
  (bm25s, the evaluator's tokens and parameters: `qagen.evaluate.systems.bm25_index`). Rank 1 is a
  question the evaluator's BM25 baseline answers from the right chunk; ties count in the chunk's
  favour (rank = 1 + the chunks that score strictly higher), so a question sharing no word with
  any chunk ranks first among equals rather than last.

`too_close` is the optional bound on `copied_share` that rejects drafts copying their chunk
(reason `too_close`); question types that reword on purpose share it.
"""

from __future__ import annotations

from collections.abc import Iterable

import bm25s
import numpy as np

from qagen.evaluate.systems.bm25_index import BM25_PARAMETERS, tokenize
from qagen.generation.checks.words import content_words

TOO_CLOSE = "too_close"
"""The rejection reason of a draft whose question copies its chunk (`too_close`)."""


def copied_share(question: str, chunk: str) -> float | None:
    """The share of the question's distinct content words found in the chunk; None for a question
    with no content word."""
    wanted = set(content_words(question))
    if not wanted:
        return None
    return len(wanted & set(content_words(chunk))) / len(wanted)


def too_close(question: str, chunk: str, max_share: float) -> bool:
    """Whether the question copies its chunk: more than `max_share` of its content words are the chunk's."""
    share = copied_share(question, chunk)
    return share is not None and share > max_share


class ChunkRanker:
    """BM25 over the corpus' chunks, asked for the rank of one chunk for a question."""

    def __init__(self, chunks: Iterable[tuple[str, str]]) -> None:
        """`chunks`: (chunk id, text) pairs, every chunk of the corpus."""
        vocab: dict[str, int] = {}
        token_ids: list[list[int]] = []
        self._position: dict[str, int] = {}
        for chunk_id, text in chunks:
            self._position[chunk_id] = len(token_ids)
            token_ids.append([vocab.setdefault(token, len(vocab)) for token in tokenize(text)])
        self._retriever = bm25s.BM25(**BM25_PARAMETERS)
        self._empty = not vocab
        if not self._empty:
            self._retriever.index((token_ids, vocab), create_empty_token=False, show_progress=False)

    def __len__(self) -> int:
        return len(self._position)

    def rank(self, question: str, chunk_id: str) -> int | None:
        """1 + the chunks scoring strictly higher than `chunk_id` for `question`; None for a chunk
        not indexed."""
        position = self._position.get(chunk_id)
        if position is None:
            return None
        if self._empty:
            return 1
        ids = self._retriever.get_tokens_ids(tokenize(question))
        if not ids:
            return 1  # no word of the question is in the corpus: every chunk scores 0
        scores = np.asarray(self._retriever.get_scores_from_ids(ids))
        return 1 + int(np.count_nonzero(scores > scores[position]))
