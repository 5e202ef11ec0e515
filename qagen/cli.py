"""`qagen` command line: `build` runs everything; `chunk`, `generate`, `critique`, `filter` run one stage."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
from click.core import ParameterSource

from qagen import __version__
from qagen.cli_errors import friendly_errors
from qagen.config import DEFAULT_AUDIENCE, DEFAULT_MODEL, BuildConfig
from qagen.errors import QagenError

F = TypeVar("F", bound=Callable[..., Any])


def _options(*decorators: Callable[[F], F]) -> Callable[[F], F]:
    def apply(function: F) -> F:
        for decorator in reversed(decorators):
            function = decorator(function)
        return function

    return apply


corpus_options = _options(
    click.option("--hf-dataset", metavar="NAME_OR_PATH", help="Use a Hugging Face dataset instead of CORPUS: a directory saved with save_to_disk, or a Hub id."),
    click.option("--split", default="train", show_default=True, help="Split of --hf-dataset to use."),
    click.option("--text-column", default="text", show_default=True, help="Column holding the text, for tables (.jsonl/.csv/.parquet) and datasets."),
    click.option("--source-column", default=None, help="Column naming each row's source document (default: file name and row number)."),
)  # fmt: skip
chunk_options = _options(
    click.option("--chunk-size", type=click.IntRange(min=1), default=2000, show_default=True, help="Maximum chunk length, in --length-unit."),
    click.option("--chunk-overlap", type=click.IntRange(min=0), default=200, show_default=True, help="Overlap between consecutive chunks, in --length-unit."),
    click.option("--length-unit", type=click.Choice(["characters", "tokens"]), default="characters", show_default=True, help="Measure chunk length in characters or in tiktoken tokens."),
    click.option("--encoding", default="cl100k_base", show_default=True, help="tiktoken encoding for --length-unit tokens."),
    click.option("--seed", type=int, default=42, show_default=True, help="Seed of the chunk sampling; the same seed picks the same chunks."),
)  # fmt: skip
model_options = _options(
    click.option("--model", default=DEFAULT_MODEL, show_default=True, help="Generator model as LangChain's provider:model, e.g. openai:gpt-4o-mini."),
    click.option("--critic-model", default=None, help="Model of the three critics (default: --model)."),
    click.option("--base-url", envvar="OPENAI_BASE_URL", default=None, help="URL of an OpenAI-compatible server (vLLM, Ollama, llama.cpp, TGI), e.g. http://localhost:8000/v1. [env: OPENAI_BASE_URL]"),
    click.option("--temperature", type=float, default=None, help="Sampling temperature (default: the model's own)."),
    click.option("--max-output-tokens", type=click.IntRange(min=1), default=None, help="Cap on tokens per reply (stops runaway continuations early)."),
    click.option("--concurrency", type=click.IntRange(min=1), default=16, show_default=True, help="LLM calls in flight at once."),
    click.option("--rpm", type=click.FloatRange(min=0, min_open=True), default=None, help="Requests-per-minute limit (default: none)."),
    click.option("--max-retries", type=click.IntRange(min=0), default=6, show_default=True, help="Retries per call on 429, 5xx, timeouts and dropped connections, with backoff honouring Retry-After."),
    click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=120.0, show_default=True, help="Seconds to wait for one reply."),
    click.option("--max-failure-rate", type=click.FloatRange(0, 1), default=0.5, show_default=True, help="Stop when more than this share of calls fails even after retries (checked after 20 calls)."),
)  # fmt: skip
sample_options = _options(
    click.option("--n-generations", "-n", type=click.IntRange(min=1), default=None, help="Draft from this many chunks, spread across documents [default: every chunk]."),
)  # fmt: skip
critic_options = _options(
    click.option("--audience", default=DEFAULT_AUDIENCE, show_default=True, help="Who the questions should be useful to; the relevance critic rates usefulness to them."),
    click.option("--all-critics", is_flag=True, default=False, help="Ask all three critics even after one has rejected a draft (full rationales, more calls)."),
)  # fmt: skip
filter_options = _options(
    click.option("--min-score", type=click.IntRange(1, 5), default=4, show_default=True, help="Keep a draft when every critic's score is at least this."),
    click.option("--min-groundedness", type=click.IntRange(1, 5), default=None, help="Override --min-score for groundedness."),
    click.option("--min-relevance", type=click.IntRange(1, 5), default=None, help="Override --min-score for relevance."),
    click.option("--min-standalone", type=click.IntRange(1, 5), default=None, help="Override --min-score for standalone."),
    click.option("--dedup-threshold", type=click.FloatRange(0, 1, min_open=True), default=0.9, show_default=True, help="Questions whose word sets overlap this much (Jaccard) are near-duplicates; the first in sampling order is kept."),
)  # fmt: skip
budget_options = _options(
    click.option("--dry-run", is_flag=True, default=False, help="Chunk and sample, then print the expected calls, tokens and cost; make no LLM call."),
    click.option("--max-tokens", type=click.IntRange(min=1), default=None, help="Stop cleanly once the run directory has spent this many tokens (re-run with a higher cap to continue)."),
    click.option("--max-cost", type=click.FloatRange(min=0, min_open=True), default=None, help="Stop cleanly once the run has spent this many dollars (needs a known price or --price-input/--price-output)."),
    click.option("--price-input", type=click.FloatRange(min=0), default=None, help="Dollars per million input tokens, for cost reports and --max-cost (default: known OpenAI prices)."),
    click.option("--price-output", type=click.FloatRange(min=0), default=None, help="Dollars per million output tokens."),
)  # fmt: skip
output_options = _options(
    click.option("--quiet", "-q", is_flag=True, default=False, help="No progress bars."),
)


def _config_fields(options: dict[str, Any]) -> dict[str, Any]:
    """Map flat CLI options onto the nested `BuildConfig` fields (only the options present)."""
    nested: dict[str, Any] = {}
    corpus_keys = {
        "corpus": "path",
        "hf_dataset": "hf_dataset",
        "split": "split",
        "text_column": "text_column",
        "source_column": "source_column",
    }
    chunk_keys = {"chunk_size", "chunk_overlap", "length_unit", "encoding"}
    model_keys = {
        "base_url": "base_url",
        "temperature": "temperature",
        "max_output_tokens": "max_output_tokens",
        "rpm": "rpm",
        "max_retries": "max_retries",
        "timeout": "timeout",
    }
    top_keys = {
        "n_generations",
        "seed",
        "audience",
        "min_score",
        "all_critics",
        "dedup_threshold",
        "concurrency",
        "max_failure_rate",
        "max_tokens",
        "max_cost",
        "price_input",
        "price_output",
    }
    for key, value in options.items():
        if key in corpus_keys:
            nested.setdefault("corpus", {})[corpus_keys[key]] = (
                str(value) if key == "corpus" and value is not None else value
            )
        elif key in chunk_keys:
            nested.setdefault("chunking", {})[key] = value
        elif key in model_keys:
            nested.setdefault("generator", {})[model_keys[key]] = value
            nested.setdefault("critic", {})[model_keys[key]] = value
        elif key == "model":
            nested.setdefault("generator", {})["spec"] = value
        elif key == "critic_model":
            nested.setdefault("critic", {})["spec"] = value
        elif key in top_keys:
            nested[key] = value
        elif key[4:] in {"groundedness", "relevance", "standalone"}:
            if value is not None:
                nested.setdefault("min_scores", {})[key[4:]] = value
        else:
            # An option with no place in the settings would be silently ignored: a bug, not input.
            raise AssertionError(f"option {key!r} is not mapped onto BuildConfig")
    return nested


def _merge(base: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in update.items():
        merged[key] = (
            _merge(merged[key], value) if isinstance(value, dict) and isinstance(merged.get(key), dict) else value
        )
    return merged


_MODEL_OPTIONS = {
    "model",
    "critic_model",
    "base_url",
    "temperature",
    "max_output_tokens",
    "rpm",
    "max_retries",
    "timeout",
}


def _config(
    ctx: click.Context, options: dict[str, Any], *, stored: BuildConfig | None, llm_fixed: bool = True
) -> BuildConfig:
    """A build's settings: every option for a new run; on a stored run, only the options given.

    On a run made by `qagen chunk` (no LLM stage yet), the model options count in full, defaults
    included, as they would for a new build.
    """
    if stored is None:
        fields = _config_fields(options)
        critic = fields.setdefault("critic", {})
        critic.setdefault("spec", fields.get("generator", {}).get("spec", DEFAULT_MODEL))
        if critic["spec"] is None:
            critic["spec"] = fields["generator"]["spec"]
        return BuildConfig.model_validate(fields)
    given = {
        key: value
        for key, value in options.items()
        if ctx.get_parameter_source(key) in {ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT}
    }
    if not llm_fixed:
        for key in _MODEL_OPTIONS & options.keys():
            given.setdefault(key, options[key])
        if given.get("critic_model") is None and "model" in given:
            given["critic_model"] = given["model"]
    return BuildConfig.model_validate(_merge(stored.model_dump(mode="json"), _config_fields(given)))


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="qagen")
def main() -> None:
    """Build a vetted question/answer test set for RAG from your own documents.

    \b
    qagen build docs/ --out run --n-generations 200     # everything, resumable
    qagen chunk / generate / critique / filter           # one stage at a time on a run directory
    """


@main.command()
@click.argument("corpus", required=False, type=click.Path(path_type=Path))
@click.option(
    "--out",
    "-o",
    "out",
    required=True,
    type=click.Path(path_type=Path),
    help="Run directory: records, dataset/, candidates/, summary.json. Re-run the same command to resume.",
)
@corpus_options
@chunk_options
@sample_options
@model_options
@critic_options
@filter_options
@budget_options
@click.option(
    "--push",
    "push_repo",
    metavar="REPO_ID",
    default=None,
    help="Then publish the run to this Hugging Face dataset repo (private unless --public; token from HF_TOKEN or your login).",
)
@click.option("--public", is_flag=True, default=False, help="With --push: make the repo public.")
@output_options
@click.pass_context
@friendly_errors
def build(
    ctx: click.Context, /, out: Path, quiet: bool, push_repo: str | None, public: bool, dry_run: bool, **options: Any
) -> None:
    """Chunk CORPUS, draft a question per sampled chunk, critique, filter, and write the dataset.

    CORPUS is a file or a folder of .txt .md .rst .html .pdf files and .jsonl .csv .parquet
    tables (or use --hf-dataset). Every LLM reply is saved as it arrives: after a crash or
    Ctrl-C, the same command continues where it stopped and pays for no call twice.
    """
    from qagen.pipeline import build as run_build

    config = _config(ctx, options, stored=None)
    if dry_run:
        from qagen.pipeline import plan

        click.echo(f"dry run: no LLM call made\n{plan(config, out, progress=not quiet).describe()}")
        return
    result = run_build(config, out, progress=not quiet)
    click.echo(result.table)
    if result.stopped_by_budget:
        click.echo(
            f"\nstopped: {result.stopped_by_budget}. Finished work is saved in {out}; re-run with a higher cap to continue.",
            err=True,
        )
        sys.exit(3)
    click.echo(
        f"\nkept {result.summary['funnel']['kept']} questions: {out / 'dataset'} (every draft: {out / 'candidates'})"
    )
    if push_repo:
        from qagen.publish import push_run

        pushed = push_run(out, push_repo, private=not public)
        click.echo(f"pushed to {pushed.url} ({'private' if pushed.private else 'public'})")


@main.command()
@click.argument("corpus", required=False, type=click.Path(path_type=Path))
@click.option(
    "--out",
    "-o",
    "out",
    required=True,
    type=click.Path(path_type=Path),
    help="Run directory to create.",
)
@corpus_options
@chunk_options
@output_options
@click.pass_context
@friendly_errors
def chunk(ctx: click.Context, /, out: Path, quiet: bool, **options: Any) -> None:
    """Load and chunk CORPUS into a new run directory (stage 1 of build)."""
    from qagen.pipeline import chunk_stage
    from qagen.rundir import RunDir
    from qagen.stages import Prompts

    run = RunDir(out)
    config = _config(ctx, options, stored=None)
    run.open(config, Prompts.load().hashes(), llm=False)
    report = chunk_stage(config, run, progress=not quiet)
    click.echo(
        f"{report['documents']} documents, {report['skipped']} inputs skipped, {report['chunks']} chunks -> {run.chunks_file}"
    )


def _stage(
    run_dir: Path,
    ctx: click.Context,
    options: dict[str, Any],
    *,
    generate: bool,
    critique: bool,
    quiet: bool,
) -> None:
    from qagen.pipeline import load_sample, run_llm_stages
    from qagen.rundir import RunDir
    from qagen.stages import Prompts

    run = RunDir(run_dir)
    config = _config(ctx, options, stored=run.stored_config(), llm_fixed=run.llm_fixed())
    prompts = Prompts.load()
    run.open(config, prompts.hashes())
    if not run.chunking_done():
        raise QagenError(f"{run_dir} has no chunks yet; run `qagen chunk` first.")
    sample = load_sample(config, run)
    run_llm_stages(config, run, prompts, sample, generate=generate, critique=critique, progress=not quiet)


@main.command()
@click.argument("run_dir", type=click.Path(path_type=Path, exists=True, file_okay=False))
@sample_options
@model_options
@output_options
@click.pass_context
@friendly_errors
def generate(ctx: click.Context, /, run_dir: Path, quiet: bool, **options: Any) -> None:
    """Draft a question/answer pair for each sampled chunk of RUN_DIR (stage 2)."""
    _stage(run_dir, ctx, options, generate=True, critique=False, quiet=quiet)
    click.echo(f"drafts saved in {run_dir / 'drafts.jsonl'}")


@main.command()
@click.argument("run_dir", type=click.Path(path_type=Path, exists=True, file_okay=False))
@sample_options
@model_options
@critic_options
@filter_options
@output_options
@click.pass_context
@friendly_errors
def critique(ctx: click.Context, /, run_dir: Path, quiet: bool, **options: Any) -> None:
    """Rate every draft of RUN_DIR with the three critics (stage 3)."""
    _stage(run_dir, ctx, options, generate=False, critique=True, quiet=quiet)
    click.echo(f"critiques saved in {run_dir / 'critiques.jsonl'}")


@main.command(name="filter")
@click.argument("run_dir", type=click.Path(path_type=Path, exists=True, file_okay=False))
@sample_options
@filter_options
@click.pass_context
@friendly_errors
def filter_command(ctx: click.Context, /, run_dir: Path, **options: Any) -> None:
    """Apply the thresholds and near-duplicate filter; write dataset/, candidates/ and summary.json (stage 4)."""
    from qagen.output import funnel_table
    from qagen.pipeline import finalize, load_sample
    from qagen.rundir import RunDir
    from qagen.stages import Prompts

    run = RunDir(run_dir)
    config = _config(ctx, options, stored=run.stored_config())
    prompts = Prompts.load()
    run.open(config, prompts.hashes(), llm=run.llm_fixed())
    summary = finalize(config, run, prompts, load_sample(config, run))
    click.echo(funnel_table(summary))


def run() -> None:
    """The `qagen` console command: `main`, then an exit that skips interpreter teardown.

    Tearing down the modules of datasets, pyarrow and the HTTP stack takes about half a second
    after the work is done (measured by benchmarks/bench_build.py, where the whole process counts).
    Every file qagen writes is closed by the time a command returns, so only the standard streams
    and logging need flushing.
    """
    code: int
    try:
        main.main(prog_name="qagen")
        code = 0
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
        if isinstance(exit_.code, str):
            click.echo(exit_.code, err=True)
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(code)


def _register_commands() -> None:
    """Commands defined in their own modules (they import their heavy parts only when run)."""
    from qagen.cli_push import push
    from qagen.evaluate.cli import evaluate, report

    main.add_command(push)
    main.add_command(evaluate)
    main.add_command(report)


_register_commands()
