"""Dense retrieval: chunks embedded by a LangChain embeddings model, searched with FAISS.

Vectors are scaled to unit length and searched by inner product in a flat (exact) FAISS index, so a
score is the cosine similarity of question and chunk. The index file holds the vectors themselves:
saved in the index cache (`index_cache`) under a key of the corpus files, the chunking and the
embeddings model, it is reused by later runs, into any output directory, with no text embedded again.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings
from tqdm import tqdm

from qagen.corpus.embeddings import EmbeddingsModel, require_dense_extra
from qagen.corpus.index_cache import building
from qagen.corpus.load.documents import CorpusReport
from qagen.corpus.saved_index import load_folder, save_folder
from qagen.errors import CorpusError, LLMUnavailableError, QagenError
from qagen.evaluate.systems.corpus_chunks import CorpusChunks, remember, warn_skipped
from qagen.evaluate.systems.retrievers import ScoredContext
from qagen.records import RetrievedContext

__all__ = ["DENSE_VERSION", "DenseIndex", "DenseRetriever", "embed_texts"]

_logger = logging.getLogger(__name__)

# Part of the cache key: a change to the stored layout or the search must not reuse an old index.
DENSE_VERSION = "faiss-flat-ip-1"
# Texts per embeddings call: requests of a sensible size, and a progress bar that moves.
EMBED_BATCH = 64
# Question vectors kept per index, so a grid over k (or a re-asked question) embeds a question once.
_QUERY_SLOTS = 4096


def _faiss() -> Any:
    return require_dense_extra("faiss")


def embed_texts(embeddings: Embeddings, texts: list[str], *, what: str, progress: bool = False) -> np.ndarray:
    """The unit-length vectors of `texts` (float32, one row each; a zero vector stays zero)."""
    rows: list[np.ndarray] = []
    bar = tqdm(total=len(texts), desc=f"Embedding {what}", unit=" texts", file=sys.stderr, disable=not progress)
    with bar:
        for start in range(0, len(texts), EMBED_BATCH):
            batch = texts[start : start + EMBED_BATCH]
            try:
                vectors = np.asarray(embeddings.embed_documents(batch), dtype=np.float32)
            except QagenError:
                raise
            except Exception as exc:  # each provider raises its own types: the run stops on any
                raise LLMUnavailableError(f"Embedding {what} failed: {type(exc).__name__}: {exc}") from exc
            if vectors.ndim != 2 or len(vectors) != len(batch) or (rows and vectors.shape[1] != rows[0].shape[1]):
                raise LLMUnavailableError(
                    f"The embeddings model gave {vectors.shape} vectors for {len(batch)} texts while embedding {what}."
                )
            rows.append(vectors)
            bar.update(len(batch))
    matrix = np.concatenate(rows) if rows else np.zeros((0, 0), dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    unit: np.ndarray = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
    return unit


@dataclass
class DenseIndex:
    """A flat inner-product FAISS index of unit vectors, and the chunks as the contexts it returns."""

    faiss_index: Any  # faiss.IndexFlatIP (untyped library)
    contexts: list[RetrievedContext]
    queries: OrderedDict[str, np.ndarray] = field(default_factory=OrderedDict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def of(cls, vectors: np.ndarray, contexts: list[RetrievedContext]) -> DenseIndex:
        index = _faiss().IndexFlatIP(vectors.shape[1])
        index.add(vectors)
        return cls(faiss_index=index, contexts=contexts)

    def ranked(self, vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        """(chunk position, cosine similarity) of the `k` chunks nearest `vector`, best first.

        A zero vector (a question with nothing to embed) points nowhere: no chunk is returned.
        """
        if k <= 0 or not self.contexts or not np.any(vector):
            return []
        scores, ids = self.faiss_index.search(vector.reshape(1, -1), min(k, len(self.contexts)))
        return [(int(i), float(score)) for i, score in zip(ids[0], scores[0], strict=True) if i >= 0]

    def save(self, folder: Path, key: str, settings: dict[str, object]) -> bool:
        """Write the index to `folder` atomically; False when the cache cannot be written (`save_folder`)."""
        faiss = _faiss()
        return save_folder(
            folder,
            key,
            settings,
            self.contexts,
            lambda staging: faiss.write_index(self.faiss_index, str(staging / "index.faiss")),
            _logger,
            "dense index",
        )

    @classmethod
    def load(cls, folder: Path, key: str) -> DenseIndex | None:
        faiss = _faiss()

        def read(saved: Path) -> Any:
            return faiss.read_index(str(saved / "index.faiss"))

        loaded = load_folder(folder, key, read, _logger, "dense index")
        if loaded is None:
            return None
        index, contexts = loaded
        if index.ntotal != len(contexts):
            _logger.warning("Ignoring the dense index in %s: not one vector per chunk; rebuilding it.", folder)
            return None
        return cls(faiss_index=index, contexts=contexts)


class DenseRetriever:
    """The corpus's chunks embedded by `embeddings` and searched with FAISS (cosine similarity),
    built once per corpus setting, model and process; with `index_dir` also saved there and reused
    by later runs while the corpus files are unchanged."""

    def __init__(self, corpus: CorpusChunks, embeddings: EmbeddingsModel, *, index_dir: Path | None = None) -> None:
        self.corpus = corpus
        self.embeddings = embeddings
        self.index_dir = index_dir
        self._index: DenseIndex | None = None

    @property
    def name(self) -> str:
        return f"dense-{self.embeddings.label}"

    def index_settings(self) -> dict[str, object]:
        """What the index depends on besides the corpus files' contents."""
        return {"version": DENSE_VERSION, "embeddings": self.embeddings.identity, **self.corpus.settings()}

    def cache_key(self) -> str:
        return self.corpus.cache_key(self.index_settings())

    def describe(self) -> dict[str, object]:
        return {"retriever": "faiss", "embeddings": self.embeddings.identity, "corpus_index": self.cache_key()[:16]}

    def index(self) -> DenseIndex:
        """The index: from this process's memory, else from `index_dir`, else built now (blocking)."""
        if self._index is None:
            key = self.cache_key()
            self._index = remember(key, lambda: self._load_or_build(key))
        return self._index

    def build(self) -> None:
        self.index()

    def _load_or_build(self, key: str) -> DenseIndex:
        _faiss()  # a missing extra is said now, before any text is embedded
        folder = self.index_dir / f"dense-{key[:24]}" if self.index_dir is not None else None
        with building(folder):  # another process embedding this corpus: wait, then load its index
            return self._load_or_embed(folder, key)

    def _load_or_embed(self, folder: Path | None, key: str) -> DenseIndex:
        index = DenseIndex.load(folder, key) if folder is not None else None
        if index is not None:
            _logger.info(
                "Reusing the dense index of %d chunks embedded by %s, saved in %s: no chunk embedded again.",
                len(index.contexts),
                self.embeddings.label,
                folder,
            )
            return index
        report = CorpusReport()
        contexts = self.corpus.contexts(report, "dense retrieval")
        warn_skipped(report, "Dense baseline")
        if not contexts:
            raise CorpusError("The corpus has no text to embed for the dense baseline.")
        texts = [context.text for context in contexts]
        what = f"{len(texts)} chunks with {self.embeddings.label}"
        vectors = embed_texts(self.embeddings.embeddings(), texts, what=what, progress=self.corpus.progress)
        index = DenseIndex.of(vectors, contexts)
        if folder is None or not index.save(folder, key, self.index_settings()):
            _logger.info("Built a dense index of %d chunks embedded by %s.", len(contexts), self.embeddings.label)
        else:
            _logger.info(
                "Built a dense index of %d chunks embedded by %s, saved in %s for later runs.",
                len(contexts),
                self.embeddings.label,
                folder,
            )
        return index

    def contexts(self) -> list[RetrievedContext]:
        return self.index().contexts

    def query_vector(self, question: str) -> np.ndarray:
        """The question's unit vector (embedded once per index and process, `_QUERY_SLOTS` kept)."""
        index = self.index()
        with index.lock:
            vector = index.queries.get(question)
            if vector is not None:
                index.queries.move_to_end(question)
                return vector
        try:
            raw = self.embeddings.embeddings().embed_query(question)
        except QagenError:
            raise
        except Exception as exc:  # each provider raises its own types: the run stops on any
            raise LLMUnavailableError(f"Embedding a question with {self.embeddings.spec} failed: {exc}") from exc
        vector = np.asarray(raw, dtype=np.float32)
        norm = float(np.linalg.norm(vector))
        vector = vector / norm if norm > 0 else vector
        with index.lock:
            index.queries[question] = vector
            while len(index.queries) > _QUERY_SLOTS:
                index.queries.popitem(last=False)
        return vector

    def search(self, question: str, n: int) -> list[ScoredContext]:
        index = self.index()
        return [ScoredContext(index.contexts[i], score) for i, score in index.ranked(self.query_vector(question), n)]
