"""A BM25 index over chunks (`bm25s`, sparse scores in numpy/scipy): tokenizing, building, searching, saving.

The chunks come from qagen's own splitter, so a retrieved context carries the same `source`,
`start_index` and `end_index` as the chunks a test set was drafted from.
"""

from __future__ import annotations

import json
import logging
import sys
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
from tqdm import tqdm

from qagen.corpus.chunk import ChunkStats, chunk_documents
from qagen.corpus.load.documents import CorpusReport
from qagen.corpus.saved_index import load_folder, save_folder
from qagen.corpus.words import tokenize
from qagen.errors import CorpusError
from qagen.records import Document, RetrievedContext

__all__ = [
    "INDEX_VERSION",
    "BM25Index",
    "TokenIds",
    "best_positions",
    "bm25_retriever",
    "index_chunks",
    "question_scores",
    "rank_of_position",
    "token_ids",
    "tokenize",
]

_logger = logging.getLogger(__name__)

# BM25's own parameters (bm25s' defaults, named so that they are part of the cache key).
BM25_PARAMETERS: dict[str, object] = {"k1": 1.5, "b": 0.75, "method": "lucene"}
# Part of the cache key: a change to the tokenizer, the stored layout or the BM25 parameters must
# not reuse an old index.
INDEX_VERSION = f"bm25s-1 {json.dumps(BM25_PARAMETERS, sort_keys=True)}"


def token_ids(text: str, vocab: dict[str, int]) -> list[int]:
    """The text's tokens as ids of `vocab`, which gains an id for each token it did not hold."""
    # setdefault hands back the dict's own int objects, so the lists share them (less memory).
    return [vocab.setdefault(token, len(vocab)) for token in tokenize(text)]


class TokenIds:
    """Texts as token ids over one vocabulary, held compactly: every id in one array of 4-byte ints.

    A list of Python lists takes 8 bytes a token and more (the texts of a 100,000-chunk corpus hold
    about 44 million tokens); bm25s reads the texts one at a time (three passes), so each text's list
    is made only as it is read. Its `ids` and `vocab` are what bm25s' `index` reads of a corpus object.
    """

    def __init__(self) -> None:
        self.vocab: dict[str, int] = {}
        self._tokens = array("i")
        self._ends = array("q")

    def add(self, text: str) -> None:
        """Append a text's tokens (`token_ids`, the vocabulary gaining its new tokens)."""
        self._tokens.extend(token_ids(text, self.vocab))
        self._ends.append(len(self._tokens))

    @property
    def ids(self) -> TokenIds:
        return self

    def __len__(self) -> int:
        return len(self._ends)

    def __iter__(self) -> Iterator[list[int]]:
        start, tokens = 0, self._tokens
        for end in self._ends:
            yield tokens[start:end].tolist()
            start = end


def bm25_retriever(ids: TokenIds) -> Any:
    """bm25s' index (BM25_PARAMETERS) of texts given as token ids, whose vocabulary must not be empty."""
    retriever = bm25s.BM25(**BM25_PARAMETERS)
    # No empty-query token is needed: an empty query is never scored (`question_scores`).
    retriever.index(ids, create_empty_token=False, show_progress=False)
    return retriever


def question_scores(retriever: Any, question: str) -> Any:
    """Every indexed text's BM25 score for `question` (a numpy array, by position); None when no word
    of the question is in the index (every text would score 0)."""
    ids = retriever.get_tokens_ids(tokenize(question))
    return np.asarray(retriever.get_scores_from_ids(ids)) if ids else None


def best_positions(retriever: Any, question: str, k: int) -> list[tuple[int, float]]:
    """(position, BM25 score) of the top `k` texts for `question`, best first; ties go to the earlier
    text, and texts that share no word with the question (score 0) are left out."""
    scores = question_scores(retriever, question)
    if scores is None or k <= 0:
        return []
    k = min(k, len(scores))
    # Every text scoring at least the k-th best score, so that ties at the cut are broken by
    # position (deterministic), not by whatever order the partition left them in.
    threshold = np.partition(scores, len(scores) - k)[len(scores) - k]
    candidates = np.flatnonzero((scores >= threshold) & (scores > 0))
    order = candidates[np.lexsort((candidates, -scores[candidates]))][:k]
    return [(int(i), float(scores[i])) for i in order]


def rank_of_position(retriever: Any, question: str, position: int) -> int:
    """Where the text at `position` ranks for `question`: 1 + the texts scoring strictly higher.

    Ties count in the text's favour, so a question that shares no word with any text ranks every
    text first among equals rather than last.
    """
    scores = question_scores(retriever, question)
    if scores is None:
        return 1  # every text scores 0
    return 1 + int(np.count_nonzero(scores > scores[position]))


@dataclass
class BM25Index:
    """A BM25 index over chunks, and the chunks as the contexts it returns."""

    retriever: Any  # bm25s.BM25 (untyped library)
    contexts: list[RetrievedContext]
    report: CorpusReport | None = None

    def search(self, question: str, k: int) -> list[RetrievedContext]:
        """The top `k` chunks for `question`, best first; ties go to the earlier chunk.

        Chunks that share no word with the question score 0 and are not returned: they are no
        evidence, and a fixed filler would only dilute precision. So fewer than `k` may come back.
        """
        return [self.contexts[i] for i, _ in self.ranked(question, k)]

    def ranked(self, question: str, k: int) -> list[tuple[int, float]]:
        """(chunk position, BM25 score) of the top `k` chunks for `question`, as `search` picks them."""
        return best_positions(self.retriever, question, k)

    def save(self, folder: Path, key: str, settings: dict[str, object] | None = None) -> bool:
        """Write the index to `folder` atomically; an index of an earlier state of the same corpus
        saved beside it (same `settings`, another key) is deleted. False when the cache cannot be
        written (`saved_index.save_folder`)."""

        def write(staging: Path) -> None:
            self.retriever.save(str(staging), show_progress=False)

        return save_folder(folder, key, settings, self.contexts, write, _logger, "BM25 index")

    @classmethod
    def load(cls, folder: Path, key: str) -> BM25Index | None:
        """The index saved in `folder` under `key`, or None when there is none (or it is unreadable)."""

        def read(saved: Path) -> Any:
            return bm25s.BM25.load(str(saved), load_vocab=True, show_progress=False)

        loaded = load_folder(folder, key, read, _logger, "BM25 index")
        if loaded is None:
            return None
        retriever, contexts = loaded
        _logger.info("Reusing the BM25 index of %d chunks saved in %s.", len(contexts), folder)
        return cls(retriever=retriever, contexts=contexts)


def index_chunks(documents: Iterable[Document], splitter: Any, *, progress: bool = True) -> BM25Index:
    """Chunk `documents` (dropping repeated chunks, as the test sets do) and index them with BM25."""
    ids = TokenIds()
    contexts: list[RetrievedContext] = []
    with tqdm(desc="Chunking the corpus for BM25", unit=" chunks", file=sys.stderr, disable=not progress) as bar:
        for chunk in chunk_documents(documents, splitter, ChunkStats()):
            ids.add(chunk.text)
            contexts.append(
                RetrievedContext(
                    text=chunk.text, source=chunk.source, start_index=chunk.start_index, end_index=chunk.end_index
                )
            )
            bar.update()
    if not ids.vocab:
        raise CorpusError("The corpus has no words to index for the BM25 baseline.")
    index = BM25Index(retriever=bm25_retriever(ids), contexts=contexts)
    _logger.info("Built a BM25 index of %d chunks.", len(contexts))
    return index
