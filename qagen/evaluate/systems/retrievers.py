"""How the bundled baseline finds its chunks: a retriever ranks a corpus's chunks for a question.

Every retriever shares one small contract (`Retriever`): qagen's BM25 (`BM25Retriever`, words),
dense (`qagen.evaluate.systems.dense_index.DenseRetriever`, embeddings searched with FAISS) and
hybrid (`HybridRetriever`, the two rankings fused by reciprocal rank fusion), and those of the
registry (`qagen.evaluate.systems.retriever_specs.RETRIEVERS`, installed packages' included). Each
returns chunks with their scores, best first; the baseline may then pass them through a `Reranker`
before its reader answers from the top `k`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, Protocol, runtime_checkable

from qagen.corpus.bm25_index import INDEX_VERSION, BM25Index, index_chunks
from qagen.corpus.index_cache import building
from qagen.corpus.load.documents import CorpusReport
from qagen.errors import ConfigError
from qagen.evaluate.systems.corpus_chunks import CorpusChunks, remember, warn_skipped

# The step after retrieval has its own package (`qagen.evaluate.systems.rerank`); named here too.
from qagen.evaluate.systems.rerank.base import Reranker as Reranker
from qagen.evaluate.systems.retriever_specs import RetrieverOptions, retriever_spec
from qagen.records import RetrievedContext

if TYPE_CHECKING:
    from qagen.corpus.embeddings import EmbeddingsModel

__all__ = [
    "FUSION_DEPTH",
    "RRF_K",
    "BM25Retriever",
    "HybridRetriever",
    "Reranker",
    "Retriever",
    "ScoredContext",
    "make_retriever",
    "reciprocal_rank_fusion",
]


# Reciprocal rank fusion's constant (Cormack, Clarke and Buettcher, SIGIR 2009): a chunk scores
# sum(1 / (RRF_K + rank)) over the rankings, rank 1 the best. 60 is the paper's value and the
# default of Elasticsearch, OpenSearch and LangChain's EnsembleRetriever; it damps the weight of
# the very top ranks, so a chunk that both rankings place fairly high beats one only a single
# ranking places first.
RRF_K = 60
# How deep each ranking is read before fusing (at least as deep as the chunks asked for): a chunk
# ranked 80th by BM25 but 2nd by embeddings must still get its BM25 share.
FUSION_DEPTH = 100


class ScoredContext(NamedTuple):
    """A retrieved chunk and its score under the ranking that returned it (higher is better)."""

    context: RetrievedContext
    score: float


@runtime_checkable
class Retriever(Protocol):
    """Ranks the chunks of `corpus` for a question. `build` and `search` block: run them in a thread."""

    @property
    def corpus(self) -> CorpusChunks: ...

    @property
    def name(self) -> str:
        """The retriever in a system's name: `bm25`, `dense-all-MiniLM-L6-v2`, `hybrid-...`."""
        ...

    def describe(self) -> dict[str, object]:
        """The settings that shape its rankings (the index's key included), for the report."""
        ...

    def build(self) -> None:
        """Load or build the index now (else it is built on the first search)."""
        ...

    def contexts(self) -> list[RetrievedContext]:
        """Every chunk of the index (builds it)."""
        ...

    def search(self, question: str, n: int) -> list[ScoredContext]:
        """The top `n` chunks for `question`, best first (fewer when fewer are evidence)."""
        ...


class BM25Retriever:
    """BM25 over the corpus's chunks (`qagen.corpus.bm25_index`), built once per corpus
    setting and process, and with `index_dir` saved there and reused by later runs while the corpus
    files are unchanged (same names, sizes and contents)."""

    name = "bm25"

    def __init__(self, corpus: CorpusChunks, *, index_dir: Path | None = None) -> None:
        self.corpus = corpus
        self.index_dir = index_dir
        self._index: BM25Index | None = None

    def index_settings(self) -> dict[str, object]:
        """What the index depends on besides the corpus files' contents."""
        return {"version": INDEX_VERSION, **self.corpus.settings()}

    def cache_key(self) -> str:
        return self.corpus.cache_key(self.index_settings())

    def describe(self) -> dict[str, object]:
        # The corpus it retrieves from (files' names, sizes and contents): stored answers read from an
        # older corpus are another system's answers, asked again, not reused.
        return {"retriever": "bm25s", "corpus_index": self.cache_key()[:16]}

    def index(self) -> BM25Index:
        """The index: from this process's memory, else from `index_dir`, else built now (blocking)."""
        if self._index is None:
            key = self.cache_key()
            self._index = remember(key, lambda: self._load_or_build(key))
        return self._index

    def build(self) -> None:
        self.index()

    def _load_or_build(self, key: str) -> BM25Index:
        folder = self.index_dir / f"bm25-{key[:24]}" if self.index_dir is not None else None
        with building(folder):  # another process building this index: wait, then load it
            index = BM25Index.load(folder, key) if folder is not None else None
            if index is None:
                report = CorpusReport()
                index = index_chunks(self.corpus.documents(report), self.corpus.splitter, progress=self.corpus.progress)
                index.report = report
                warn_skipped(report, "BM25 baseline")
                if folder is not None:
                    index.save(folder, key, self.index_settings())
        return index

    def contexts(self) -> list[RetrievedContext]:
        return self.index().contexts

    def search(self, question: str, n: int) -> list[ScoredContext]:
        index = self.index()
        return [ScoredContext(index.contexts[i], score) for i, score in index.ranked(question, n)]


def reciprocal_rank_fusion(rankings: list[list[ScoredContext]], n: int) -> list[ScoredContext]:
    """The top `n` chunks of the fused rankings, scored sum(1 / (RRF_K + rank)), best first.

    Chunks are the same chunk when their contexts are equal (text, source, offsets). Ties go to the
    chunk with the better single rank, then to the earlier ranking's order, so fusion is deterministic.
    """
    fused: dict[RetrievedContext, float] = {}
    best_rank: dict[RetrievedContext, tuple[int, int]] = {}
    for which, ranking in enumerate(rankings):
        for rank, scored in enumerate(ranking, start=1):
            context = scored.context
            fused[context] = fused.get(context, 0.0) + 1.0 / (RRF_K + rank)
            best_rank[context] = min(best_rank.get(context, (rank, which)), (rank, which))
    order = sorted(fused, key=lambda context: (-fused[context], best_rank[context]))
    return [ScoredContext(context, fused[context]) for context in order[:n]]


class HybridRetriever:
    """BM25 and dense rankings of the same chunks, fused by reciprocal rank fusion (`RRF_K`)."""

    def __init__(self, sparse: Retriever, dense: Retriever) -> None:
        self.sparse = sparse
        self.dense = dense
        self.corpus = dense.corpus

    @property
    def name(self) -> str:
        return "hybrid" + self.dense.name.removeprefix("dense")

    def describe(self) -> dict[str, object]:
        sparse, dense = self.sparse.describe(), self.dense.describe()
        return {
            **dense,
            "retriever": f"rrf({sparse['retriever']}, {dense['retriever']})",
            "fusion": {"rrf_k": RRF_K, "depth": FUSION_DEPTH},
            "bm25_index": sparse.get("corpus_index"),
        }

    def build(self) -> None:
        self.sparse.build()
        self.dense.build()

    def contexts(self) -> list[RetrievedContext]:
        return self.dense.contexts()

    def search(self, question: str, n: int) -> list[ScoredContext]:
        depth = max(n, FUSION_DEPTH)
        return reciprocal_rank_fusion([self.sparse.search(question, depth), self.dense.search(question, depth)], n)


def make_retriever(
    kind: str,
    corpus: CorpusChunks,
    *,
    embeddings: EmbeddingsModel | None = None,
    index_dir: Path | None = None,
    dense_index_dir: Path | None = None,
) -> Retriever:
    """The retriever `kind` names (`RETRIEVERS`) over `corpus`; word indexes are saved in `index_dir`,
    dense ones (embeddings and FAISS index) in `dense_index_dir`."""
    spec = retriever_spec(kind)
    if spec.needs_embeddings and embeddings is None:
        raise ConfigError(f"The {kind} retriever needs an embeddings model (`embeddings`).", settings=("embeddings",))
    retriever = spec.make(corpus, RetrieverOptions(embeddings, index_dir, dense_index_dir))
    if not isinstance(retriever, Retriever):
        raise ConfigError(
            f"The retriever {kind} made a {type(retriever).__name__}, which is no `Retriever` (corpus, name, "
            "describe, build, contexts, search)."
        )
    return retriever
