"""qagen: a vetted synthetic question/answer test set for RAG, from your own corpus.

The public API: `build` a test set, `push` it to the Hugging Face Hub, `evaluate` a RAG system on it
(`rag_baseline` is the bundled one) and `report` on evaluations; their settings and what they return.
Everything is imported lazily, so `import qagen` and the `qagen` command's help start without
loading LangChain or `datasets`.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from qagen._version import __version__

# Public name -> (module, name in that module).
_EXPORTS: dict[str, tuple[str, str]] = {
    "build": ("qagen.generation.pipeline", "build"),
    "BuildResult": ("qagen.generation.pipeline", "BuildResult"),
    "BuildSummary": ("qagen.records", "BuildSummary"),
    "BuildConfig": ("qagen.config", "BuildConfig"),
    "CorpusSettings": ("qagen.corpus.settings", "CorpusSettings"),
    "ChunkSettings": ("qagen.corpus.settings", "ChunkSettings"),
    "ModelSettings": ("qagen.llm.client", "ModelSettings"),
    "BatchOptions": ("qagen.runs.batch.rounds", "BatchOptions"),
    "push": ("qagen.publish.push", "push_run"),
    "PushResult": ("qagen.publish.push", "PushResult"),
    "rag_baseline": ("qagen.evaluate.systems.bundled", "rag_baseline"),
    "EvalConfig": ("qagen.evaluate.config", "EvalConfig"),
    "EvalSummary": ("qagen.evaluate.records", "EvalSummary"),
    "report": ("qagen.evaluate.report", "report"),
    "Report": ("qagen.evaluate.report", "Report"),
    "QagenError": ("qagen.errors", "QagenError"),
}

__all__ = [
    "BatchOptions",
    "BuildConfig",
    "BuildResult",
    "BuildSummary",
    "ChunkSettings",
    "CorpusSettings",
    "EvalConfig",
    "EvalSummary",
    "ModelSettings",
    "PushResult",
    "QagenError",
    "Report",
    "__version__",
    "build",
    "evaluate",
    "push",
    "rag_baseline",
    "report",
]

if TYPE_CHECKING:
    from qagen.config import BuildConfig
    from qagen.corpus.settings import ChunkSettings, CorpusSettings
    from qagen.errors import QagenError
    from qagen.evaluate.api import evaluate
    from qagen.evaluate.config import EvalConfig
    from qagen.evaluate.records import EvalSummary
    from qagen.evaluate.report import Report, report
    from qagen.evaluate.systems.bundled import rag_baseline
    from qagen.generation.pipeline import BuildResult, build
    from qagen.llm.client import ModelSettings
    from qagen.publish.push import PushResult
    from qagen.publish.push import push_run as push
    from qagen.records import BuildSummary
    from qagen.runs.batch.rounds import BatchOptions


def __getattr__(name: str) -> Any:
    if name == "evaluate":
        # The function shares its name with the package `qagen.evaluate`, which Python binds here as
        # soon as any of its modules is imported: that package is callable as the function.
        return import_module("qagen.evaluate")
    module, attribute = _EXPORTS.get(name, (None, None))
    if module is None or attribute is None:
        raise AttributeError(f"module 'qagen' has no attribute {name!r}")
    return getattr(import_module(module), attribute)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
