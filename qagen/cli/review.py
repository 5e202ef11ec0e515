"""`qagen review` (label a sample of drafts or answers) and `qagen agreement` (how far the critics
and judges agree with the people who labelled them)."""

from __future__ import annotations

import contextlib
import getpass
import json
import os
import shlex
import sys
import webbrowser
from pathlib import Path
from typing import TYPE_CHECKING

import click
from click.core import ParameterSource

from qagen.cli.errors import friendly_errors
from qagen.cli.flags import setting_flags
from qagen.cli.paths import UserPath
from qagen.words import counted

if TYPE_CHECKING:
    from qagen.records import KeptQuality
    from qagen.review.sample import SampleKind

_DIRECTORY = UserPath(path_type=Path, exists=True, file_okay=False)


@click.command()
@click.argument("directory", type=_DIRECTORY)
@click.option(
    "--export",
    "export_path",
    type=UserPath(path_type=Path, dir_okay=False),
    default=None,
    help="Write the sample to label to this CSV file, with empty label columns, for a spreadsheet.",
)
@click.option(
    "--import",
    "import_path",
    type=UserPath(path_type=Path, exists=True, dir_okay=False),
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
    "--sample",
    type=click.Choice(["drafts", "kept"]),
    default="drafts",
    show_default=True,
    help="Which sample of a run to label: drafts (kept and rejected alike, to measure the critics) or kept "
    "(a uniform random sample of the kept questions, to estimate the share of them a reviewer keeps).",
)
@click.option(
    "--no-calls",
    "no_calls",
    is_flag=True,
    default=False,
    help="Make no LLM call: stop instead of asking the critics the early stop skipped for sampled drafts.",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=0,
    show_default=True,
    help="The review page's port on 127.0.0.1 (0: a free one). The page is never reachable from other machines.",
)
@click.option(
    "--open/--no-browser",
    "open_browser",
    default=None,
    help="Open the review page in a browser. [default: when there is a display]",
)
@click.pass_context
@friendly_errors
def review(
    ctx: click.Context,
    /,
    directory: Path,
    export_path: Path | None,
    import_path: Path | None,
    reviewer: str | None,
    size: int,
    seed: int,
    sample: SampleKind,
    no_calls: bool,
    port: int,
    open_browser: bool | None,
) -> None:
    """Label a sample of DIRECTORY's drafts (a run directory) or answers (an evaluation directory).

    Rejected and kept drafts are sampled alike, so both kinds of error of the critics are measured;
    the critics the early stop skipped are asked for the sampled drafts only (saying how many calls
    first). Then `qagen agreement DIRECTORY` compares the critics with your labels.

    With --sample kept, a uniform random sample of a run's kept questions instead: labelled in its
    order, their keep decisions estimate the share of the kept questions a reviewer keeps, with a 95%
    interval, in summary.json, `qagen profile RUN` and the dataset card (from 20 labels on).

    Without --export/--import, a page on 127.0.0.1 (its URL printed) shows one item at a time: the
    chunk with the answer highlighted, the question and the answer, to mark pass or fail per
    criterion (optionally a 1-5 score) and keep or reject, by keyboard. The critics' verdicts show
    once you have answered. Labels are saved at once to DIRECTORY/labels.jsonl, and the page
    resumes where you stopped; Ctrl-C stops it.
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
            sample=sample,
        )
        click.echo(
            f"wrote {counted(exported.rows, 'item')} to label to {exported.path}; fill it, then: "
            f"qagen review {directory} --import {exported.path}"
        )
        if sample == "kept":
            _say_too_few_kept(directory)
        return
    if import_path is not None:
        # They choose the sample to export or show; the file imported says which items were labelled.
        ignored = [name for name in ("size", "seed", "sample", "no_calls") if _given(ctx, name)]
        if ignored:
            flags = ", ".join(f"--{name.replace('_', '-')}" for name in ignored)
            raise click.UsageError(
                f"{flags} {'chooses' if len(ignored) == 1 else 'choose'} the sample to export or show, not what "
                "--import reads (the file says which items were labelled); drop "
                f"{'it' if len(ignored) == 1 else 'them'}."
            )
        imported = spreadsheet.import_csv(directory, import_path, reviewer=reviewer or _login_name())
        click.echo(
            f"imported {counted(imported.labels, 'label')} into {directory / 'labels.jsonl'} ({imported.unchanged} "
            f"unchanged, {counted(imported.unlabelled, 'row')} without a label); next: {_next_after_import(directory)}"
        )
        _say_estimate(directory, imported.kept_quality)
        return
    serve_page(
        directory,
        reviewer,
        size=size,
        seed=seed,
        allow_calls=not no_calls,
        port=port,
        open_browser=open_browser,
        sample=sample,
    )


def _labels_there(quality: KeptQuality, directory: Path) -> str:
    """Keep decisions given before any kept sample was drawn (a sample of the drafts): said, and that they count."""
    from qagen.review.estimate import keep_decisions
    from qagen.review.labels import LABELS_FILE, LabelStore

    if quality.kept is not None or not (directory / LABELS_FILE).is_file():
        return ""
    with LabelStore(directory) as store:
        decisions = len(keep_decisions(store.of_kind("draft")))
    if not decisions:
        return ""
    return (
        f" ({counted(decisions, 'keep decision')} given already, to a sample of the drafts: the kept sample is drawn "
        "apart from it, uniformly, and counts those of its questions)"
    )


def _say_too_few_kept(directory: Path) -> None:
    """Said at the export of a kept sample when the run keeps fewer questions than an estimate takes."""
    from qagen.records import MIN_KEPT_LABELS
    from qagen.review.estimate import estimate_kept_quality

    kept = estimate_kept_quality(directory).kept
    if kept is not None and kept < MIN_KEPT_LABELS:
        click.echo(
            f"the run keeps {counted(kept, 'question')}, fewer than the {MIN_KEPT_LABELS} labels an estimate takes: "
            "label every one and their share is counted exactly instead."
        )


def _given(ctx: click.Context, name: str) -> bool:
    """Whether the option was given on the command line (or by its environment variable), not left at its default."""
    return ctx.get_parameter_source(name) not in (None, ParameterSource.DEFAULT)


def _say_estimate(directory: Path, quality: KeptQuality | None) -> None:
    """The run's estimate of its share of good kept questions, once it has a sample of them to label,
    and what to do next."""
    from qagen.generation.kept_quality import kept_quality_sentence

    if quality is not None and quality.kept is not None:
        click.echo(kept_quality_sentence(quality))
        advice = kept_quality_advice(quality, directory)
        if advice is not None:
            click.echo(advice)


def kept_quality_advice(quality: KeptQuality, directory: Path) -> str | None:
    """The command that takes the estimate of a run's share of good kept questions further; None when
    it needs nothing more."""
    command = f"qagen review {shlex.quote(str(directory))} --sample kept"
    if quality.stale:
        return f"draw the sample again from the kept questions the run holds now (the labels given stay): {command}"
    if quality.status == "not_estimated":
        return f"to estimate it, label a sample of the kept questions: {command}{_labels_there(quality, directory)}"
    if quality.labels_not_counted:
        return f"label the sample in its order, from its first question not labelled: {command}"
    if quality.status == "too_few" and not quality.counted_whole:
        return f"label more of the sample: {command}"
    return None


def serve_page(
    directory: Path,
    reviewer: str | None,
    *,
    size: int,
    seed: int,
    allow_calls: bool,
    port: int,
    open_browser: bool | None,
    sample: SampleKind = "drafts",
) -> None:
    """The interactive review: the page on 127.0.0.1 until Ctrl-C, then how many labels were saved (and
    the estimate they give, for a sample of the kept questions)."""
    from qagen.review.estimate import refresh_kept_quality
    from qagen.review.server import ReviewServer
    from qagen.review.session import ReviewSession, open_items

    items, thresholds = open_items(directory, size=size, seed=seed, allow_calls=allow_calls, say=_say, sample=sample)
    session = ReviewSession(directory, items, reviewer=reviewer or _login_name() or "reviewer", thresholds=thresholds)
    with ReviewServer(session, port=port) as server:
        what = "drafts" if session.kind == "draft" else "answers"
        click.echo(f"reviewing {len(items)} {what} of {directory} as {session.reviewer}: {server.url}")
        click.echo("labels are saved as you give them; press Ctrl-C to stop")
        if open_browser or (open_browser is None and _graphical()):
            webbrowser.open(server.url)
        with contextlib.suppress(KeyboardInterrupt):  # the way to stop: every label is on disk already
            server.serve_forever()
    click.echo(f"\nsaved {session.saved} labels to {session.store_path}")
    if sample == "kept":
        _say_estimate(directory, refresh_kept_quality(directory))


def _say(message: str) -> None:
    click.echo(message, err=True)


def _graphical() -> bool:
    """Whether a browser window can be opened here (not over ssh into a server without a display)."""
    return sys.platform in ("darwin", "win32") or bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _login_name() -> str | None:
    """The user's login name, the default reviewer; None when the system has none to give."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return None


@click.command()
@click.argument("directory", type=_DIRECTORY)
@click.option("--json", "as_json", is_flag=True, default=False, help="Print the report as JSON.")
@friendly_errors
def agreement(directory: Path, as_json: bool) -> None:
    """How far the critics of a run (or the judges of an evaluation) in DIRECTORY agree with the
    people who labelled it: per criterion and for the keep decision, raw agreement, Cohen's kappa
    with a 95% bootstrap interval, false keeps and false rejects, and the threshold that matches
    the people best, with the `qagen stage filter` command that applies it. Makes no LLM call.
    """
    from qagen.review.agreement import measure_agreement
    from qagen.review.agreement_text import agreement_table
    from qagen.review.eval_answers import is_eval_dir
    from qagen.review.judge_reliability import record_judge_reliability

    report = measure_agreement(directory)
    if is_eval_dir(directory):
        record_judge_reliability(directory)  # the summary (and `qagen compare`) say how far to trust its judges
    command = filter_command(directory, report.filter_settings) if report.recommendations else None
    if as_json:
        click.echo(json.dumps({**report.model_dump(mode="json"), "filter_command": command}, indent=2))
        return
    click.echo(agreement_table(report))
    if command is not None:
        click.echo(f"apply {'it' if len(report.recommendations) == 1 else 'them'} (no LLM call): {command}")


def _next_after_import(directory: Path) -> str:
    """What imported labels measure: the stratified review sample's (or an evaluation's), the checks or the
    judges (`qagen agreement`); with no stratified sample drawn, labels of kept questions, which estimate
    the share of good ones (`qagen profile`)."""
    from qagen.review.eval_answers import is_eval_dir
    from qagen.review.sample import stored_sample

    measured = is_eval_dir(directory) or stored_sample(directory) is not None
    return f"qagen agreement {directory}" if measured else f"qagen profile {directory}"


def filter_command(directory: Path, settings: dict[str, int | float]) -> str:
    """The `qagen stage filter` command that filters with exactly `settings`: every critic's threshold always
    (a filter's thresholds are its own, never the run's; a critic with no option of its own by
    `--min-critic NAME=SCORE`), the other settings where they differ from the defaults."""
    from qagen.config import BuildConfig

    flags = setting_flags()
    parts = ["qagen", "stage", "filter", shlex.quote(str(directory))]
    for name, value in settings.items():
        default = BuildConfig.model_fields[name].default if name in BuildConfig.model_fields else None
        if name.startswith("cut_"):
            parts += [flags["cut"], shlex.quote(f"{name[4:]}={value}")]
        elif name.startswith("min_") and name not in flags:
            parts += [flags["min_critic"], shlex.quote(f"{name[4:]}={value}")]
        elif name.startswith("min_") or value != default:
            parts += [flags[name], str(value)]
    return " ".join(parts)
