"""`qagen batch export|import` (offline batches for self-hosted models) and `qagen status`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from qagen.cli.build_settings import config_from_options
from qagen.cli.config_file import MORE_SETTINGS, config_option, say_servers, show_only
from qagen.cli.errors import friendly_errors
from qagen.cli.options import EXPORT_OPTIONS
from qagen.cli.paths import UserPath

if TYPE_CHECKING:
    from qagen.runs.batch.offline import Imported


@click.group()
def batch() -> None:
    """Offline batches: export a round of requests for a batch runner (vLLM's run_batch, Ray Data), import its results.

    \b
    qagen stage chunk docs/ --out run
    qagen batch export run --generator-model openai:my-model --out requests.jsonl
    python -m vllm.entrypoints.openai.run_batch -i requests.jsonl -o results.jsonl --model my-model
    qagen batch import run results.jsonl      # then export again, until nothing is left
    qagen stage filter run                    # writes dataset/ and candidates/
    """


@batch.command(name="export", epilog=MORE_SETTINGS)
@click.argument("run_dir", type=UserPath(path_type=Path, exists=True, file_okay=False))
@config_option("batch export")
@click.option(
    "--out",
    "-o",
    "out",
    type=UserPath(path_type=Path),
    default=Path("requests.jsonl"),
    show_default=True,
    help="Requests file to write (Batch API input format).",
)
@EXPORT_OPTIONS
@click.pass_context
@friendly_errors
def export_command(ctx: click.Context, /, run_dir: Path, out: Path, **options: Any) -> None:
    """Write the next round of RUN_DIR's requests (drafts, then each critic) to a JSONL file."""
    from qagen.generation.batch_export import export_requests
    from qagen.runs.rundir import RunDir

    RunDir(run_dir).require()
    say_servers(ctx, "batch export")
    with RunDir(run_dir).locked() as run:
        # Exporting fixes both models: the file holds the drafts' requests, then each critic's.
        config = config_from_options(ctx, options, stored=run.stored_config(), fixed=run.fixed_roles())
        count = export_requests(config, run_dir, out)
    if count == 0:
        click.echo(f"nothing left to request: run `qagen stage filter {run_dir}` to write the dataset")
    else:
        click.echo(
            f"{count} requests -> {out}; answer them with a batch runner, then `qagen batch import {run_dir} RESULTS`"
        )


# The options `--help` lists: those set most often.
EXPORT_SHOWN = (
    "config", "set", "out", "n_generations", "question_types", "pair_embeddings", "generator_model", "base_url",
    "critic_model", "critic_base_url", "audience", "prompts_dir", "all_critics", "min_score", "min_critic",
)  # fmt: skip
show_only(export_command, EXPORT_SHOWN)


@batch.command(name="import")
@click.argument("run_dir", type=UserPath(path_type=Path, exists=True, file_okay=False))
@click.argument("results", type=UserPath(path_type=Path, exists=True, dir_okay=False))
@friendly_errors
def import_command(run_dir: Path, results: Path) -> None:
    """Read a batch runner's RESULTS file (Batch API output format) into RUN_DIR, and record its answers."""
    from qagen.generation.batch_export import export_requests
    from qagen.runs.batch.offline import import_results
    from qagen.runs.rundir import RunDir

    RunDir(run_dir).require()
    with RunDir(run_dir).locked() as run:
        imported = import_results(run_dir, results)
        # The answers become records now (so `filter` and `status` see them), and the next round is counted.
        left = export_requests(run.stored_config(), run_dir, None)
    click.echo(_import_report(imported, results))
    if left == 0:
        click.echo(f"nothing left to request: run `qagen stage filter {run_dir}` to write the dataset")
    else:
        click.echo(f"next: `qagen batch export {run_dir}` ({left} requests)")


def _import_report(imported: Imported, results: Path) -> str:
    """What an import counted: answers, and apart, what it ignored and what is asked again."""
    if not imported.new:
        return f"{results} was imported before; nothing changed"
    asked_again = [
        (imported.errors, "error line", "error lines"),
        (imported.malformed, "reply that is no chat completion", "replies that are no chat completion"),
        (imported.missing, "request with no line", "requests with no line"),
    ]
    ignored = [
        (imported.answered_before, "answer imported before", "answers imported before"),
        (imported.duplicates, "second line for a request", "second lines for a request"),
        (imported.unknown, "line for no request of the export", "lines for no request of the export"),
    ]
    report = f"{imported.answered} answers imported for {imported.requests} exported requests"
    again = _counted(asked_again)
    if again:
        report += f"; {again}: asked again by the next export"
    skipped = _counted(ignored)
    if skipped:
        report += f"; ignored: {skipped}"
    return report


def _counted(parts: list[tuple[int, str, str]]) -> str:
    return ", ".join(f"{count} {one if count == 1 else many}" for count, one, many in parts if count)


@click.command()
@click.argument("run_dir", type=UserPath(path_type=Path, exists=True, file_okay=False))
@friendly_errors
def status(run_dir: Path) -> None:
    """Where RUN_DIR stands: records, spend, batch rounds and batches (id, state, counts)."""
    from qagen.generation.status import describe_build
    from qagen.runs.batch.status import describe_run

    click.echo(describe_run(run_dir, describe_build))
