"""`qagen evaluate`."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource

from qagen.cli.config_file import config_option, config_origins, say_servers, show_only
from qagen.cli.errors import friendly_errors
from qagen.cli.evaluate_grid import GridPoint, grid_points, index_notes, split_list
from qagen.cli.evaluate_options import EVALUATE_OPTIONS
from qagen.cli.flags import in_cli_terms
from qagen.cli.next_steps import next_steps
from qagen.cli.options import batch_from_options
from qagen.errors import ConfigError
from qagen.evaluate.judges.registry import LLM_METRICS
from qagen.failures import is_call_failure_reason
from qagen.runs.batch.executor import BatchesRunningError

if TYPE_CHECKING:
    from qagen.evaluate.config import EvalConfig
    from qagen.evaluate.records import EvalSummary
    from qagen.evaluate.report import EvalRun
    from qagen.evaluate.systems.rerank.specs import RerankSpec

# The settings the evaluator's notes name (`select_metrics`).
NOTE_SETTINGS = ("embeddings", "metrics")
# The settings the input warnings name (`qagen.evaluate.input_checks`).
WARNING_SETTINGS = ("corpus",)


def _int_list(value: str, setting: str) -> list[int]:
    try:
        numbers = [int(part) for part in value.split(",") if part.strip()]
    except ValueError as exc:
        raise ConfigError(
            f"`{setting}` takes a number or a comma-separated list of numbers, got '{value}'.", settings=(setting,)
        ) from exc
    if not numbers or min(numbers) < 1:
        raise ConfigError(f"`{setting}` must be at least 1, got '{value}'.", settings=(setting,))
    return numbers


SYSTEMS = ("answers", "rag_callable", "endpoint", "baseline")
"""The options that name the system under test: one choice, made once."""


def _system_options(ctx: click.Context, options: dict[str, Any]) -> str:
    """The one option of `SYSTEMS` given, the others set to None. One given on the command line replaces
    what the config file says (an example file's `baseline`, then `--rag my:answer`), as any flag wins
    over the file."""
    given = [name for name in SYSTEMS if options[name]]
    typed = [name for name in given if ctx.get_parameter_source(name) is not ParameterSource.DEFAULT_MAP]
    if typed:
        given = typed
    if len(given) != 1:
        named = [_as_given(ctx, name) for name in given]
        both = (
            f", not both {' and '.join(named)}" if len(named) == 2 else (f", not {', '.join(named)}" if named else "")
        )
        raise ConfigError(
            f"Give the RAG system to evaluate with exactly one of --answers, --rag, --endpoint or --baseline{both}."
        )
    for name in SYSTEMS:
        if name not in given:
            options[name] = None
    return given[0]


def _as_given(ctx: click.Context, param: str) -> str:
    """How the user gave an option: its flag, or its key and where (`evaluate.baseline` in qagen.toml)."""
    flag = EVALUATE_OPTIONS.by_param()[param].flag
    origin = config_origins(ctx).get(flag)
    if origin is None:
        return flag
    key, where = origin
    return f"`{key}` ({where})" if where == "--set" else f"`{key}` in {where}"


# The options `qagen evaluate --help` lists: those set most often. Every other option keeps working and
# is a key of the config file (docs/configuration.md lists them all, with their flags).
EVALUATE_SHOWN = (
    "config", "set", "out", "answers", "rag_callable", "endpoint", "baseline", "corpus", "chunk_size", "k_values",
    "rerank", "reader_model", "judge_model", "base_url", "metrics", "embeddings", "concurrency", "batch", "quiet",
)  # fmt: skip


@click.command(
    epilog="More settings (each model's server, key and output cap, the test set's columns, the reranker's "
    "candidates, retries) are keys of a --config file or --set SECTION.KEY=VALUE, each with a flag of its own: "
    "`qagen init` writes a starter file explaining every one; docs/configuration.md lists them with their flags."
)
@config_option("evaluate")
@EVALUATE_OPTIONS
@click.pass_context
@friendly_errors
def evaluate(ctx: click.Context, /, out: Path, quiet: bool, **options: Any) -> None:
    """Run a RAG system over DATASET's questions and score it.

    DATASET is a qagen run directory, a saved dataset directory, a Hub dataset id, or a .jsonl or
    .csv file with question and reference-answer columns. A DATASET not on disk that looks like a
    path (./, ../, /, ~, more than one /, a file suffix) is reported missing, never looked up on the Hub. Give the system under test with exactly
    one of --answers, --rag, --endpoint or --baseline (bm25, dense, hybrid). With --batch, the judges (and the
    baseline's reader) answer through the Batch API; your own system is asked as usual.
    """
    from qagen.cli.evaluate_settings import eval_config_from_options
    from qagen.evaluate.api import evaluate as run_evaluation
    from qagen.evaluate.config import select_metrics
    from qagen.evaluate.report import comparison_table, load_runs
    from qagen.evaluate.systems.rerank.specs import RerankSpec
    from qagen.redaction import register_secret
    from qagen.review.judge_reliability import record_judge_reliability

    if options["dataset"] is None:
        raise click.UsageError(
            "Missing DATASET: give the test set to evaluate (a run directory, a dataset, a .jsonl or .csv file), "
            "or `evaluate.dataset` in a --config file (which falls back to the file's `build.out`)."
        )
    register_secret(options["token"])
    batch = batch_from_options(options)
    _system_options(ctx, options)
    say_servers(ctx, "evaluate")
    if options["baseline"] and not options["corpus"]:
        raise ConfigError("--baseline needs --corpus PATH.")
    chunk_sizes = _int_list(options["chunk_size"], "chunk_size")
    ks = _int_list(options["k_values"], "k")
    if len(chunk_sizes) > 1 and not options["baseline"]:
        raise ConfigError("A --chunk-size grid only applies to --baseline.")
    grid = grid_points(options["baseline"], options["embeddings"], chunk_sizes, ks)
    reranks = _rerank_grid(options["rerank"])
    if len(grid) * len(reranks) > 1:
        from qagen.evaluate.out_dir import require_grid_dir

        require_grid_dir(out)  # before the test set is read: a grid's points are folders inside `out`
    if any(spec.kind != "none" for spec in reranks) and not options["baseline"]:
        raise ConfigError("--rerank applies to --baseline: it reorders the baseline's retrieved chunks.")
    # Checked before any work (the metrics too); notes come later. Each grid point has its own k.
    config = eval_config_from_options(options, k=ks[0])
    chosen_metrics, _ = select_metrics(config.metrics, embeddings=config.embeddings is not None)
    if "answer_relevancy" in chosen_metrics and len(split_list(options["embeddings"])) > 1:
        _print_note(f"answer_relevancy compares embeddings made by {config.embeddings} in every run of the grid.")
    testset = config.read_testset(token=options["token"])  # read once for every point of the grid
    for skipped in testset.skipped:
        click.echo(f"skipped row {skipped.row} of the test set: {skipped.reason}: {skipped.content[:120]}", err=True)
    # The rerankers are the grid's last axis: each grid point once per reranker, in a directory of its own.
    rerank_names = _rerank_names(reranks)
    points = [(point, rerank) for point in grid for rerank in reranks]
    outputs: list[Path] = []
    running: list[str] = []  # --no-wait: every grid point's batches are submitted before the exit
    shown: set[str] = set()  # each grid point's summary keeps its warnings; the screen shows each once
    for point, rerank in points:
        name = point.name if reranks == [RerankSpec("none")] else f"{point.name}_rerank-{rerank_names[rerank]}"
        target = out if len(points) == 1 else out / name
        system = _system(options, config, point, rerank, progress=not quiet)
        try:
            with index_notes():
                summary = run_evaluation(
                    config.replace(testset=testset, k=point.k),
                    system,
                    target,
                    progress=not quiet,
                    on_note=_print_note,
                    on_warning=lambda warning: _print_warning(warning, shown),
                    batch=batch,
                )
        except BatchesRunningError as waiting:
            running += waiting.batch_ids
            continue
        outputs.append(target)
        record_judge_reliability(target)  # people's labels of its answers, when any: how far to trust the judge
        click.echo(_outcome(target, summary))
    if running:
        raise BatchesRunningError(running)
    runs = load_runs(outputs)
    click.echo("\n" + comparison_table(runs))
    if runs:
        click.echo(_evaluate_next_steps(options, out, runs))


def _evaluate_next_steps(options: dict[str, Any], out: Path, runs: list[EvalRun]) -> str:
    """What a user does with an evaluation next: compare it with another system's, chart a grid, check the judge."""
    dataset = options["dataset"]
    steps: list[tuple[str, str]] = []
    if len(runs) > 1:
        # Only the grid's runs: index folders that older versions kept beside them are no evaluations.
        pattern = "*_k[0-9]*" if options["baseline"] else "*"
        steps.append((f"qagen compare {out}/{pattern} --chart comparison.png", "a bar chart of them, and paired tests"))
    elif options["baseline"]:
        steps.append((f"qagen evaluate {dataset} --rag MODULE:FUNCTION --out eval-mine", "score your own system"))
        steps.append((f"qagen compare {out} eval-mine", "compare the two: paired tests on the same questions"))
    else:
        corpus = "--baseline bm25 --corpus CORPUS --out eval-bm25"
        steps.append((f"qagen evaluate {dataset} {corpus}", "score the bundled baseline"))
        steps.append((f"qagen compare {out} eval-bm25", "compare the two: paired tests on the same questions"))
    judged = [metric for metric in runs[0].summary.get("judges", {}) if metric in LLM_METRICS]
    if any(LLM_METRICS.get(metric).reviewable for metric in judged):
        steps.append((f"qagen review {runs[0].path}", "label a sample of answers: how far to trust the judge"))
    return next_steps(steps)


def _print_note(note: str) -> None:
    click.echo(f"note: {in_cli_terms(note, NOTE_SETTINGS)}", err=True)


def _print_warning(warning: str, shown: set[str]) -> None:
    if warning not in shown:
        shown.add(warning)
        click.echo(f"warning: {in_cli_terms(warning, WARNING_SETTINGS)}", err=True)


def _outcome(target: Path, summary: EvalSummary) -> str:
    """What happened to the questions and the judges, in a few lines (the counts of summary.json)."""
    lines = [f"{target}: {summary.answered}/{summary.questions} questions answered"]
    if summary.failed_by_reason:
        kinds = ", ".join(f"{n} {kind}" for kind, n in summary.failed_by_reason.items())
        lines.append(f"  not answered: {kinds}")
        # Each kind's first reason whole: the detail after its kind is what says what to fix.
        lines += [
            f"    {whole}"
            for kind in summary.failed_by_reason
            if (whole := summary.failed_examples.get(kind, kind)) != kind
        ]
    if summary.retrieved_nothing:
        lines.append(
            f"  {summary.retrieved_nothing} rows retrieved nothing: scored 0 on the retrieval metrics, as ragas does"
        )
    for metric, counts in summary.judges.items():
        parts = [f"{counts.judged} judged"]
        if counts.undefined:
            parts += [f"{n} {reason} (no value, as in ragas)" for reason, n in counts.undefined.items()]
        unanswered = {reason: n for reason, n in counts.failures.items() if is_call_failure_reason(reason)}
        if unanswered:
            reasons = ", ".join(f"{reason} {n}" for reason, n in unanswered.items())
            parts.append(f"{sum(unanswered.values())} calls got no reply from the judge's server ({reasons})")
        unread = {reason: n for reason, n in counts.failures.items() if reason not in unanswered}
        if unread:
            reasons = ", ".join(f"{reason} {n}" for reason, n in unread.items())
            parts.append(f"{sum(unread.values())} replies held no readable verdict ({reasons})")
        if len(parts) > 1:
            lines.append(f"  {metric}: {', '.join(parts)}")
    for role, spend in summary.batch.items():
        cost, online = spend.cost_usd, spend.online_cost_usd
        price = (
            f"${cost:.4f} at batch prices instead of ${online:.4f} online"
            if cost is not None and online is not None
            else "price unknown"
        )
        lines.append(f"  {role} calls in batches: {spend.calls} ({price})")
    return "\n".join(lines)


def _rerank_grid(value: str) -> list[RerankSpec]:
    """The rerankers of a --rerank list, each once, in the order given."""
    from qagen.evaluate.systems.rerank.specs import parse_rerank

    specs = [parse_rerank(part) for part in value.split(",") if part.strip()]
    if not specs:
        raise ConfigError(f"--rerank takes none, a reranker or a comma-separated list of them, got '{value}'.")
    return list(dict.fromkeys(specs))


def _rerank_names(specs: list[RerankSpec]) -> dict[RerankSpec, str]:
    """Each reranker's part of a grid directory's name: its slug, with a short hash of its argument when
    two share one (two model folders of the same name)."""
    slugs = [spec.slug for spec in specs]
    return {
        spec: slug if slugs.count(slug) == 1 else f"{slug}-{hashlib.sha256(spec.argument.encode()).hexdigest()[:6]}"
        for spec, slug in zip(specs, slugs, strict=True)
    }


def _system(
    options: dict[str, Any], config: EvalConfig, point: GridPoint, rerank: RerankSpec, *, progress: bool
) -> Any:
    from qagen.corpus.index_cache import index_cache_dir
    from qagen.evaluate.api import rag_baseline
    from qagen.evaluate.systems.answers_file import AnswersFileSystem
    from qagen.evaluate.systems.callable import CallableSystem
    from qagen.evaluate.systems.endpoint import EndpointSystem

    if options["answers"]:
        return AnswersFileSystem(options["answers"])
    if options["rag_callable"]:
        return CallableSystem.from_spec(
            options["rag_callable"], interrupt_grace=config.interrupt_grace, policy=config.system_calls
        )
    if options["endpoint"]:
        return EndpointSystem(options["endpoint"], policy=config.system_calls)
    # Indexes are kept in the cache, not in --out: any later evaluation (a re-run, another k, another
    # --out) reuses them until the corpus, the chunking or the model changes.
    # openai:... embeddings are asked on the reader's server, with its key.
    indexes = index_cache_dir(options["cache_dir"])
    return rag_baseline(
        options["corpus"],
        retriever=point.retriever or "bm25",
        embeddings=point.embeddings,
        chunk_size=point.chunk_size,
        k=point.k,
        progress=progress,
        index_dir=indexes,
        dense_index_dir=indexes,
        rerank=f"{rerank.kind}:{rerank.argument}" if rerank.argument else rerank.kind,
        rerank_top=options["rerank_top"],
        rerank_url=options["rerank_url"],
    )


show_only(evaluate, EVALUATE_SHOWN)
