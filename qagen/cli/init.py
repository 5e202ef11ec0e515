"""`qagen init`: write a starter config file."""

from __future__ import annotations

from pathlib import Path

import click

from qagen.cli.config_file import DEFAULT_CONFIG_NAME, starter_file
from qagen.cli.errors import friendly_errors
from qagen.cli.paths import UserPath
from qagen.errors import QagenError


@click.command()
@click.argument("path", required=False, default=DEFAULT_CONFIG_NAME, type=UserPath(path_type=Path, dir_okay=False))
@click.option("--force", is_flag=True, default=False, help="Replace PATH if it exists.")
@friendly_errors
def init(path: Path, force: bool) -> None:
    """Write a starter config file to PATH (default: qagen.toml): every key, its default and its help.

    Use it with `qagen build --config PATH` and `qagen evaluate --config PATH`.
    """
    if path.exists() and not force:
        raise QagenError(f"{path} exists; give --force to replace it, or another PATH.")
    path.write_text(starter_file(), encoding="utf-8")
    click.echo(
        f"wrote {path}: set your documents (`path` in [corpus]) and the run directory (`out` in [build]) in it, "
        f"or give them as CORPUS and --out; then `qagen build --config {path}`"
    )
