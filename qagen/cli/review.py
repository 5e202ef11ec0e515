"""`qagen review` (label a sample of drafts or answers) and `qagen agreement` (how far the critics
and judges agree with the people who labelled them)."""

from __future__ import annotations

import getpass
from pathlib import Path

import click

from qagen.cli.errors import friendly_errors
from qagen.errors import ConfigError

_DIRECTORY = click.Path(path_type=Path, exists=True, file_okay=False)


@click.command()
@click.argument("directory", type=_DIRECTORY)
@click.option(
    "--export",
    "export_path",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Write the sample to label to this CSV file, with empty label columns, for a spreadsheet.",
)
@click.option(
    "--import",
    "import_path",
    type=click.Path(path_type=Path, exists=True, dir_okay=False),
    default=None,
    help="Read the labels of a filled CSV file (as --export wrote it) into DIRECTORY/labels.jsonl.",
)
@click.option(
    "--reviewer",
    default=None,
    help="Who labels: recorded with each label (with --import: for rows whose reviewer cell is empty; "
    "default: your login name).",
)
@click.option(
    "--size",
    type=click.IntRange(min=1),
    default=150,
    show_default=True,
    help="Items in the review sample (150 is the minimum ARES asks for).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the review sample.")
@click.option(
    "--no-calls",
    "no_calls",
    is_flag=True,
    default=False,
    help="Make no LLM call: stop instead of asking the critics the early stop skipped for sampled drafts.",
)
@friendly_errors
def review(
    directory: Path,
    export_path: Path | None,
    import_path: Path | None,
    reviewer: str | None,
    size: int,
    seed: int,
    no_calls: bool,
) -> None:
    """Label a sample of DIRECTORY's drafts (a run directory) or answers (an evaluation directory).

    Rejected and kept drafts are sampled alike, so both kinds of error of the critics are measured;
    the critics the early stop skipped are asked for the sampled drafts only (saying how many calls
    first). Then `qagen agreement DIRECTORY` compares the critics with your labels.
    """
    from qagen.review import spreadsheet

    if export_path is not None and import_path is not None:
        raise click.UsageError("Give --export or --import, not both.")
    if export_path is not None:
        exported = spreadsheet.export_csv(
            directory,
            export_path,
            size=size,
            seed=seed,
            allow_calls=not no_calls,
            say=lambda m: click.echo(m, err=True),
        )
        click.echo(
            f"wrote {exported.rows} items to label to {exported.path}; fill it, then: "
            f"qagen review {directory} --import {exported.path}"
        )
        return
    if import_path is not None:
        imported = spreadsheet.import_csv(directory, import_path, reviewer=reviewer or getpass.getuser())
        click.echo(
            f"imported {imported.labels} labels into {directory / 'labels.jsonl'} ({imported.unchanged} unchanged, "
            f"{imported.unlabelled} rows without a label); next: qagen agreement {directory}"
        )
        return
    # Placeholder: the interactive review page (branch revpage) replaces this branch.
    raise ConfigError(
        "The review page is not built yet: label in a spreadsheet with `qagen review DIRECTORY --export labels.csv`, "
        "then `--import labels.csv`."
    )
