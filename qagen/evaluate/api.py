"""`evaluate`: score a RAG system over a test set, from Python or from `qagen evaluate`."""

from __future__ import annotations

import json
import sys
import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.runnables import Runnable

from qagen._version import __version__
from qagen.errors import ConfigError, NothingUsableError
from qagen.evaluate.config import EvalConfig, select_metrics
from qagen.evaluate.input_checks import check_inputs
from qagen.evaluate.judges.registry import LLM_METRICS, Embed
from qagen.evaluate.out_dir import EVAL_FILE, require_evaluation_dir
from qagen.evaluate.records import EvalSummary
from qagen.evaluate.runner import Evaluation, system_identity
from qagen.evaluate.stamp import EvalStamp
from qagen.evaluate.systems.bundled import rag_baseline as rag_baseline  # the baseline with any retriever
from qagen.evaluate.systems.callable import CallableSystem
from qagen.evaluate.systems.protocol import ReaderSystem, SystemFactory
from qagen.evaluate.testset import TestSet
from qagen.failures import is_call_failure_reason
from qagen.llm.client import ModelSettings
from qagen.llm.clients import Clients, ModelLike
from qagen.llm.concurrency import run_coroutine
from qagen.llm.task import Role
from qagen.question_types import scoring_of
from qagen.runs.batch.executor import batch_executor
from qagen.runs.batch.journal import Journal
from qagen.runs.batch.rounds import BatchOptions
from qagen.runs.executor import Executor
from qagen.runs.store import write_json_atomic


def _print_note(note: str) -> None:
    print(f"note: {note}", file=sys.stderr)


def _print_warning(warning: str) -> None:
    print(f"warning: {warning}", file=sys.stderr)


def _scored_by_type(items: TestSet, chosen: list[str], judged: bool) -> list[str]:
    """Add the metric that scores a type of the test set's questions (`abstention`, for unanswerable
    ones) to `chosen` when a judge can score it; the notes that say so, or why it is not."""
    notes: list[str] = []
    counts = Counter(scoring_of(item.question_type) for item in items.items)
    for spec in LLM_METRICS:
        wanted = counts.get(spec.scoring, 0) if spec.scoring is not None else 0
        if not wanted or spec.name in chosen:
            continue
        if judged:
            chosen.append(spec.name)
            notes.append(f"{spec.name} added: {wanted} questions of the test set are scored by it.")
        else:
            notes.append(
                f"{wanted} questions are scored by {spec.name}, an LLM judge: give a judge model to score them."
            )
    return notes


def evaluate(
    config: EvalConfig | str | Path | TestSet,
    system: Any,
    out: Path | str,
    *,
    progress: bool = True,
    token: str | None = None,
    on_note: Callable[[str], None] = _print_note,
    on_warning: Callable[[str], None] = _print_warning,
    batch: BatchOptions | None = None,
    **deprecated_settings: Any,
) -> EvalSummary:
    """Run `system` over the test set's questions, judge and score the answers; return the summary.

    `config` holds the settings (`EvalConfig`: the test set, the metrics, the judge and reader, k,
    the call limits), as `build` takes a `BuildConfig`; `qagen evaluate` makes the same from its
    options. `system` is a RAG system (an object with `name` and `async answer(question) -> RagOutput`),
    any callable `question -> str | {answer, contexts, sources}` (sync or async), a LangChain Runnable,
    or a `SystemFactory` that builds the system with the reader's client (e.g. `rag_baseline(...)`).
    Reader and judge calls share one bound, `concurrency`, and one `rpm` limit. `token` reads a
    private Hub test set.

    With `batch`, the judges' calls (and the bundled baseline's reader calls) go in Batch API
    rounds: half the price, results within 24 hours (`qagen.runs.batch`); a system of your own is
    asked as online, `concurrency` questions at a time. When not waiting for the batches
    (`BatchOptions.wait=False`) this raises `BatchesRunningError` once they are submitted: call it
    again later to go on.

    A sync function runs in a thread of its own; on Ctrl-C it gets `interrupt_grace` seconds to
    return, then its question is recorded as failed (`interrupted: ...`) and KeyboardInterrupt ends
    the run. A function or Runnable has `system_calls.timeout` seconds per call and is called again
    on a timeout up to `system_calls.max_retries` times.

    Notes about the metrics (one left out of a group) go to `on_note` (default: printed to stderr)
    and into the summary; warnings about the inputs (answers-file rows that match no question, a
    baseline corpus without the test set's source documents) go to `on_warning` before any
    question is asked, and into the summary's `warnings`. Results go to `out/results.jsonl` and
    `out/summary.json`; re-running with the same `out` resumes, paying for no call twice, and a
    re-run with nothing to do (nothing changed since a run that left no call to make) returns the
    stored summary without scoring again (`qagen.evaluate.stamp`).

    The form of earlier versions, `evaluate(testset, system, out, metrics=..., judge=..., ...)`, still
    runs with a DeprecationWarning until the next release: its keywords are the fields of `EvalConfig`.
    """
    from qagen.evaluate.systems.protocol import close_system

    config = _settings(config, deprecated_settings)
    out = Path(out).expanduser()
    require_evaluation_dir(out)
    limits = config.call_limits()
    chosen, notes = select_metrics(config.metrics, embeddings=config.embeddings is not None)
    for note in notes:
        on_note(note)
    items = config.read_testset(token=token)
    judge, reader = config.judge, config.reader
    for note in _scored_by_type(items, chosen, judge is not None):
        notes.append(note)
        on_note(note)
    needs_judge = any(m in LLM_METRICS for m in chosen)
    if needs_judge and judge is None:
        raise ConfigError("LLM metrics need a judge model (`judge`).", settings=("judge",))
    judge_settings = judge if isinstance(judge, ModelSettings) else None
    embeddings = config.embeddings
    embed = _embedder(embeddings, judge_settings) if embeddings is not None and "answer_relevancy" in chosen else None
    models: dict[Role, ModelLike] = {}
    if needs_judge and judge is not None:
        models["judge"] = judge
    if reader is not None:
        models["reader"] = reader
    summaries: list[EvalSummary] = []  # the one summary `main` makes or finds

    async def main() -> None:
        clients = Clients.connect(models, limits)
        target: Any = None
        try:
            reader_client = clients.get("reader")
            target = system.build(reader_client) if isinstance(system, SystemFactory) else system
            if isinstance(target, Runnable) or not hasattr(target, "answer"):
                target = CallableSystem(target, interrupt_grace=config.interrupt_grace, policy=config.system_calls)
            checks = await check_inputs(target, items.items)
            for warning in checks.warnings:
                on_warning(warning)
            judge_client = clients.get("judge")
            judge_model = judge_client.settings.spec if judge_client is not None else None
            evaluation = Evaluation(out, items, target, chosen, k=config.k, judge_model=judge_model, embed=embed)
            describe = getattr(target, "describe", None)
            about = {
                "system_settings": describe() if callable(describe) else {},
                "reader_model": reader_client.settings.spec if reader_client else None,
                "metrics_requested": chosen,
                "notes": notes,
                "warnings": checks.warnings,
                **checks.facts,
                "qagen_version": __version__,
            }
            _record_settings(out, items, system_identity(target), about, config.k, judge_model)
            stamp = EvalStamp.of(evaluation, about)
            stored = stamp.settled_summary()
            if stored is not None:
                summaries.append(stored)  # nothing changed since a run that left nothing to do
                if JUDGE_NO_TOKEN_PROBABILITIES in stored.about.get("notes", ()):
                    on_note(JUDGE_NO_TOKEN_PROBABILITIES)  # said as the run that made it said it
                return
            stamp.clear()
            executor = (
                Executor(clients, workers=limits.concurrency, answers=Journal(out))
                if batch is None
                else batch_executor(_with_system_reader(clients, target), out, batch)
            )
            await evaluation.run(executor, progress=progress, system_slots=limits.concurrency)
            if any(LLM_METRICS.get(m).reads_probabilities for m in chosen if m in LLM_METRICS) and (
                _judge_sent_no_probabilities(clients)
            ):
                notes.append(JUDGE_NO_TOKEN_PROBABILITIES)
                on_note(JUDGE_NO_TOKEN_PROBABILITIES)
            summaries.append(evaluation.write_results(**about))
            executor.clients.check_failure_rates()
            if evaluation.settled:
                stamp.write()
        finally:
            if target is not None:
                await close_system(target)
            await clients.aclose()

    run_coroutine(main())
    summary = summaries[0]
    _raise_if_nothing_succeeded(summary, out)
    return summary


JUDGE_NO_TOKEN_PROBABILITIES = (
    "The judge's server sent no token probabilities, so every verdict is read as written (answer_correct "
    "1 or 0, correctness its written score); a server that sends them when asked (OpenAI's chat models, vLLM, "
    "llama.cpp's server) lets qagen read each verdict as a probability, which ranks answers better."
)
"""Said once per evaluation when the judge asked for token probabilities and its server sent none."""


def _judge_sent_no_probabilities(clients: Clients) -> bool:
    judge = clients.get("judge")
    return judge is not None and bool(judge.settings.top_logprobs) and judge.stats.no_token_probabilities


def _settings(config: EvalConfig | str | Path | TestSet, deprecated_settings: dict[str, Any]) -> EvalConfig:
    """`config`, or the settings of the keyword form of earlier versions (deprecated: gone in the next release)."""
    if isinstance(config, EvalConfig):
        if deprecated_settings:
            raise ConfigError(
                f"evaluate() takes its settings in the EvalConfig: set {', '.join(deprecated_settings)} there "
                "(`EvalConfig(testset=..., metrics=...)`), not as keywords beside it."
            )
        return config
    warnings.warn(
        "evaluate(testset, system, out, metrics=..., ...) is deprecated and goes in the next release: pass the "
        "settings as one EvalConfig, evaluate(EvalConfig(testset=..., metrics=...), system, out).",
        DeprecationWarning,
        stacklevel=3,
    )
    return EvalConfig(testset=config, **deprecated_settings)


def _with_system_reader(clients: Clients, system: Any) -> Clients:
    """The run's clients, with the reader of a baseline made outside `evaluate` (not from `reader`):
    in batch mode its calls go in the batches too."""
    if isinstance(system, ReaderSystem) and clients.get(system.task.role) is not system.reader:
        return clients.with_role(system.task.role, system.reader)
    return clients


def _raise_if_nothing_succeeded(summary: EvalSummary, out: Path) -> None:
    """An evaluation that answered no question, or whose judge could read no verdict, measured
    nothing: one sentence on why (results and summary are written first, to look at)."""
    questions, answered = summary.questions, summary.answered
    if questions and not answered:
        reasons = summary.failed_by_reason
        commonest = max(reasons, key=reasons.__getitem__) if reasons else "unknown"
        whole = summary.failed_examples.get(commonest, commonest)  # the first such question's whole reason
        raise NothingUsableError(
            f"None of the {questions} questions was answered (mostly {whole}); every row is in {out / 'results.jsonl'}."
        )
    for metric, counts in summary.judges.items():
        if counts.judged == 0 and counts.failed > 0:
            failures = counts.failures
            commonest = max(failures, key=failures.__getitem__)
            example = _example_failure(out, metric, commonest)
            if is_call_failure_reason(commonest):
                # No reply came: the server failed, which no reading of replies can mend.
                raise NothingUsableError(
                    f"The {metric} judge's server answered none of the {counts.failed} calls it was sent "
                    f"(mostly {commonest}: {example or 'no message'}); see the server's log, then re-run the "
                    f"same command to ask again. Every row is in {out / 'results.jsonl'}."
                )
            raise NothingUsableError(
                f"The {metric} judge could read none of the {counts.failed} verdicts it was asked for "
                f"(mostly {commonest}; e.g. {example!r}); every reply is in {out / 'results.jsonl'}."
            )


def _example_failure(out: Path, metric: str, reason: str) -> str:
    """What lies behind the first failure of `metric` with `reason`, on one line: the server's message
    for a call that got no reply, else the judge's reply that could not be read."""
    with (out / "results.jsonl").open(encoding="utf-8") as rows:
        for line in rows:
            row = json.loads(line)
            if row.get(f"{metric}_reason") != reason:
                continue
            if is_call_failure_reason(reason):
                errors = (row.get(f"{metric}_detail") or {}).get("call_errors") or [""]
                # Long enough for a server's error body, whose message follows its status.
                return " ".join(str(errors[-1]).split())[:300]
            raw = row.get(f"{metric}_raw")
            text = raw[-1] if isinstance(raw, list) and raw else raw
            return " ".join(str(text or "").split())[:160]
    return ""


def _record_settings(
    out: Path, testset: TestSet, system: str, about: dict[str, Any], k: int, judge_model: str | None
) -> None:
    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(
        out / EVAL_FILE,
        {"testset": testset.origin, "system": system, "k": k, "judge_model": judge_model, **about},
    )


def _embedder(embeddings: str | Embeddings | Embed, judge: ModelSettings | None) -> Embed:
    """An async `texts -> vectors` from a name (`local`, a model folder, a LangChain spec served from
    the judge's server), a LangChain `Embeddings`, or such a function."""
    if isinstance(embeddings, Embeddings):
        return embeddings.aembed_documents
    if not isinstance(embeddings, str):
        return embeddings
    from qagen.corpus.embeddings import EmbeddingsModel

    return EmbeddingsModel(embeddings, server=judge).embeddings().aembed_documents
