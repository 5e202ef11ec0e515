"""`evaluate`: score a RAG system over a test set, from Python or from `qagen evaluate`."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.runnables import Runnable

from qagen import __version__
from qagen.errors import ConfigError
from qagen.evaluate.judges.registry import LLM_METRICS, Embed
from qagen.evaluate.metrics.scoring import DETERMINISTIC_GROUPS
from qagen.evaluate.runner import Evaluation, system_identity
from qagen.evaluate.testset import TestSet, load_testset
from qagen.llm.client import LLMClient, ModelSettings
from qagen.runs.concurrency import run_coroutine
from qagen.runs.store import write_json_atomic

DEFAULT_METRICS = ("correctness", "retrieval", "text")
METRIC_GROUPS = {
    "ragas": ("faithfulness", "answer_relevancy", "context_precision", "context_recall", "context_relevance"),
    "graders": ("correct", "relevant", "grounded", "retrieval_relevant"),
}
METRIC_GROUPS["all"] = ("correctness", *METRIC_GROUPS["ragas"], *METRIC_GROUPS["graders"], *DETERMINISTIC_GROUPS)

SystemFactory = Callable[[LLMClient | None], Any]
"""Builds the RAG system inside the evaluation's event loop, given the reader client (if any)."""


def select_metrics(names: list[str] | tuple[str, ...], *, embeddings: bool) -> tuple[list[str], list[str]]:
    """The metrics to run, groups (`ragas`, `graders`, `all`) expanded in a stable order, and notes.

    answer_relevancy compares embeddings. Named on its own without an embeddings model it is an
    error; as part of a group it is left out, with a note saying so, so that `--metrics ragas`
    runs the other four RAGAS metrics instead of refusing all five.
    """
    chosen: list[str] = []
    notes: list[str] = []
    for raw in names:
        name = raw.strip()
        if not name:
            continue
        if name == "answer_relevancy" and not embeddings:
            raise ConfigError("answer_relevancy compares embeddings: give an embeddings model with --embeddings.")
        for part in METRIC_GROUPS.get(name, (name,)):
            if part not in LLM_METRICS and part not in DETERMINISTIC_GROUPS:
                known = sorted([*LLM_METRICS, *DETERMINISTIC_GROUPS, *METRIC_GROUPS])
                raise ConfigError(f"Unknown metric '{part}'; choose from {', '.join(known)}.")
            if part == "answer_relevancy" and not embeddings:
                note = f"answer_relevancy left out of '{name}': it needs an embeddings model (--embeddings)."
                if note not in notes:
                    notes.append(note)
                continue
            if part not in chosen:
                chosen.append(part)
    if not chosen:
        raise ConfigError("No metric to compute; choose some with --metrics.")
    return chosen, notes


def evaluate(
    testset: str | Path | TestSet,
    system: Any,
    out: Path | str,
    *,
    metrics: list[str] | tuple[str, ...] = DEFAULT_METRICS,
    judge: ModelSettings | str | None = "openai:gpt-4o-mini",
    reader: ModelSettings | str | None = None,
    k: int = 7,
    concurrency: int = 16,
    embeddings: str | Embeddings | Embed | None = None,
    progress: bool = True,
    split: str = "train",
    question_column: str = "question",
    answer_column: str | None = None,
    token: str | None = None,
) -> dict[str, Any]:
    """Run `system` over the test set's questions, judge and score the answers; return the summary.

    `testset` is a `TestSet`, or what `load_testset` reads: a qagen run directory, a saved
    dataset, a Hub dataset id, or a .jsonl/.csv file with question and reference-answer columns.
    `system` is a RAG system (an object with `name` and `async answer(question) -> RagOutput`), any
    callable `question -> str | {answer, contexts, sources}` (sync or async), a LangChain Runnable,
    or a factory `reader_client -> system` marked with `factory` (e.g. `bm25_baseline(...)`, whose
    reader model `reader` is built inside the evaluation's event loop).
    `embeddings` (for answer_relevancy) is a LangChain spec such as `openai:text-embedding-3-small`
    (served from the judge's `base_url` when it has one), a LangChain `Embeddings`, or an async
    function `texts -> vectors`.

    Results go to `out/results.jsonl` and `out/summary.json`; re-running with the same `out`
    resumes, paying for no call twice.
    """
    from qagen.evaluate.systems.callable import CallableSystem
    from qagen.evaluate.systems.protocol import close_system

    out = Path(out)
    if k < 1:
        raise ConfigError(f"--k must be at least 1, got {k}.")
    chosen, notes = select_metrics(list(metrics), embeddings=embeddings is not None)
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    items = (
        testset
        if isinstance(testset, TestSet)
        else load_testset(
            str(testset), split=split, question_column=question_column, answer_column=answer_column, token=token
        )
    )
    judge_settings = ModelSettings(spec=judge) if isinstance(judge, str) else judge
    reader_settings = ModelSettings(spec=reader) if isinstance(reader, str) else reader
    needs_judge = any(m in LLM_METRICS for m in chosen)
    if needs_judge and judge_settings is None:
        raise ConfigError("LLM metrics need a judge model (--judge-model).")
    embed = _embedder(embeddings, judge_settings) if embeddings is not None and "answer_relevancy" in chosen else None
    summary: dict[str, Any] = {}

    async def main() -> None:
        judge_client = (
            LLMClient.connect(judge_settings, concurrency=concurrency) if needs_judge and judge_settings else None
        )
        reader_client = LLMClient.connect(reader_settings, concurrency=concurrency) if reader_settings else None
        target: Any = None
        try:
            target = system(reader_client) if getattr(system, "qagen_factory", False) else system
            if isinstance(target, Runnable) or not hasattr(target, "answer"):
                target = CallableSystem(target)
            evaluation = Evaluation(out, items, target, chosen, k=k)
            describe = getattr(target, "describe", None)
            about = {
                "system_settings": describe() if callable(describe) else {},
                "reader_model": reader_settings.spec if reader_settings else None,
                "metrics_requested": chosen,
                "notes": notes,
                "qagen_version": __version__,
            }
            _record_settings(out, items, system_identity(target), about, k, judge_settings)
            await evaluation.run(judge_client, concurrency=concurrency, embed=embed, progress=progress)
            summary.update(evaluation.write_results(judge_client.settings.spec if judge_client else None, **about))
        finally:
            if target is not None:
                await close_system(target)
            for client in (judge_client, reader_client):
                if client is not None:
                    await client.aclose()

    run_coroutine(main())
    return summary


def factory(build: Callable[[LLMClient | None], Any]) -> Callable[[LLMClient | None], Any]:
    """Mark a function as a system factory for `evaluate` (it receives the reader client)."""
    build.qagen_factory = True  # type: ignore[attr-defined]
    return build


def bm25_baseline(
    corpus: Path | str, *, chunk_size: int = 2000, k: int = 7, progress: bool = True, **options: Any
) -> SystemFactory:
    """The bundled baseline as a system for `evaluate` (give `reader=` there): BM25 over `corpus`
    chunked like `qagen build`, top `k` chunks, answered by the reader with the notebook's prompt.
    `options` go to `BM25Baseline` (chunk_overlap, length_unit, index_dir...)."""

    def build(reader: LLMClient | None) -> Any:
        from qagen.evaluate.systems.baseline import BM25Baseline

        if reader is None:
            raise ConfigError("The BM25 baseline needs a reader model (reader=..., --model).")
        return BM25Baseline(corpus, reader=reader, chunk_size=chunk_size, k=k, progress=progress, **options)

    return factory(build)


def _record_settings(
    out: Path, testset: TestSet, system: str, about: dict[str, Any], k: int, judge: ModelSettings | None
) -> None:
    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(
        out / "eval.json",
        {"testset": testset.origin, "system": system, "k": k, "judge_model": judge.spec if judge else None, **about},
    )


def _embedder(embeddings: str | Embeddings | Embed, judge: ModelSettings | None) -> Embed:
    """An async `texts -> vectors` from a LangChain spec, a LangChain `Embeddings`, or such a function."""
    if isinstance(embeddings, Embeddings):
        return embeddings.aembed_documents
    if not isinstance(embeddings, str):
        return embeddings
    from langchain.embeddings import init_embeddings

    options: dict[str, Any] = {}
    base_url = (judge.base_url if judge else None) or os.environ.get("OPENAI_BASE_URL")
    if embeddings.startswith("openai:") and base_url:
        # An OpenAI-compatible server (vLLM, Ollama...): the judge's server, a placeholder key if
        # it needs none, and no client-side tiktoken length check (it downloads tables, and the
        # server's model has its own tokenizer).
        options = {"base_url": base_url, "check_embedding_ctx_length": False}
        if not os.environ.get("OPENAI_API_KEY"):
            options["api_key"] = "EMPTY"
    try:
        model = init_embeddings(embeddings, **options)
    except (ValueError, ImportError) as exc:
        raise ConfigError(f"Cannot use the embeddings model '{embeddings}': {exc}") from exc
    return model.aembed_documents
