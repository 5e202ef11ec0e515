"""qagen: a vetted synthetic question/answer test set for RAG, from your own corpus.

The public API is imported lazily, so the `qagen` command's help starts without loading LangChain
or `datasets`.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "build": "qagen.generation.pipeline",
    "BuildResult": "qagen.generation.pipeline",
    "BuildConfig": "qagen.config",
    "CorpusSettings": "qagen.config",
    "ChunkSettings": "qagen.config",
    "ModelSettings": "qagen.llm.client",
    "QagenError": "qagen.errors",
}

__all__ = [
    "BuildConfig",
    "BuildResult",
    "ChunkSettings",
    "CorpusSettings",
    "ModelSettings",
    "QagenError",
    "__version__",
    "build",
]

if TYPE_CHECKING:
    from qagen.config import BuildConfig, ChunkSettings, CorpusSettings
    from qagen.errors import QagenError
    from qagen.generation.pipeline import BuildResult, build
    from qagen.llm.client import ModelSettings


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'qagen' has no attribute {name!r}")
    return getattr(import_module(module), name)
