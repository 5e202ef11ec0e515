"""A BM25 index over chunks (`bm25s`, sparse scores in numpy/scipy): tokenizing, building, searching, saving.

The chunks come from qagen's own splitter, so a retrieved context carries the same `source`,
`start_index` and `end_index` as the chunks a test set was drafted from.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
from tqdm import tqdm

from qagen.errors import CorpusError
from qagen.evaluate.records import RetrievedContext
from qagen.evaluate.systems.saved_index import load_folder, save_folder
from qagen.generation.chunk import ChunkStats, chunk_documents
from qagen.generation.load.documents import CorpusReport
from qagen.records import Document

__all__ = ["INDEX_VERSION", "BM25Index", "index_chunks", "tokenize"]

_logger = logging.getLogger(__name__)

# Ideographs and kana are written without spaces, so each one is a token of its own; every other
# run of letters and digits (Latin, Cyrillic, Greek, Hangul words, identifiers with `_`) is one token.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
_TOKEN = re.compile(f"[{_CJK}]|[^\\W{_CJK}]+")
# BM25's own parameters (bm25s' defaults, named so that they are part of the cache key).
BM25_PARAMETERS: dict[str, object] = {"k1": 1.5, "b": 0.75, "method": "lucene"}
# Part of the cache key: a change to the tokenizer, the stored layout or the BM25 parameters must
# not reuse an old index.
INDEX_VERSION = f"bm25s-1 {json.dumps(BM25_PARAMETERS, sort_keys=True)}"


def tokenize(text: str) -> list[str]:
    """Case-folded words, and single CJK characters; no stemming, no stopwords.

    NFC first, so a decomposed "u" + combining diaeresis in a query matches a composed "ü".
    """
    return _TOKEN.findall(unicodedata.normalize("NFC", text).casefold())


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
        ids = self.retriever.get_tokens_ids(tokenize(question))
        if not ids or k <= 0:
            return []
        scores = np.asarray(self.retriever.get_scores_from_ids(ids))
        k = min(k, len(scores))
        # Every chunk scoring at least the k-th best score, so that ties at the cut are broken by
        # position (deterministic), not by whatever order the partition left them in.
        threshold = np.partition(scores, len(scores) - k)[len(scores) - k]
        candidates = np.flatnonzero((scores >= threshold) & (scores > 0))
        order = candidates[np.lexsort((candidates, -scores[candidates]))][:k]
        return [(int(i), float(scores[i])) for i in order]

    def save(self, folder: Path, key: str, settings: dict[str, object] | None = None) -> None:
        """Write the index to `folder` atomically; an index of an earlier state of the same corpus
        saved beside it (same `settings`, another key) is deleted (`saved_index.save_folder`)."""

        def write(staging: Path) -> None:
            self.retriever.save(str(staging), show_progress=False)

        save_folder(folder, key, settings, self.contexts, write, _logger, "BM25 index")

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
    vocab: dict[str, int] = {}
    token_ids: list[list[int]] = []
    contexts: list[RetrievedContext] = []
    with tqdm(desc="Chunking the corpus for BM25", unit=" chunks", file=sys.stderr, disable=not progress) as bar:
        for chunk in chunk_documents(documents, splitter, ChunkStats()):
            # setdefault hands back the dict's own int objects, so the lists share them (less memory).
            token_ids.append([vocab.setdefault(token, len(vocab)) for token in tokenize(chunk.text)])
            contexts.append(
                RetrievedContext(
                    text=chunk.text, source=chunk.source, start_index=chunk.start_index, end_index=chunk.end_index
                )
            )
            bar.update()
    if not vocab:
        raise CorpusError("The corpus has no words to index for the BM25 baseline.")
    retriever = bm25s.BM25(**BM25_PARAMETERS)
    # Token ids and vocabulary are given directly; no empty-query token is needed, as `search`
    # never scores an empty query.
    retriever.index((token_ids, vocab), create_empty_token=False, show_progress=False)
    _logger.info("Built a BM25 index of %d chunks.", len(contexts))
    return BM25Index(retriever=retriever, contexts=contexts)
