"""`qagen evaluate` and `qagen report`."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from qagen.cli.config_file import config_option, show_only
from qagen.cli.errors import friendly_errors
from qagen.cli.evaluate_grid import GridPoint, grid_points, index_notes, split_list
from qagen.cli.flags import in_cli_terms
from qagen.cli.installed_help import ListsInstalled, installed
from qagen.cli.next_steps import next_steps
from qagen.cli.options import batch_from_options, batch_options, call_options, variable_name
from qagen.cli.paths import UserPath
from qagen.config import DEFAULT_MODEL
from qagen.errors import ConfigError
from qagen.evaluate.judges.registry import ALL, LLM_METRICS, MetricSpec
from qagen.evaluate.metrics.scoring import DETERMINISTIC_METRICS
from qagen.evaluate.systems.rerank import DEFAULT_RERANK_TOP
from qagen.evaluate.systems.retriever_specs import RETRIEVERS
from qagen.failures import is_call_failure_reason
from qagen.runs.batch.executor import BatchesRunningError

if TYPE_CHECKING:
    from qagen.evaluate.records import EvalSummary
    from qagen.evaluate.report import EvalRun
    from qagen.evaluate.systems.rerank.specs import RerankSpec

# The settings the evaluator's notes name (`select_metrics`).
NOTE_SETTINGS = ("embeddings", "metrics")
# The settings the input warnings name (`qagen.evaluate.input_checks`).
WARNING_SETTINGS = ("corpus",)


def _installed_rerankers() -> str:
    from qagen.evaluate.systems.rerank.specs import RERANKERS

    return installed(RERANKERS, lambda kind: kind.form)


def _int_list(value: str, name: str) -> list[int]:
    try:
        numbers = [int(part) for part in value.split(",") if part.strip()]
    except ValueError as exc:
        raise ConfigError(f"{name} takes a number or a comma-separated list of numbers, got '{value}'.") from exc
    if not numbers or min(numbers) < 1:
        raise ConfigError(f"{name} must be at least 1, got '{value}'.")
    return numbers


def metrics_help(*, installed: bool = True) -> str:
    """The `--metrics` help: every LLM metric with what it measures, by group, then the deterministic
    metrics; `installed`: those installed packages bring too (else qagen's own and those registered in
    Python, as the configuration page lists them whatever is installed)."""
    llm = tuple(LLM_METRICS) if installed else LLM_METRICS.own()
    deterministic = tuple(DETERMINISTIC_METRICS) if installed else DETERMINISTIC_METRICS.own()
    by_group: dict[str, list[MetricSpec]] = {}
    for spec in llm:
        by_group.setdefault(spec.group, []).append(spec)
    singles = [f"{group} ({specs[0].help})" for group, specs in by_group.items() if [s.name for s in specs] == [group]]
    grouped = [
        f"{group} ({'; '.join(f'{spec.name}: {spec.help}' for spec in specs)})"
        for group, specs in by_group.items()
        if [spec.name for spec in specs] != [group]
    ]
    others = [f"{metric.name} ({metric.help})" for metric in deterministic]
    return f"Comma list of metrics or groups: {'; '.join([*singles, *grouped, *others])}; {ALL}."


def metrics_option_help(*, installed: bool = True) -> str:
    return (
        f"{metrics_help(installed=installed)} Without --embeddings, the groups ragas and all leave answer_relevancy "
        "out (with a note)."
    )


class _MetricsOption(click.Option):
    """`--metrics`, whose help lists the metrics registered when it is shown (one registered after
    the CLI was imported, or brought by an installed package, too)."""

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        self.help = metrics_option_help()
        return super().get_help_record(ctx)


# The options `qagen evaluate --help` lists: those set most often. Every other option keeps working and
# is a key of the config file (docs/configuration.md lists them all, with their flags).
EVALUATE_SHOWN = (
    "config", "out", "answers", "rag_callable", "endpoint", "baseline", "corpus", "chunk_size", "k_values", "rerank",
    "model", "judge_model", "base_url", "metrics", "embeddings", "concurrency", "batch", "quiet",
)  # fmt: skip


@click.command(
    epilog="More settings (each model's server, key and output cap, the test set's columns, the reranker's "
    "candidates, retries) are keys of a --config file, each with a flag of its own: `qagen init` writes a starter "
    "file explaining every one; docs/configuration.md lists them with their flags."
)
@click.argument("dataset")
@config_option("evaluate")
@click.option(
    "--out",
    "-o",
    "out",
    required=True,
    type=UserPath(path_type=Path),
    help="Evaluation directory: answers, verdicts, results.jsonl, summary.json (and the baseline's BM25 index). "
    "Re-run the same command to resume.",
)
@click.option(
    "--answers",
    type=UserPath(path_type=Path, exists=True, dir_okay=False),
    help="JSONL of {question, answer, contexts, sources} made by your RAG system elsewhere; rows match the "
    "test set's questions by `id` if given, else ignoring case and spacing.",
)
@click.option(
    "--rag",
    "rag_callable",
    metavar="MODULE:FUNCTION",
    help="A Python function question -> str | {answer, contexts, sources} (sync or async).",
)
@click.option(
    "--endpoint", metavar="URL", help='An HTTP endpoint: POST {"question": ...} returns {answer, contexts, sources}.'
)
@click.option(
    "--baseline",
    metavar="RETRIEVER[,...]",
    cls=ListsInstalled,
    installed=lambda: installed(RETRIEVERS),
    help="The bundled baseline over --corpus, answered by --model with the notebook's RAG prompt, retrieving with "
    "bm25, dense (--embeddings searched with FAISS; pip install 'qagen[dense]') or hybrid (both, reciprocal rank "
    "fusion); a comma list (bm25,dense,hybrid) runs a grid.",
)
@click.option(
    "--corpus",
    type=UserPath(path_type=Path, exists=True),
    help="The corpus for --baseline (a file or folder, as for qagen build).",
)
@click.option(
    "--chunk-size",
    default="2000",
    show_default=True,
    help="Baseline chunk size in characters; a comma list (500,1000,2000) runs a settings grid.",
)
@click.option(
    "--k",
    "k_values",
    default="7",
    show_default=True,
    help="Contexts retrieved (and scored by hit@k, NDCG@k); a comma list (3,7) runs a grid.",
)
@click.option(
    "--rerank",
    "rerank",
    default="none",
    show_default=True,
    cls=ListsInstalled,
    installed=_installed_rerankers,
    help="Reranker of --baseline between retrieval and the reader: none, cross-encoder:PATH (a local "
    "sentence-transformers model folder), endpoint:MODEL (POST /rerank of vLLM or TEI at --rerank-url), reader "
    "(--model orders them, listwise); a comma list runs a grid.",
)
@click.option(
    "--rerank-top",
    type=click.IntRange(min=1),
    default=DEFAULT_RERANK_TOP,
    show_default=True,
    help="Candidates retrieved for the reranker; the reader gets the best --k of them (never fewer than --k).",
)
@click.option(
    "--rerank-url",
    default=None,
    help="Server of --rerank endpoint:MODEL, e.g. http://127.0.0.1:8080 (default: --base-url).",
)
@click.option(
    "--cache-dir",
    type=UserPath(path_type=Path, file_okay=False),
    default=None,
    help="Where --baseline keeps its BM25 and dense indexes (the chunks' embeddings), reused by every later "
    "evaluation of the same corpus, chunking and model whatever its --out. [default: $QAGEN_CACHE, else "
    "$XDG_CACHE_HOME/qagen, else ~/.cache/qagen]",
)
@click.option(
    "--model", default=DEFAULT_MODEL, show_default=True, help="Reader model of --baseline (LangChain provider:model)."
)
@click.option("--judge-model", default=None, help="Model of the LLM judges (default: --model).")
@click.option(
    "--base-url",
    envvar="OPENAI_BASE_URL",
    default=None,
    help="OpenAI-compatible server for the reader (and the judges unless --judge-base-url). [env: OPENAI_BASE_URL]",
)
@click.option(
    "--api-key-env",
    metavar="VAR",
    default=None,
    callback=variable_name,
    help="Name of the environment variable holding the key for --model, and the judges' unless --judge-api-key-env "
    "(default: OPENAI_API_KEY for openai:* models). The name, not the key.",
)
@click.option(
    "--judge-base-url",
    envvar="QAGEN_JUDGE_BASE_URL",
    default=None,
    help="OpenAI-compatible server for the judges (default: --base-url). [env: QAGEN_JUDGE_BASE_URL]",
)
@click.option(
    "--judge-api-key-env",
    metavar="VAR",
    default=None,
    callback=variable_name,
    help="Name of the environment variable holding the judges' key (default: --api-key-env).",
)
@click.option(
    "--metrics",
    cls=_MetricsOption,
    default="correctness,retrieval,text",
    show_default=True,
    help=metrics_option_help(installed=False),
)
@click.option(
    "--embeddings",
    default=None,
    help="Embeddings model of --baseline dense/hybrid (default: local): local (all-MiniLM-L6-v2, offline, in qagen[dense]), a sentence-transformers folder, or openai:MODEL (from --base-url); a comma list runs a grid. Also answer_relevancy's (from the judges' server; the first of a list).",
)
@click.option("--split", default="train", show_default=True, help="Split of DATASET when it is a dataset.")
@click.option("--question-column", default="question", show_default=True, help="Question column of DATASET.")
@click.option(
    "--answer-column",
    default=None,
    help="Reference-answer column (default: answer, expected_answer, true_answer, reference...).",
)
@click.option("--token", envvar="HF_TOKEN", default=None, help="Hub token for a private DATASET. [env: HF_TOKEN]")
@click.option(
    "--max-output-tokens",
    type=click.IntRange(min=1),
    default=None,
    help="Cap on tokens per reply, for the reader and the judges (default: 2048; a reply cut at the cap is recorded as truncated).",
)
@click.option(
    "--judge-max-output-tokens",
    type=click.IntRange(min=1),
    default=None,
    help="The judges' own cap on tokens per reply (default: --max-output-tokens).",
)
@click.option(
    "--interrupt-grace",
    type=click.FloatRange(min=0),
    default=5.0,
    show_default=True,
    metavar="SECONDS",
    help="After Ctrl-C, how long a --rag function still running may take to return; then its question is "
    "recorded as failed (interrupted) and the run ends.",
)
@call_options
@batch_options
@click.option("--quiet", "-q", is_flag=True, default=False, help="No progress bars.")
@friendly_errors
def evaluate(out: Path, quiet: bool, **options: Any) -> None:
    """Run a RAG system over DATASET's questions and score it.

    DATASET is a qagen run directory, a saved dataset directory, a Hub dataset id, or a .jsonl or
    .csv file with question and reference-answer columns. A DATASET not on disk that looks like a
    path (./, ../, /, ~, more than one /, a file suffix) is reported missing, never looked up on the Hub. Give the system under test with exactly
    one of --answers, --rag, --endpoint or --baseline (bm25, dense, hybrid). With --batch, the judges (and the
    baseline's reader) answer through the Batch API; your own system is asked as usual.
    """
    from qagen.evaluate.api import evaluate as run_evaluation
    from qagen.evaluate.api import select_metrics
    from qagen.evaluate.report import comparison_table, load_runs
    from qagen.evaluate.systems.rerank.specs import RerankSpec
    from qagen.evaluate.testset import load_testset
    from qagen.llm.client import ModelSettings
    from qagen.redaction import register_secret

    register_secret(options["token"])
    batch = batch_from_options(options)
    chosen = [name for name in ("answers", "rag_callable", "endpoint", "baseline") if options[name]]
    if len(chosen) != 1:
        raise ConfigError(
            "Give the RAG system to evaluate with exactly one of --answers, --rag, --endpoint or --baseline."
        )
    if options["baseline"] and not options["corpus"]:
        raise ConfigError("--baseline needs --corpus PATH.")
    chunk_sizes = _int_list(options["chunk_size"], "--chunk-size")
    ks = _int_list(options["k_values"], "--k")
    if len(chunk_sizes) > 1 and not options["baseline"]:
        raise ConfigError("A --chunk-size grid only applies to --baseline.")
    grid = grid_points(options["baseline"], options["embeddings"], chunk_sizes, ks)
    reranks = _rerank_grid(options["rerank"])
    if len(grid) * len(reranks) > 1:
        from qagen.evaluate.out_dir import require_grid_dir

        require_grid_dir(out)  # before the test set is read: a grid's points are folders inside `out`
    if any(spec.kind != "none" for spec in reranks) and not options["baseline"]:
        raise ConfigError("--rerank applies to --baseline: it reorders the baseline's retrieved chunks.")
    metrics = options["metrics"].split(",")
    # Fail before any work; notes come later.
    chosen_metrics, _ = select_metrics(metrics, embeddings=options["embeddings"] is not None)
    relevancy_embeddings = split_list(options["embeddings"])[0] if options["embeddings"] else None
    if "answer_relevancy" in chosen_metrics and len(split_list(options["embeddings"])) > 1:
        _print_note(f"answer_relevancy compares embeddings made by {relevancy_embeddings} in every run of the grid.")
    connection = {
        "timeout": options["timeout"],
        "max_retries": options["max_retries"],
        "max_output_tokens": options["max_output_tokens"],
    }
    reader_endpoint = {"base_url": options["base_url"], "api_key_env": options["api_key_env"]}
    # The judges' own server and key, each defaulting to the reader's.
    judge_endpoint = {
        "base_url": options["judge_base_url"] or options["base_url"],
        "api_key_env": options["judge_api_key_env"] or options["api_key_env"],
    }
    judge_cap = {"max_output_tokens": options["judge_max_output_tokens"] or options["max_output_tokens"]}
    judge = ModelSettings(
        spec=options["judge_model"] or options["model"], **judge_endpoint, **{**connection, **judge_cap}
    )
    reader = ModelSettings(spec=options["model"], **reader_endpoint, **connection) if options["baseline"] else None
    testset = load_testset(
        options["dataset"],
        split=options["split"],
        question_column=options["question_column"],
        answer_column=options["answer_column"],
        token=options["token"],
    )
    for skipped in testset.skipped:
        click.echo(f"skipped row {skipped.row} of the test set: {skipped.reason}: {skipped.content[:120]}", err=True)
    # The rerankers are the grid's last axis: each grid point once per reranker, in a directory of its own.
    rerank_names = _rerank_names(reranks)
    points = [(point, rerank) for point in grid for rerank in reranks]
    outputs: list[Path] = []
    running: list[str] = []  # --no-wait: every grid point's batches are submitted before the exit
    shown: set[str] = set()  # each grid point's summary keeps its warnings; the screen shows each once
    for point, rerank in points:
        k = point.k
        name = point.name if reranks == [RerankSpec("none")] else f"{point.name}_rerank-{rerank_names[rerank]}"
        target = out if len(points) == 1 else out / name
        system = _system(options, point, rerank, progress=not quiet)
        try:
            with index_notes():
                summary = run_evaluation(
                    testset,
                    system,
                    target,
                    metrics=metrics,
                    judge=judge,
                    reader=reader,
                    k=k,
                    concurrency=options["concurrency"],
                    rpm=options["rpm"],
                    max_failure_rate=options["max_failure_rate"],
                    embeddings=relevancy_embeddings,
                    progress=not quiet,
                    interrupt_grace=options["interrupt_grace"],
                    on_note=_print_note,
                    on_warning=lambda warning: _print_warning(warning, shown),
                    batch=batch,
                )
        except BatchesRunningError as waiting:
            running += waiting.batch_ids
            continue
        outputs.append(target)
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
        steps.append((f"qagen report {out}/{pattern} --chart comparison.png", "a bar chart of them, and paired tests"))
    elif options["baseline"]:
        steps.append((f"qagen evaluate {dataset} --rag MODULE:FUNCTION --out eval-mine", "score your own system"))
        steps.append((f"qagen report {out} eval-mine", "compare the two: paired tests on the same questions"))
    else:
        corpus = "--baseline bm25 --corpus CORPUS --out eval-bm25"
        steps.append((f"qagen evaluate {dataset} {corpus}", "score the bundled baseline"))
        steps.append((f"qagen report {out} eval-bm25", "compare the two: paired tests on the same questions"))
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


def _system(options: dict[str, Any], point: GridPoint, rerank: RerankSpec, *, progress: bool) -> Any:
    from qagen.call_policy import CallPolicy
    from qagen.corpus.index_cache import index_cache_dir
    from qagen.evaluate.api import rag_baseline
    from qagen.evaluate.systems.answers_file import AnswersFileSystem
    from qagen.evaluate.systems.callable import CallableSystem
    from qagen.evaluate.systems.endpoint import EndpointSystem

    if options["answers"]:
        return AnswersFileSystem(options["answers"])
    # --timeout and --max-retries reach the system under test as they reach the models.
    policy = CallPolicy(timeout=options["timeout"], max_retries=options["max_retries"])
    if options["rag_callable"]:
        return CallableSystem.from_spec(
            options["rag_callable"], interrupt_grace=options["interrupt_grace"], policy=policy
        )
    if options["endpoint"]:
        return EndpointSystem(options["endpoint"], policy=policy)
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


@click.command()
@click.argument("eval_dirs", nargs=-1, required=True, type=UserPath(path_type=Path, exists=True, file_okay=False))
@click.option(
    "--chart",
    "chart",
    type=UserPath(path_type=Path, dir_okay=False),
    default=None,
    help="Also write a bar chart of the runs to this PNG file (needs matplotlib: pip install 'qagen[plot]').",
)
@click.option(
    "--metric", default=None, help="Metric of the --chart (default: correctness, else the first with values)."
)
@click.option("--plot", "plot_path", type=UserPath(path_type=Path, dir_okay=False), default=None, hidden=True)
@friendly_errors
def report(eval_dirs: tuple[Path, ...], chart: Path | None, metric: str | None, plot_path: Path | None) -> None:
    """Compare evaluation directories: metrics with 95% intervals and paired tests; a bar chart with --chart.

    Given one build's run directory instead (`qagen build --out RUN`), print the test set's profile
    (question types, coverage, easiness, lengths, each critic's scores, duplicates removed, free-check
    rejections) and the estimated share of kept questions a reviewer keeps (`qagen review RUN --sample
    kept`), write it to RUN/profile.md, and with --chart a PNG of its distributions.
    """
    from qagen.cli.review import kept_quality_advice
    from qagen.evaluate.report import report as compare
    from qagen.generation.profile_report import build_summary, profile_chart, require_profile, write_profile
    from qagen.plotting import pyplot
    from qagen.review.estimate import refresh_kept_quality

    chart = chart or plot_path  # --plot: the option's name before --chart, still accepted
    if metric is not None and chart is None:
        raise click.UsageError("--metric chooses the chart's metric: give --chart PATH too.")
    builds = [(path, summary) for path in eval_dirs if (summary := build_summary(path)) is not None]
    if builds:
        if len(eval_dirs) > 1:
            raise click.UsageError("Give one build run directory to profile, or evaluation directories to compare.")
        if metric is not None:
            raise click.UsageError("--metric chooses an evaluation chart's metric; a build's chart shows its profile.")
        if chart is not None:
            pyplot()  # before any work
        run, summary = builds[0]
        quality = refresh_kept_quality(run)  # as the labels say now, in summary.json too
        if quality is not None:
            summary = {**summary, "kept_quality": quality.model_dump(mode="json")}
        tables, written = write_profile(run, summary)
        click.echo(tables)
        advice = kept_quality_advice(quality, run) if quality is not None else None
        if advice is not None:
            click.echo(advice)
        click.echo(f"\nwritten: {written}")
        if chart is not None:
            profile = require_profile(summary, run)
            click.echo(f"chart: {profile_chart(profile, chart, f'Test-set profile: {run.resolve().name}')}")
        return
    compared = compare(eval_dirs, chart=chart, metric=metric)
    click.echo(compared.table)
    if compared.chart is not None:
        click.echo(f"\nchart: {compared.chart}")
