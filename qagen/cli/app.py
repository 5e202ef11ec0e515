"""`qagen` command line: `build` runs everything; `stage chunk`, `generate`, `critique`, `filter` run one stage."""

from __future__ import annotations

import importlib
import logging
import os
import sys
from pathlib import Path
from typing import Any

import click

from qagen._version import __version__
from qagen.cli.build_settings import config_from_options
from qagen.cli.config_file import config_option, say_servers, show_only
from qagen.cli.errors import PIPE_CLOSED_EXIT, friendly_errors
from qagen.cli.flags import in_cli_terms
from qagen.cli.next_steps import next_steps
from qagen.cli.options import (
    BUILD_OPTIONS,
    batch_from_options,
    batch_options,
    corpus_argument,
    output_options,
    require_out_and_corpus,
    run_out_option,
    update_corpus_option,
)
from qagen.errors import QagenError
from qagen.redaction import redact
from qagen.words import counted


class _LazyGroup(click.Group):
    """The group of `qagen`: `build` here, the other commands in their own modules, each imported when
    its name is given or `--help` lists them (`_LAZY_COMMANDS`), so `qagen build` imports no code of
    the evaluation, the review or publishing (tests/cli/test_lazy_imports.py keeps it so)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *_LAZY_COMMANDS, *_RENAMED_STAGES})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands:
            if cmd_name in _LAZY_COMMANDS:
                module, name = _LAZY_COMMANDS[cmd_name].split(":")
                self.add_command(getattr(importlib.import_module(module), name), cmd_name)
            elif cmd_name in _RENAMED_STAGES:
                from qagen.cli.renamed import RenamedCommand
                from qagen.cli.stages import stage

                # Their names before `qagen stage` grouped them, still run by scripts.
                self.add_command(RenamedCommand(cmd_name, stage.commands[cmd_name], f"qagen stage {cmd_name}"))
        return super().get_command(ctx, cmd_name)


_LAZY_COMMANDS: dict[str, str] = {
    "stage": "qagen.cli.stages:stage",
    "push": "qagen.cli.push:push",
    "batch": "qagen.cli.batch:batch",
    "status": "qagen.cli.batch:status",
    "evaluate": "qagen.cli.evaluate:evaluate",
    "profile": "qagen.cli.report:profile",
    "compare": "qagen.cli.report:compare",
    "report": "qagen.cli.report:report",  # hidden: `profile` or `compare`, as its argument says
    "review": "qagen.cli.review:review",
    "agreement": "qagen.cli.review:agreement",
    "init": "qagen.cli.init:init",
}
"""Each command defined in a module of its own, as `module:attribute`."""
_RENAMED_STAGES = ("chunk", "generate", "critique", "filter")
"""The commands of `qagen stage`, still run by their names before it grouped them (hidden)."""


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="qagen")
def main() -> None:
    """Build a vetted question/answer test set for RAG from your own documents.

    \b
    qagen build docs/ --out run --target 100            # everything, resumable
    qagen init && qagen build --config qagen.toml        # the settings in a file
    qagen stage chunk / generate / critique / filter     # one stage at a time on a run directory
    qagen profile run                                    # the test set's profile
    qagen evaluate run --baseline bm25 --corpus docs/ --out eval
    qagen compare eval eval-mine                         # evaluations side by side, paired tests

    \b
    Exit codes:
      0  done
      1  error, with one sentence on stderr: bad input or settings, a run directory in use by
         another process or made from another corpus, an unreachable server, more failed calls
         than --max-failure-rate, or a run in which nothing succeeded (no draft could be read,
         no question answered)
      2  wrong usage (an unknown option, a missing argument)
      3  stopped by --max-tokens / --max-cost; finished work is saved, re-run with a higher cap
      4  --batch --no-wait: batches submitted or still running; re-run the same command later
      130  interrupted (Ctrl-C); finished work is saved, re-run the same command to go on
      141  the reader of the output stopped reading (qagen profile RUN | head); nothing is wrong
    """


# The options `qagen build --help` lists: those set most often. Every other option keeps working and
# is a key of the config file (docs/configuration.md lists them all, with their flags).
BUILD_SHOWN = (
    "config", "set", "out", "hf_dataset", "generator_model", "base_url", "critic_model", "n_generations", "target", "chunk_size",
    "audience", "question_types", "vetting", "cut", "concurrency", "max_cost", "batch", "dry_run",
    "quiet",
)  # fmt: skip


@main.command(epilog="More settings (each model's server, key and temperature, chunking, thresholds, retries, caps, "
    "prices) are keys of a --config file or --set SECTION.KEY=VALUE, each with a flag of its own: `qagen init` writes a starter file "
    "explaining every one; docs/configuration.md lists them with their flags.")  # fmt: skip
@config_option("build")
@corpus_argument
@run_out_option
@BUILD_OPTIONS
@update_corpus_option
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
    ctx: click.Context,
    /,
    out: Path | None,
    quiet: bool,
    push_repo: str | None,
    public: bool,
    dry_run: bool,
    update_corpus: bool,
    **options: Any,
) -> None:
    """Chunk CORPUS, draft a question per sampled chunk, critique, filter, and write the dataset.

    CORPUS is a file or a folder of .txt .md .rst .html .pdf files and .jsonl .csv .parquet
    tables (or use --hf-dataset). Every LLM reply is saved as it arrives: after a crash or
    Ctrl-C, the same command continues where it stopped and pays for no call twice.
    """
    from qagen.generation.pipeline import build as run_build

    out = require_out_and_corpus(out, options)
    say_servers(ctx, "build")
    batch = batch_from_options(options)
    config = config_from_options(ctx, options, stored=None)
    if dry_run:
        from qagen.generation.estimate import Estimate
        from qagen.generation.pipeline import plan
        from qagen.review.certify import certifier

        planned = plan(
            config,
            out,
            progress=not quiet,
            update_corpus=update_corpus,
            batch=batch is not None,
            certify=certifier if config.precision is not None else None,
        )
        described = in_cli_terms(planned.describe(), Estimate.settings)
        click.echo(f"dry run: no LLM call made\n{described}")
        if config.target is not None:
            from qagen.generation.target import draft_budget

            click.echo(
                f"  with --target {config.target}: the round the build starts with; the rounds after it make "
                f"at most {draft_budget(config):,} drafts in all (--max-drafts)"
            )
        return
    if config.precision is None:
        result = run_build(config, out, progress=not quiet, update_corpus=update_corpus, batch=batch)
    else:
        from dataclasses import replace

        from qagen.review.certify import certifier, with_estimate
        from qagen.runs.rundir import RunDir

        # Held to what the run's labels certify from the first round on; the estimate beside it after.
        result = run_build(config, out, progress=not quiet, update_corpus=update_corpus, batch=batch, certify=certifier)
        with RunDir(out).locked() as run:
            result = replace(result, summary=with_estimate(run, result.summary))
    click.echo(result.table)
    if result.stopped_by_budget:
        from qagen.llm.cost import Budget

        stopped = in_cli_terms(result.stopped_by_budget, Budget.settings)
        click.echo(
            f"\nstopped: {stopped}. Finished work is saved in {out}; re-run with a higher cap to continue.",
            err=True,
        )
        sys.exit(3)
    if result.shortfall:
        from qagen.generation.target import SHORTFALL_SETTINGS

        click.echo(f"\nshort of the target: {in_cli_terms(result.shortfall, SHORTFALL_SETTINGS)}", err=True)
    if result.short_of_passages:
        from qagen.generation.passages_short import PASSAGES_SETTINGS

        click.echo(f"\nshort of passages: {in_cli_terms(result.short_of_passages, PASSAGES_SETTINGS)}", err=True)
    kept = counted(result.summary.funnel.kept, "question")
    click.echo(f"\nkept {kept}: {out / 'dataset'} (every draft: {out / 'candidates'})")
    if push_repo:
        from qagen.publish.push import push_run

        pushed = push_run(out, push_repo, private=not public)
        click.echo(f"pushed to {pushed.url} ({'private' if pushed.private else 'public'})")
    if result.summary.funnel.kept:
        click.echo(_next_steps(out, pushed=bool(push_repo)))


def _next_steps(out: Path, *, pushed: bool) -> str:
    """What a user does with a built set next: look at it, score a RAG system on it, publish it."""
    steps = [
        (f"qagen profile {out}", "its profile: types, coverage, easiness, lengths, scores"),
        (f"qagen evaluate {out} --baseline bm25 --corpus CORPUS --out eval", "score a baseline on it"),
        (f"qagen review {out} --sample kept", "label a sample: the share of good questions"),
    ]
    if not pushed:
        steps.append((f"qagen push {out} ORG/NAME", "publish it (private by default)"))
    return next_steps(steps)


show_only(build, BUILD_SHOWN)


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
    except QagenError as exc:  # outside a command's own handling: the help of an option reading the registries
        click.echo(f"error: {redact(str(exc))}", err=True)
        code = 1
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
        if isinstance(exit_.code, str):
            click.echo(exit_.code, err=True)
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:  # the reader stopped reading (`| head`) before the last of it
            code = code or PIPE_CLOSED_EXIT
    os._exit(code)
