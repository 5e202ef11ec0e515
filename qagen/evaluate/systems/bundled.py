"""The bundled baseline as a system for `evaluate`, with any of its retrievers (`rag_baseline`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from qagen.errors import ConfigError
from qagen.evaluate.systems.protocol import RagSystem, SystemFactory
from qagen.llm.client import LLMClient, ModelSettings

if TYPE_CHECKING:
    from qagen.evaluate.systems.rerank.base import Reranker

__all__ = ["rag_baseline"]


def rag_baseline(
    corpus: Path | str | None,
    *,
    retriever: str = "bm25",
    embeddings: str | None = None,
    embeddings_server: ModelSettings | None = None,
    chunk_size: int = 2000,
    k: int = 7,
    index_dir: Path | None = None,
    dense_index_dir: Path | None = None,
    rerank: str | Reranker | None = None,
    rerank_top: int | None = None,
    rerank_url: str | None = None,
    progress: bool = True,
    **chunking: Any,
) -> SystemFactory:
    """The bundled baseline with the `retriever` named: `bm25`, `dense` (the chunks embedded by
    `embeddings`, default `local`, searched with FAISS), `hybrid` (both, fused by reciprocal rank), or
    another of `RETRIEVERS` (one an installed package brings), then the notebook's prompt to the
    reader (give `reader=` to `evaluate`).

    `embeddings` is `local` (all-MiniLM-L6-v2, in the dense extra), a sentence-transformers model
    folder, or a LangChain spec; `openai:...` is asked on `embeddings_server` (default: the
    reader's server and key). BM25 indexes are saved in `index_dir`, embeddings and FAISS indexes in
    `dense_index_dir`, and reused while the corpus files are unchanged. `chunking` goes to
    `CorpusChunks` (chunk_overlap, length_unit, hf_dataset...).

    `rerank` reorders the retriever's top `rerank_top` chunks (default 30, never fewer than `k`)
    before the reader gets the first `k`: `cross-encoder:PATH` (a local sentence-transformers
    model), `endpoint:MODEL` (`POST /rerank` at `rerank_url`, else the reader's server), `reader`
    (the reader model, listwise), `none`, or a `Reranker`."""
    from qagen.corpus.embeddings import LOCAL, EmbeddingsModel
    from qagen.evaluate.systems.baseline import Baseline
    from qagen.evaluate.systems.corpus_chunks import CorpusChunks
    from qagen.evaluate.systems.rerank.specs import make_reranker, parse_rerank
    from qagen.evaluate.systems.retriever_specs import retriever_spec
    from qagen.evaluate.systems.retrievers import make_retriever

    ranking = retriever_spec(retriever)  # a misspelt retriever or reranker fails now, before any work
    if isinstance(rerank, str):
        parse_rerank(rerank)
    if corpus is not None:
        corpus = Path(corpus).expanduser()

    def build(reader: LLMClient | None) -> RagSystem:
        if reader is None:
            raise ConfigError("The bundled baseline needs a reader model (`reader`).", settings=("reader",))
        chunks = CorpusChunks(corpus, chunk_size=chunk_size, progress=progress, **chunking)
        model = None
        if ranking.needs_embeddings:
            model = EmbeddingsModel(embeddings or LOCAL, server=embeddings_server or reader.settings)
        ranker = make_retriever(
            retriever, chunks, embeddings=model, index_dir=index_dir, dense_index_dir=dense_index_dir
        )
        reranker = make_reranker(rerank, reader.settings, rerank_url=rerank_url)
        return Baseline(ranker, reader=reader, k=k, reranker=reranker, rerank_top=rerank_top)

    return SystemFactory(build)
