"""`qagen review`: people label a run's drafts (or an evaluation's answers) on a local web page."""

from __future__ import annotations

import contextlib
import getpass
import os
import sys
import webbrowser
from pathlib import Path

import click

from qagen.cli.errors import friendly_errors


def _os_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no login name (a container's numeric user): the page asks for none
        return "reviewer"


def _graphical() -> bool:
    """Whether a browser window can be opened here (not over ssh into a server without a display)."""
    return sys.platform in ("darwin", "win32") or bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


@click.command()
@click.argument("directory", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=0,
    show_default=True,
    help="Port of the page on 127.0.0.1 (0: a free one). The page is never reachable from other machines.",
)
@click.option(
    "--reviewer",
    default=None,
    metavar="NAME",
    help="Whose labels these are (several people can label the same items). [default: your login name]",
)
@click.option(
    "--sample-size",
    "size",
    type=click.IntRange(min=1),
    default=150,
    show_default=True,
    help="Items to label: drafts stratified over kept and rejected ones (150: the minimum ARES asks for).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the sample (same seed, same items).")
@click.option(
    "--open/--no-browser",
    "open_browser",
    default=None,
    help="Open the page in a browser. [default: when there is a display]",
)
@friendly_errors
def review(directory: Path, port: int, reviewer: str | None, size: int, seed: int, open_browser: bool | None) -> None:
    """Label DIRECTORY's drafts (a run directory) or answers (an evaluation directory) on a local page.

    One item at a time: the chunk with the answer highlighted, the question and the answer; mark
    each criterion pass or fail (optionally a 1-5 score) and keep or reject, with the keyboard.
    The critics' scores are shown only once you have answered. Every label is saved at once to
    DIRECTORY/labels.jsonl, and the page resumes where you stopped. Ctrl-C stops the server.
    """
    from qagen.review.server import ReviewServer
    from qagen.review.session import ReviewSession, open_items

    items, thresholds = open_items(directory, size=size, seed=seed)
    session = ReviewSession(directory, items, reviewer=reviewer or _os_user(), thresholds=thresholds)
    with ReviewServer(session, port=port) as server:
        what = "drafts" if session.kind == "draft" else "answers"
        click.echo(f"reviewing {len(items)} {what} of {directory} as {session.reviewer}: {server.url}")
        click.echo("labels are saved as you give them; press Ctrl-C to stop")
        if open_browser or (open_browser is None and _graphical()):
            webbrowser.open(server.url)
        with contextlib.suppress(KeyboardInterrupt):  # the way to stop: every label is on disk already
            server.serve_forever()
    click.echo(f"\nsaved {session.saved} labels to {session.store_path}")
