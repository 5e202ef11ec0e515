"""`qagen` command line: `build` runs everything; `chunk`, `generate`, `critique`, `filter` run one stage."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Any

import click

from qagen import __version__
from qagen.cli.errors import friendly_errors
from qagen.cli.flags import in_cli_terms
from qagen.cli.options import (
    batch_from_options,
    batch_options,
    budget_options,
    chunk_options,
    config_from_options,
    corpus_options,
    critic_options,
    filter_options,
    model_options,
    output_options,
    sample_options,
)
from qagen.errors import QagenError


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="qagen")
def main() -> None:
    """Build a vetted question/answer test set for RAG from your own documents.

    \b
    qagen build docs/ --out run --n-generations 200     # everything, resumable
    qagen chunk / generate / critique / filter           # one stage at a time on a run directory
    qagen evaluate run --baseline bm25 --corpus docs/ --out eval

    \b
    Exit codes:
      0  done
      1  error, with one sentence on stderr: bad input or settings, an unreachable server, more
         failed calls than --max-failure-rate, or a run in which nothing succeeded (no draft
         could be read, no question answered)
      2  wrong usage (an unknown option, a missing argument)
      3  stopped by --max-tokens / --max-cost; finished work is saved, re-run with a higher cap
      4  --batch --no-wait: batches submitted or still running; re-run the same command later
      130  interrupted (Ctrl-C); finished work is saved, re-run the same command to go on
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
@batch_options
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
    from qagen.generation.pipeline import build as run_build

    batch = batch_from_options(options)
    config = config_from_options(ctx, options, stored=None)
    if dry_run:
        from qagen.generation.estimate import Estimate
        from qagen.generation.pipeline import plan

        planned = plan(config, out, progress=not quiet, batch=batch is not None)
        described = in_cli_terms(planned.describe(), Estimate.settings)
        click.echo(f"dry run: no LLM call made\n{described}")
        return
    result = run_build(config, out, progress=not quiet, batch=batch)
    click.echo(result.table)
    if result.stopped_by_budget:
        from qagen.llm.cost import Budget

        stopped = in_cli_terms(result.stopped_by_budget, Budget.settings)
        click.echo(
            f"\nstopped: {stopped}. Finished work is saved in {out}; re-run with a higher cap to continue.",
            err=True,
        )
        sys.exit(3)
    click.echo(
        f"\nkept {result.summary['funnel']['kept']} questions: {out / 'dataset'} (every draft: {out / 'candidates'})"
    )
    if push_repo:
        from qagen.publish.push import push_run

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
    from qagen.generation.pipeline import chunk_stage
    from qagen.generation.tasks import BuildTasks
    from qagen.runs.rundir import RunDir

    run = RunDir(out)
    config = config_from_options(ctx, options, stored=None)
    run.open(config, BuildTasks.for_config(config).prompt_hashes(), llm=False)
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
    from qagen.generation.pipeline import load_sample, run_llm_stages
    from qagen.generation.tasks import BuildTasks
    from qagen.runs.rundir import RunDir

    run = RunDir(run_dir)
    config = config_from_options(ctx, options, stored=run.stored_config(), llm_fixed=run.llm_fixed())
    tasks = BuildTasks.for_config(config)
    run.open(config, tasks.prompt_hashes())
    if not run.chunking_done():
        raise QagenError(f"{run_dir} has no chunks yet; run `qagen chunk` first.")
    sample = load_sample(config, run)
    run_llm_stages(config, run, tasks, sample, generate=generate, critique=critique, progress=not quiet)


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
    from qagen.generation.pipeline import finalize, load_sample
    from qagen.generation.tasks import BuildTasks
    from qagen.generation.write import funnel_table
    from qagen.runs.rundir import RunDir

    run = RunDir(run_dir)
    config = config_from_options(ctx, options, stored=run.stored_config())
    tasks = BuildTasks.for_config(config)
    run.open(config, tasks.prompt_hashes(), llm=run.llm_fixed())
    if not run.chunking_done():
        raise QagenError(f"{run_dir} has no chunks yet; run `qagen chunk` (or `qagen build`) first.")
    summary = finalize(config, run, tasks, load_sample(config, run))
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
    from qagen.cli.batch import batch, status
    from qagen.cli.evaluate import evaluate, report
    from qagen.cli.push import push

    main.add_command(batch)
    main.add_command(status)
    main.add_command(push)
    main.add_command(evaluate)
    main.add_command(report)


_register_commands()
