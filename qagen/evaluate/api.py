"""`evaluate`: score a RAG system over a test set, from Python or from `qagen evaluate`."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from qagen import __version__
from qagen.concurrency import run_coroutine
from qagen.errors import ConfigError
from qagen.evaluate.runner import Evaluation
from qagen.evaluate.scoring import DETERMINISTIC_GROUPS
from qagen.evaluate.testset import TestSet, load_testset
from qagen.llm import LLMClient, ModelSettings
from qagen.store import write_json_atomic

DEFAULT_METRICS = ("correctness", "retrieval", "text")
METRIC_GROUPS = {
    "ragas": ("faithfulness", "answer_relevancy", "context_precision", "context_recall", "context_relevance"),
    "graders": ("correct", "relevant", "grounded", "retrieval_relevant"),
}

SystemFactory = Callable[[LLMClient | None], Any]
"""Builds the RAG system inside the evaluation's event loop, given the reader client (if any)."""


def expand_metrics(names: list[str] | tuple[str, ...]) -> list[str]:
    """Metric names with groups expanded (`ragas`, `graders`, `all`), in a stable order, validated."""
    from qagen.evaluate.judges import LLM_METRICS

    expanded: list[str] = []
    for name in names:
        if name == "all":
            parts: tuple[str, ...] = (
                "correctness",
                *METRIC_GROUPS["ragas"],
                *METRIC_GROUPS["graders"],
                *DETERMINISTIC_GROUPS,
            )
        else:
            parts = METRIC_GROUPS.get(name, (name,))
        for part in parts:
            if part not in LLM_METRICS and part not in DETERMINISTIC_GROUPS:
                known = sorted([*LLM_METRICS, *DETERMINISTIC_GROUPS, *METRIC_GROUPS, "all"])
                raise ConfigError(f"Unknown metric '{part}'; choose from {', '.join(known)}.")
            if part not in expanded:
                expanded.append(part)
    return expanded


def evaluate(
    testset: str | TestSet,
    system: Any,
    out: Path | str,
    *,
    metrics: list[str] | tuple[str, ...] = DEFAULT_METRICS,
    judge: ModelSettings | str | None = "openai:gpt-4o-mini",
    reader: ModelSettings | str | None = None,
    k: int = 7,
    concurrency: int = 16,
    embeddings: str | None = None,
    progress: bool = True,
    split: str = "train",
    question_column: str = "question",
    answer_column: str | None = None,
    token: str | None = None,
) -> dict[str, Any]:
    """Run `system` over the test set's questions, judge and score the answers; return the summary.

    `system` is a RAG system (an object with `async answer(question) -> RagOutput`), any callable
    `question -> str | {answer, contexts, sources}` (sync or async), a LangChain Runnable, or a
    factory `reader_client -> system` (used for the bundled baseline, whose reader model is built
    in the evaluation's event loop from `reader`). Results go to `out/results.jsonl` and
    `out/summary.json`; re-running with the same `out` resumes.
    """
    from qagen.evaluate.systems import CallableSystem, close_system

    out = Path(out)
    chosen = expand_metrics(list(metrics))
    items = (
        testset
        if isinstance(testset, TestSet)
        else load_testset(
            testset, split=split, question_column=question_column, answer_column=answer_column, token=token
        )
    )
    judge_settings = ModelSettings(spec=judge) if isinstance(judge, str) else judge
    reader_settings = ModelSettings(spec=reader) if isinstance(reader, str) else reader
    needs_judge = any(m not in DETERMINISTIC_GROUPS for m in chosen)
    if needs_judge and judge_settings is None:
        raise ConfigError("LLM metrics need a judge model (--judge-model).")
    summary: dict[str, Any] = {}

    async def main() -> None:
        judge_client = (
            LLMClient.connect(judge_settings, concurrency=concurrency) if needs_judge and judge_settings else None
        )
        reader_client = LLMClient.connect(reader_settings, concurrency=concurrency) if reader_settings else None
        target = system(reader_client) if getattr(system, "qagen_factory", False) else system
        if not hasattr(target, "answer"):
            target = CallableSystem(target)
        try:
            evaluation = Evaluation(out, items, target, chosen, k=k)
            _record_settings(out, items, target.name, chosen, k, judge_settings, reader_settings)
            embed = _embedder(embeddings) if embeddings else None
            if "answer_relevancy" in chosen and embed is None:
                raise ConfigError("answer_relevancy compares embeddings: give an embeddings model with --embeddings.")
            await evaluation.run(judge_client, concurrency=concurrency, embed=embed, progress=progress)
            summary.update(evaluation.write_results(judge_settings.spec if judge_settings and needs_judge else None))
        finally:
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


def _record_settings(
    out: Path,
    testset: TestSet,
    system: str,
    metrics: list[str],
    k: int,
    judge: ModelSettings | None,
    reader: ModelSettings | None,
) -> None:
    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(
        out / "eval.json",
        {
            "qagen_version": __version__,
            "testset": testset.origin,
            "system": system,
            "metrics": metrics,
            "k": k,
            "judge_model": judge.spec if judge else None,
            "reader_model": reader.spec if reader else None,
        },
    )


def _embedder(spec: str) -> Callable[[list[str]], Awaitable[list[list[float]]]]:
    try:
        from langchain.embeddings import init_embeddings
    except ImportError as exc:  # pragma: no cover - langchain is a dependency
        raise ConfigError("Embeddings need the `langchain` package.") from exc
    try:
        model = init_embeddings(spec)
    except (ValueError, ImportError) as exc:
        raise ConfigError(f"Cannot use the embeddings model '{spec}': {exc}") from exc
    return model.aembed_documents


def load_summary(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    return data
