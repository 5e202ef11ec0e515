"""The bundled baseline's retrievers, each declared once as a `RetrieverSpec` in `RETRIEVERS`: qagen's
BM25, dense and hybrid, those registered in Python and those installed packages bring (entry points
`qagen.retrievers`). Light to import (the CLI reads the names): a spec's `make` imports the index code
only when a retriever is made."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from qagen.errors import ConfigError
from qagen.registry import Registry

if TYPE_CHECKING:
    from qagen.corpus.embeddings import EmbeddingsModel
    from qagen.evaluate.systems.corpus_chunks import CorpusChunks
    from qagen.evaluate.systems.retrievers import Retriever


class RetrieverOptions(NamedTuple):
    """What a retriever may be made with besides the corpus's chunks: the evaluation's settings."""

    embeddings: EmbeddingsModel | None = None
    """The embeddings model (`embeddings`), given to a retriever that needs one (`RetrieverSpec.needs_embeddings`)."""
    index_dir: Path | None = None
    """Where a word index is saved and reused (the qagen cache, or `cache_dir`); None: built for the run only."""
    dense_index_dir: Path | None = None
    """Where embeddings and vector indexes are saved and reused; None: built for the run only."""


MakeRetriever = Callable[["CorpusChunks", RetrieverOptions], "Retriever"]
"""A retriever over a corpus's chunks (`qagen.evaluate.systems.retrievers.Retriever`)."""


@dataclass(frozen=True)
class RetrieverSpec:
    """One retriever of the bundled baseline, as the evaluator and the command line read it."""

    name: str
    """Its name in `retriever` (the CLI's baseline list) and in a grid directory's name."""
    help: str
    """How it ranks the chunks, in a few words (help and error messages list it)."""
    make: MakeRetriever
    """The retriever over the corpus's chunks, with the evaluation's options."""
    needs_embeddings: bool = False
    """It ranks by embeddings: it is given `RetrieverOptions.embeddings` (default: the bundled local model)."""
    check: Callable[[], None] | None = None
    """Raises ConfigError before any work when what it needs is not installed (the dense extra)."""


def _bm25(corpus: CorpusChunks, options: RetrieverOptions) -> Retriever:
    from qagen.evaluate.systems.retrievers import BM25Retriever

    return BM25Retriever(corpus, index_dir=options.index_dir)


def _dense(corpus: CorpusChunks, options: RetrieverOptions) -> Retriever:
    from qagen.evaluate.systems.dense_index import DenseRetriever

    if options.embeddings is None:
        raise ConfigError("The dense retriever needs an embeddings model (`embeddings`).", settings=("embeddings",))
    return DenseRetriever(corpus, options.embeddings, index_dir=options.dense_index_dir)


def _hybrid(corpus: CorpusChunks, options: RetrieverOptions) -> Retriever:
    from qagen.evaluate.systems.retrievers import HybridRetriever

    return HybridRetriever(_bm25(corpus, options), _dense(corpus, options))


def _dense_extra() -> None:
    from qagen.corpus.embeddings import require_dense_extra

    require_dense_extra("faiss")


RETRIEVERS: Registry[RetrieverSpec] = Registry(
    "retrievers",
    RetrieverSpec,
    noun="retriever",
    specs=(
        RetrieverSpec("bm25", help="words, ranked by BM25", make=_bm25),
        RetrieverSpec(
            "dense",
            help="embeddings searched with FAISS (the dense extra)",
            make=_dense,
            needs_embeddings=True,
            check=_dense_extra,
        ),
        RetrieverSpec(
            "hybrid",
            help="BM25 and dense rankings fused by reciprocal rank",
            make=_hybrid,
            needs_embeddings=True,
            check=_dense_extra,
        ),
    ),
)
"""Every retriever of the bundled baseline: qagen's, those registered in Python
(`RETRIEVERS.register`), and those installed packages bring (entry points `qagen.retrievers`)."""


def retriever_spec(kind: str) -> RetrieverSpec:
    """The retriever `kind` names, or a ConfigError naming the `retriever` setting and every retriever."""
    if kind not in RETRIEVERS:
        known = ", ".join(RETRIEVERS.names())
        raise ConfigError(f"Unknown `retriever` '{kind}'; choose from {known}.", settings=("retriever",))
    return RETRIEVERS.get(kind)
