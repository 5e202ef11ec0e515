"""`qagen stage chunk`, `generate`, `critique` and `filter`: the stages of `build`, one at a time on a run directory.

Each takes only the options that apply to it (see `qagen.cli.options`): `generate` the generator's,
`critique` the critics', `filter` the thresholds.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource

from qagen.cli.build_settings import config_from_options
from qagen.cli.config_file import MORE_SETTINGS, config_option, say_servers, show_only
from qagen.cli.errors import friendly_errors
from qagen.cli.flags import in_cli_terms
from qagen.cli.options import (
    CHUNK_OPTIONS,
    CRITIQUE_OPTIONS,
    FILTER_OPTIONS,
    GENERATE_OPTIONS,
    THRESHOLD_OPTIONS,
    corpus_argument,
    output_options,
    update_corpus_option,
)
from qagen.cli.paths import UserPath
from qagen.config import BuildRole
from qagen.errors import QagenError

if TYPE_CHECKING:
    from qagen.records import Funnel

_RUN_DIR = UserPath(path_type=Path, exists=True, file_okay=False)
# The options `--help` lists on the stage commands with more than about 20: those set most often.
GENERATE_SHOWN = (
    "config", "set", "n_generations", "question_types", "pair_embeddings", "generator_model", "base_url", "api_key_env",
    "temperature", "max_output_tokens", "prompts_dir", "concurrency", "max_tokens", "max_cost", "quiet",
)  # fmt: skip
CRITIQUE_SHOWN = (
    "config", "set", "critic_model", "critic_base_url", "critic_api_key_env", "audience", "prompts_dir", "vetting",
    "critics", "concurrency", "all_critics", "min_score", "min_critic", "cut", "free_checks", "check_evidence",
    "max_tokens", "max_cost", "quiet",
)  # fmt: skip
# The options that decide which drafts pass: a critique that is to decide the drafts a re-filter
# left undecided must be asked with the same ones.
_DECIDING = (*THRESHOLD_OPTIONS, "max_answer_chars", "max_question_chars")


@click.command(epilog=MORE_SETTINGS)
@config_option("stage chunk")
@corpus_argument
@click.option("--out", "-o", "out", required=True, type=UserPath(path_type=Path), help="Run directory to create.")
@CHUNK_OPTIONS
@update_corpus_option
@output_options
@click.pass_context
@friendly_errors
def chunk(ctx: click.Context, /, out: Path, quiet: bool, update_corpus: bool, **options: Any) -> None:
    """Load and chunk CORPUS into a new run directory (stage 1 of build)."""
    from qagen.generation.pipeline import chunk_stage
    from qagen.generation.tasks import BuildTasks
    from qagen.runs.rundir import RunDir

    config = config_from_options(ctx, options, stored=None)
    with RunDir(out).locked() as run:
        run.open(config, BuildTasks.for_config(config).prompt_hashes(()), llm=False)
        report = chunk_stage(config, run, progress=not quiet, update_corpus=update_corpus)
    counts = f"{report['documents']} documents, {report['skipped']} inputs skipped, {report['chunks']} chunks"
    click.echo(f"{counts} -> {run.chunks_file}")


def _stage(run_dir: Path, ctx: click.Context, options: dict[str, Any], *, role: BuildRole, quiet: bool) -> None:
    """Run the LLM stage of `role` over the run's sample; exit 3 when a spending cap stopped it."""
    from qagen.generation.pipeline import load_sample, run_llm_stages
    from qagen.generation.tasks import BuildTasks
    from qagen.llm.cost import Budget
    from qagen.runs.rundir import RunDir

    RunDir(run_dir).require()  # first: a folder that holds no run is told so, and gets no lock file
    say_servers(ctx, "stage generate" if role == "generator" else "stage critique")
    with RunDir(run_dir).locked() as run:
        fixed = run.fixed_roles()
        config = config_from_options(ctx, options, stored=run.stored_config(), fixed=fixed)
        tasks = BuildTasks.for_config(config, run.iter_chunks)
        if not run.chunking_done():
            raise QagenError(f"{run_dir} has no chunks yet; run `qagen stage chunk` first.")
        sample = load_sample(config, run)
        if role == "critic":
            drafts = run.drafts.load()
            if not any(tasks.draft_key(item) in drafts for item in sample):
                # Checked before the run is opened, so the critics are not fixed by a command that did nothing.
                raise QagenError(
                    f"{run_dir} has no drafts yet, so there is nothing to critique; make them with "
                    f"`qagen stage generate {run_dir}` (or run every stage with `qagen build`)."
                )
        roles = fixed | {role}
        run.open(config, tasks.prompt_hashes(roles), llm=roles)
        generate = role == "generator"
        stopped = run_llm_stages(
            config, run, tasks, sample, generate=generate, critique=not generate, progress=not quiet
        )
    if stopped is not None:
        click.echo(
            f"stopped: {in_cli_terms(stopped, Budget.settings)}. Finished work is saved in {run_dir}; "
            "re-run with a higher cap to continue.",
            err=True,
        )
        sys.exit(3)


@click.command(epilog=MORE_SETTINGS)
@click.argument("run_dir", type=_RUN_DIR)
@config_option("stage generate")
@GENERATE_OPTIONS
@output_options
@click.pass_context
@friendly_errors
def generate(ctx: click.Context, /, run_dir: Path, quiet: bool, **options: Any) -> None:
    """Draft a question/answer pair for each sampled chunk of RUN_DIR (stage 2)."""
    _stage(run_dir, ctx, options, role="generator", quiet=quiet)
    click.echo(f"drafts saved in {run_dir / 'drafts.jsonl'}; next: qagen stage critique {run_dir}")


@click.command(epilog=MORE_SETTINGS)
@click.argument("run_dir", type=_RUN_DIR)
@config_option("stage critique")
@CRITIQUE_OPTIONS
@output_options
@click.pass_context
@friendly_errors
def critique(ctx: click.Context, /, run_dir: Path, quiet: bool, **options: Any) -> None:
    """Rate the drafts of RUN_DIR with the critics (stage 3); a low score stops a draft's critics."""
    _stage(run_dir, ctx, options, role="critic", quiet=quiet)
    click.echo(f"critiques saved in {run_dir / 'critiques.jsonl'}; next: qagen stage filter {run_dir}")


@click.command(name="filter", epilog=MORE_SETTINGS)
@click.argument("run_dir", type=_RUN_DIR)
@config_option("stage filter")
@FILTER_OPTIONS
@click.pass_context
@friendly_errors
def filter_command(ctx: click.Context, /, run_dir: Path, **options: Any) -> None:
    """Apply the thresholds and near-duplicate filter; write dataset/, candidates/ and summary.json (stage 4).

    Costs no call. Drafts whose critics were stopped by a score that now passes are undecided
    until `qagen stage critique` asks the critics they still need (or, in a run made through offline
    batch files, until `qagen batch export` and `qagen batch import` answer them).
    """
    from qagen.generation.target import SHORTFALL_SETTINGS, shortfall
    from qagen.generation.tasks import BuildTasks
    from qagen.generation.write import funnel_table
    from qagen.review.certify import certify_and_filter
    from qagen.runs.batch.offline import made_offline
    from qagen.runs.rundir import RunDir

    RunDir(run_dir).require()  # first: a folder that holds no run is told so, and gets no lock file
    with RunDir(run_dir).locked() as run:
        fixed = run.fixed_roles()
        config = config_from_options(ctx, options, stored=run.stored_config(), fixed=fixed)
        tasks = BuildTasks.for_config(config, run.iter_chunks)
        run.open(config, tasks.prompt_hashes(fixed), llm=fixed)
        if not run.chunking_done():
            raise QagenError(f"{run_dir} has no chunks yet; run `qagen stage chunk` (or `qagen build`) first.")
        summary = certify_and_filter(run, config, tasks)
    click.echo(funnel_table(summary))
    deciding = " ".join(
        f"--{name.replace('_', '-')} {options[name]}"
        for name in _DECIDING
        if ctx.get_parameter_source(name) == ParameterSource.COMMANDLINE
    )
    for note in undecided_notes(summary.funnel, run_dir, deciding, offline=made_offline(run_dir)):
        click.echo(note)
    if (short := shortfall(summary)) is not None:
        click.echo(f"\nshort of the target: {in_cli_terms(short, SHORTFALL_SETTINGS)}", err=True)


def undecided_notes(funnel: Funnel, run_dir: Path, options: str = "", *, offline: bool = False) -> list[str]:
    """One sentence per stage with undecided chunks: what they wait for, and the command that decides
    them; for a run made through offline batch files (`offline`), its next export."""
    undecided, calls = funnel.undecided, funnel.undecided_calls
    given = f" {options}" if options else ""
    if offline:
        return _offline_notes(funnel, run_dir, given)
    notes: list[str] = []
    if undecided.get("generation"):
        count = undecided["generation"]
        notes.append(
            f"{count} sampled chunk{'s' if count != 1 else ''} have no draft yet (undecided, not failed): "
            f"`qagen stage generate {run_dir}` ({calls.get('generation', count)} calls), then "
            f"`qagen stage critique {run_dir}{given}`, decides them."
        )
    if undecided.get("critique"):
        count = undecided["critique"]
        notes.append(
            f"{count} draft{'s' if count != 1 else ''} passed every critic asked but need{'s' if count == 1 else ''} "
            "one never asked (undecided, not failed: a lower score had stopped their critics, or the run stopped); "
            f"`qagen stage critique {run_dir}{given}` decides them (up to {calls.get('critique', 0)} calls)."
        )
    return notes


def _offline_notes(funnel: Funnel, run_dir: Path, given: str) -> list[str]:
    """`undecided_notes` for a run whose requests go out as batch files: the next export decides them."""
    undecided, calls = funnel.undecided, funnel.undecided_calls
    rounds = f"for your batch runner, and `qagen batch import {run_dir} RESULTS` reads its results back."
    notes: list[str] = []
    if undecided.get("generation"):
        count = undecided["generation"]
        notes.append(
            f"{count} sampled chunk{'s' if count != 1 else ''} have no draft yet (undecided, not failed): "
            f"`qagen batch export {run_dir}{given}` writes their {calls.get('generation', count)} requests "
            f"(then their critics', a round at a time) {rounds}"
        )
    if undecided.get("critique"):
        count = undecided["critique"]
        notes.append(
            f"{count} draft{'s' if count != 1 else ''} passed every critic asked but need{'s' if count == 1 else ''} "
            "one never asked (undecided, not failed: its request was not answered yet, or a lower score had "
            f"stopped their critics); `qagen batch export {run_dir}{given}` writes the requests that decide them "
            f"(up to {calls.get('critique', 0)}, a round at a time) {rounds}"
        )
    return notes


show_only(generate, GENERATE_SHOWN)
show_only(critique, CRITIQUE_SHOWN)


class _InOrder(click.Group):
    """A group whose `--help` lists its commands in the order they run, not alphabetically."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)


@click.group(name="stage", cls=_InOrder)
def stage() -> None:
    """Run the stages of `qagen build` one at a time on a run directory: chunk, generate, critique, filter.

    \b
    qagen stage chunk docs/ --out run      # load and chunk the corpus into a new run directory
    qagen stage generate run -n 100        # draft a question per sampled chunk
    qagen stage critique run               # rate the drafts with the critics
    qagen stage filter run                 # apply the thresholds; write dataset/ and candidates/
    """


for _command in (chunk, generate, critique, filter_command):
    stage.add_command(_command)
