"""`qagen profile RUN`, the profile of a built test set, and `qagen compare EVAL_DIR...`, evaluations side
by side; `qagen report`, their one name before they were two commands, still does either."""

from __future__ import annotations

from pathlib import Path

import click

from qagen.cli.errors import friendly_errors
from qagen.cli.paths import UserPath
from qagen.cli.renamed import say_renamed

_DIRECTORY = UserPath(path_type=Path, exists=True, file_okay=False)
_CHART_FILE = UserPath(path_type=Path, dir_okay=False)
_PLOT = "(needs matplotlib: pip install 'qagen[plot]')"


@click.command()
@click.argument("run", type=_DIRECTORY)
@click.option(
    "--chart", type=_CHART_FILE, default=None, help=f"Also write a PNG of its distributions to this file {_PLOT}."
)
@friendly_errors
def profile(run: Path, chart: Path | None) -> None:
    """Print the profile of the test set built in RUN (`qagen build --out RUN`) and write it to RUN/profile.md.

    The profile: question types, coverage, easiness, lengths, each critic's scores, duplicates removed,
    free-check rejections, and the estimated share of kept questions a reviewer keeps (`qagen review
    RUN --sample kept`).
    """
    _profile(run, chart)


def _profile(run: Path, chart: Path | None) -> None:
    from qagen.cli.review import kept_quality_advice
    from qagen.errors import QagenError
    from qagen.generation.profile_report import build_summary, profile_chart, require_profile, write_profile
    from qagen.plotting import pyplot
    from qagen.review.estimate import refresh_kept_quality

    summary = build_summary(run)
    if summary is None:
        raise QagenError(
            f"{run} is no build's run directory (it has no run.json): give the --out of `qagen build`; "
            "`qagen compare` compares evaluation directories."
        )
    if chart is not None:
        pyplot()  # before any work
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
        shown = require_profile(summary, run)
        click.echo(f"chart: {profile_chart(shown, chart, f'Test-set profile: {run.resolve().name}')}")


_METRIC_HELP = "Metric of the --chart (default: correctness, else the first with values)."


@click.command()
@click.argument("eval_dirs", metavar="EVAL_DIR...", nargs=-1, required=True, type=_DIRECTORY)
@click.option(
    "--chart", type=_CHART_FILE, default=None, help=f"Also write a bar chart of them to this PNG file {_PLOT}."
)
@click.option("--metric", default=None, help=_METRIC_HELP)
@click.option("--plot", "plot_path", type=_CHART_FILE, default=None, hidden=True)
@friendly_errors
def compare(eval_dirs: tuple[Path, ...], chart: Path | None, metric: str | None, plot_path: Path | None) -> None:
    """Compare evaluation directories (each the --out of `qagen evaluate`): every metric with its 95%
    interval, and paired tests of each against the first on the questions both answered; a bar chart
    with --chart."""
    from qagen.generation.profile_report import build_summary

    builds = [path for path in eval_dirs if build_summary(path) is not None]
    if builds:
        raise click.UsageError(
            f"{builds[0]} is a build's run directory, not an evaluation: `qagen profile {builds[0]}` prints its "
            "profile."
        )
    _compare(eval_dirs, chart or plot_path, metric)  # --plot: the option's name before --chart, still accepted


def _compare(eval_dirs: tuple[Path, ...], chart: Path | None, metric: str | None) -> None:
    from qagen.evaluate.report import report as compare_runs
    from qagen.review.eval_answers import is_eval_dir
    from qagen.review.judge_reliability import record_judge_reliability

    if metric is not None and chart is None:
        raise click.UsageError("--metric chooses the chart's metric: give --chart PATH too.")
    for eval_dir in eval_dirs:
        if is_eval_dir(eval_dir):  # labels given since the evaluation ran: its summary says what they measure
            record_judge_reliability(eval_dir)
    compared = compare_runs(eval_dirs, chart=chart, metric=metric)
    click.echo(compared.table)
    if compared.chart is not None:
        click.echo(f"\nchart: {compared.chart}")


@click.command(hidden=True)
@click.argument("eval_dirs", nargs=-1, required=True, type=_DIRECTORY)
@click.option("--chart", "chart", type=_CHART_FILE, default=None, help=f"Also write a chart to this PNG file {_PLOT}.")
@click.option("--metric", default=None, help=_METRIC_HELP)
@click.option("--plot", "plot_path", type=_CHART_FILE, default=None, hidden=True)
@friendly_errors
def report(eval_dirs: tuple[Path, ...], chart: Path | None, metric: str | None, plot_path: Path | None) -> None:
    """`qagen profile RUN` given one build's run directory, else `qagen compare EVAL_DIR...` (deprecated)."""
    from qagen.generation.profile_report import build_summary
    from qagen.runs.rundir import RunDir

    if any(RunDir(path).exists() for path in eval_dirs):
        say_renamed("`qagen report RUN`", "`qagen profile RUN`")
    else:
        say_renamed("`qagen report EVAL_DIR...`", "`qagen compare EVAL_DIR...`")
    chart = chart or plot_path
    builds = [path for path in eval_dirs if build_summary(path) is not None]
    if not builds:
        _compare(eval_dirs, chart, metric)
        return
    if len(eval_dirs) > 1:
        raise click.UsageError("Give one build run directory to profile, or evaluation directories to compare.")
    if metric is not None:
        if chart is None:
            raise click.UsageError("--metric chooses the chart's metric: give --chart PATH too.")
        raise click.UsageError("--metric chooses an evaluation chart's metric; a build's chart shows its profile.")
    _profile(builds[0], chart)
