"""Compare evaluation runs: a table of metrics with intervals, paired tests, and a bar chart."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from qagen.errors import ConfigError, QagenError
from qagen.evaluate.judges.registry import LLM_METRICS
from qagen.evaluate.metric_columns import row_column, scale_notes, summary_value
from qagen.evaluate.metrics.statistics import PairedResult, paired_test
from qagen.evaluate.results import UNDEFINED
from qagen.plotting import pyplot

P_RESAMPLES = 10_000
FEW = 20
"""Questions below which a mean's interval is marked: a bootstrap percentile interval of so few values is too
narrow (it undercovers), and values all alike give one of no width (`1.000 [1.000, 1.000] n=3`)."""
"""Random sign patterns behind a paired test's p-value when there are more than this many patterns
(2^n for n shared questions); with fewer, every one is counted and p is exact."""


@dataclass(frozen=True)
class EvalRun:
    """One evaluation directory's summary and, per summary metric, every question's value.

    Only what the report needs is kept of `results.jsonl`: the question ids, and for each metric
    of the summary a float array aligned with them (NaN where a question has no value). The file
    is read a line at a time, so a 10,000-question run (over 100 MB of retrieved texts and judge
    replies) costs a few MB here, not a few GB.
    """

    path: Path
    summary: dict[str, Any]
    question_ids: tuple[str, ...] = ()
    scores: dict[str, npt.NDArray[np.float64]] = field(default_factory=dict)
    """Summary metric name -> one value per question id (normalised like the summary; NaN: none)."""
    label: str = ""
    """The run's name in tables and charts (default: its directory's name)."""

    @classmethod
    def load(cls, path: Path, label: str | None = None) -> EvalRun:
        summary_file, results_file = path / "summary.json", path / "results.jsonl"
        if not summary_file.exists() or not results_file.exists():
            raise QagenError(
                f"{path} is not a finished evaluation (no summary.json/results.jsonl); run `qagen evaluate` first."
            )
        try:
            summary = json.loads(summary_file.read_text(encoding="utf-8"))
            k = summary.get("k")
            _refuse_earlier_names(path, summary["metrics"])
            ids, values = _read_scores(results_file, {name: row_column(name, k) for name in summary["metrics"]})
        except ValueError as exc:
            raise QagenError(f"{path} holds an unreadable summary.json or results.jsonl ({exc}).") from exc
        scores = {name: np.array(column, dtype=np.float64) for name, column in values.items()}
        return cls(path, summary, tuple(ids), scores, label or path.resolve().name or str(path))

    def values(self, metric: str) -> dict[str, float]:
        """Per-question values of a summary metric, keyed by question id (normalised like the summary)."""
        column = self.scores.get(metric)
        if column is None:
            return {}
        pairs = zip(self.question_ids, column.tolist(), strict=True)
        return {question: value for question, value in pairs if not math.isnan(value)}


_EARLIER_NAMES = re.compile(r"mrr|chunk_.*")
"""Metric names of evaluations made by qagen before its first release (`mrr` without its cutoff, the
`chunk_*` metrics that the `evidence_*` ones replaced)."""


def _refuse_earlier_names(path: Path, metrics: dict[str, Any]) -> None:
    earlier = sorted(name for name in metrics if _EARLIER_NAMES.fullmatch(name))
    if earlier:
        raise QagenError(
            f"{path} was written by an earlier qagen (its metrics {', '.join(earlier)} are no longer made); "
            "run `qagen evaluate` again into a new `out` directory to compare it."
        )


def _read_scores(results: Path, columns: dict[str, str]) -> tuple[list[str], dict[str, list[float]]]:
    """The question ids of `results.jsonl` and, per summary metric, the value of its row column in
    each row, read a line at a time (NaN where the row has none). ValueError on a line that is no row."""
    ids: list[str] = []
    values: dict[str, list[float]] = {name: [] for name in columns}
    with results.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            row = json.loads(line)
            if not isinstance(row, dict) or not isinstance(row.get("id"), str):
                raise ValueError(f"line {number} of results.jsonl is not a results row with an id")
            ids.append(row["id"])
            for name, column in columns.items():
                value = row.get(column)
                values[name].append(math.nan if value is None else summary_value(column, float(value)))
    return ids, values


def load_runs(paths: list[Path]) -> list[EvalRun]:
    """The runs in `paths`, labelled by directory name, or by the path where two names clash."""
    names = [path.resolve().name for path in paths]
    return [
        EvalRun.load(path, name if names.count(name) == 1 else str(path))
        for path, name in zip(paths, names, strict=True)
    ]


def chart_metric(runs: list[EvalRun]) -> str:
    """The metric to chart: correctness if some run has a value for it, else the first that has one."""
    names = [name for run in runs for name, stats in run.summary["metrics"].items() if stats["mean"] is not None]
    if not names:
        raise QagenError("No run has a value for any metric; nothing to chart.")
    return "correctness" if "correctness" in names else names[0]


class PairedDifference(NamedTuple):
    """One metric of one run minus the same metric of the first run, question by question."""

    metric: str
    run: str
    """The run's label."""
    baseline: str
    """The first run's label."""
    test: PairedResult
    """The mean difference, its 95% interval, the sign-flip test's p-value and the shared questions."""


def paired_differences(runs: Sequence[EvalRun]) -> list[PairedDifference]:
    """Every metric of every run after the first against the first, on the question ids both have a
    value for (see `statistics.paired_test`); metrics with fewer than two shared questions are left out."""
    differences: list[PairedDifference] = []
    if len(runs) < 2:
        return differences
    base = runs[0]
    for metric in _metrics(runs):
        first = base.values(metric)
        for other in runs[1:]:
            second = other.values(metric)
            shared = sorted(first.keys() & second.keys())
            if len(shared) < 2:
                continue
            test = paired_test([second[i] for i in shared], [first[i] for i in shared], n_resamples=P_RESAMPLES)
            differences.append(PairedDifference(metric, other.label, base.label, test))
    return differences


def _metrics(runs: Sequence[EvalRun]) -> list[str]:
    """Every summary metric of the runs, in the order they first appear."""
    return list(dict.fromkeys(name for run in runs for name in run.summary["metrics"]))


def comparison_table(runs: Sequence[EvalRun], paired: Sequence[PairedDifference] | None = None) -> str:
    """Metrics as rows, runs as columns: mean [95% interval], the questions it is over (n) and those
    without a value; then the paired differences vs the first run (`paired_differences`, computed
    here unless given), and what the counts hold.

    Its p-value is shown to the precision its Monte Carlo error allows (`format_p_value`).
    """
    header = ["metric", *(run.label for run in runs)]
    lines = [header]
    for metric in _metrics(runs):
        lines.append([metric, *(_cell(run.summary["metrics"].get(metric)) for run in runs)])
    text = _format(lines)
    per_type = _per_type(runs)
    if per_type:
        text += "\n\nper question type:\n" + per_type
    differences = paired_differences(runs) if paired is None else paired
    if differences:
        rows = [["metric", "runs", "mean diff [95% CI]", "p", "told apart from", "shared"]]
        for difference in differences:
            test = difference.test
            rows.append(
                [
                    difference.metric,
                    f"{difference.run} - {difference.baseline}",
                    f"{test.mean_diff:+.3f} [{test.low:+.3f}, {test.high:+.3f}]",
                    format_p_value(test.p_value, test.n),
                    f"±{smallest_told_apart(test):.3f}",
                    str(test.n),
                ]
            )
        text += "\n\npaired on shared questions:\n" + _format(rows)
        text += (
            f"\np: two-sided sign-flip test; exact up to {P_RESAMPLES:,} sign patterns "
            f"({int(math.log2(P_RESAMPLES))} questions), "
            f"beyond that estimated from {P_RESAMPLES:,} random ones, shown ± its standard error, "
            "or as a bound when no random pattern reached the observed difference."
            "\ntold apart from: the smallest difference these questions, scored by this judge, tell from none: "
            "half the width of the 95% interval (a difference smaller than it is within the noise)."
        )
    reliability = list(_reliability(runs))
    if reliability:
        text += "\n\njudges against people's labels (`qagen review EVAL`, then `qagen compare` again):\n"
        text += "\n".join(f"  {line}" for line in reliability)
    # Each run's metrics read at its own k: one at another k names columns of its own results.jsonl.
    scales = list(dict.fromkeys(line for run in runs for line in scale_notes(_metrics([run]), run.summary.get("k"))))
    if scales:
        text += "\n\nscales:\n" + "\n".join(f"  {line}" for line in scales)
    ks = {run.label: run.summary.get("k") for run in runs}
    if len(set(ks.values())) > 1:
        each = ", ".join(f"{label} k={k}" for label, k in ks.items())
        text += (
            f"\n\nk differs ({each}): a metric at one k has no value in a run at another (its empty cells), and "
            "the runs' retrieval metrics are not comparable; evaluate them at one `k`."
        )
    if any(_few(stats) for run in runs for stats in run.summary["metrics"].values()):
        text += (
            f"\n\n(few): fewer than {FEW} questions; its interval is narrower than the uncertainty (values all "
            "alike give one of no width): read it as a rough figure."
        )
    notes = list(_notes(runs))
    if notes:
        text += "\n\n" + "\n".join(notes)
    return text


def smallest_told_apart(test: PairedResult) -> float:
    """The smallest mean difference these shared questions tell apart from none at 95%: half the width of
    the paired difference's bootstrap interval (the interval of a difference that size just reaches 0)."""
    return (test.high - test.low) / 2


JUDGE_RELIABILITY = "judge_reliability"
"""The key of `summary.json` holding each judge's agreement with people's labels
(`qagen.review.judge_reliability`, written by `qagen evaluate`, `qagen agreement` and `qagen compare`)."""

UNMEASURED = "unmeasured: no answer of this evaluation is labelled yet (`qagen review EVAL` labels a sample)"


def reliability_line(judge: str, measured: Mapping[str, Any] | str | None) -> str:
    """One judge's agreement with the labels, as `summary.json` holds it (a `JudgeReliability` without its
    name), or the sentence that says it is unmeasured."""
    if not isinstance(measured, Mapping) or not measured.get("labels") or measured.get("accuracy") is None:
        return f"{judge}: {measured if isinstance(measured, str) else UNMEASURED}"
    labels, accuracy = int(measured["labels"]), float(measured["accuracy"])
    kappa = measured.get("kappa")
    said = "kappa undefined" if kappa is None else f"kappa {kappa:+.2f}"
    if kappa is not None and measured.get("kappa_low") is not None and measured.get("kappa_high") is not None:
        said += f" [{measured['kappa_low']:+.2f}, {measured['kappa_high']:+.2f}]"
    return (
        f"{judge}: agrees with {round(accuracy * labels)} of {labels} labels, {accuracy:.2f} "
        f"[{measured['accuracy_low']:.2f}, {measured['accuracy_high']:.2f}], {said} "
        f"(correct at >= {measured['cut']:g})"
    )


def _reliability(runs: Sequence[EvalRun]) -> Iterator[str]:
    """Per run, each judge that says whether an answer is correct with its agreement, or unmeasured."""
    for run in runs:
        recorded: Mapping[str, Any] = run.summary.get(JUDGE_RELIABILITY) or {}
        judges = [
            name for name in run.summary.get("judges", {}) if name in LLM_METRICS and LLM_METRICS.get(name).reviewable
        ]
        for judge in dict.fromkeys([*recorded, *judges]):
            yield f"{run.label}: {reliability_line(judge, recorded.get(judge))}"


def _per_type(runs: Sequence[EvalRun]) -> str:
    """Every metric's mean and interval per question type (a test set that names types), types in
    the order the runs list them, metrics in the summary's order; a metric without a value for a
    type (abstention on factoids, retrieval on unanswerable questions) is left out of its rows."""
    types = list(dict.fromkeys(name for run in runs for name in run.summary.get("by_type", {})))
    if not types:
        return ""
    lines = [["type", "metric", *(run.label for run in runs)]]
    for question_type in types:
        counts = [run.summary.get("question_types", {}).get(question_type, 0) for run in runs]
        stats = [run.summary.get("by_type", {}).get(question_type, {}) for run in runs]
        metrics = list(dict.fromkeys(name for of_run in stats for name in of_run))
        for metric in metrics:
            if all(of_run.get(metric, {}).get("mean") is None for of_run in stats):
                continue
            lines.append([f"{question_type} ({max(counts)})", metric, *(_cell(of_run.get(metric)) for of_run in stats)])
    return _format(lines)


@dataclass(frozen=True)
class Report:
    """What `report` returns: the runs compared, their paired differences, the table `qagen compare`
    prints, and the chart when one was asked for."""

    runs: tuple[EvalRun, ...]
    """The evaluation directories, in the order given (the first is the one the others are paired with)."""
    paired: tuple[PairedDifference, ...]
    """Each later run minus the first, per metric with at least two shared questions."""
    table: str
    """The comparison as text (`comparison_table`)."""
    chart: Path | None = None
    """The bar chart written; None when none was asked for."""


def report(eval_dirs: Sequence[Path | str], *, chart: Path | str | None = None, metric: str | None = None) -> Report:
    """Compare evaluation directories (each `qagen evaluate`'s `out`): metrics with 95% intervals,
    paired tests against the first, and with `chart` a bar chart of `metric` (default: correctness,
    else the first metric with values) written there as PNG (needs matplotlib: `qagen[plot]`).
    """
    if metric is not None and chart is None:
        raise ConfigError("`metric` chooses the chart's metric: give `chart` too.", settings=("metric", "chart"))
    if chart is not None:
        pyplot()  # before any work
    runs = load_runs([Path(path) for path in eval_dirs])
    paired = paired_differences(runs)
    written = bar_chart(runs, metric or chart_metric(runs), Path(chart)) if chart is not None else None
    return Report(tuple(runs), tuple(paired), comparison_table(runs, paired), written)


def _cell(stats: dict[str, Any] | None) -> str:
    """`mean [low, high] n=N`, then the questions without a value: those its definition leaves
    undefined (faithfulness of an answer without statements) apart from the rest."""
    if not stats or stats["mean"] is None:
        return "-"
    cell = f"{stats['mean']:.3f} [{stats['low']:.3f}, {stats['high']:.3f}] n={stats['n']}"
    if _few(stats):
        cell += " (few)"
    reasons: dict[str, int] = stats.get("missing_by_reason") or {}
    undefined = {reason: count for reason, count in reasons.items() if reason in UNDEFINED}
    for reason, count in undefined.items():
        cell += f", {count} {reason}"
    unscored = stats.get("missing", 0) - sum(undefined.values())
    return cell + (f", {unscored} unscored" if unscored else "")


def _few(stats: dict[str, Any] | None) -> bool:
    """A mean over fewer than `FEW` questions (see there)."""
    if not stats or stats.get("mean") is None:
        return False
    return 0 < int(stats.get("n") or 0) < FEW


def _notes(runs: Sequence[EvalRun]) -> Iterator[str]:
    """Per run: the questions that retrieved nothing, and why questions have no value, by metric."""
    for run in runs:
        nothing = run.summary.get("retrieved_nothing", 0)
        if nothing:
            yield (
                f"{run.label}: {nothing} rows retrieved nothing: scored 0 on the retrieval metrics "
                "(faithfulness: 0 when the answer makes statements), as ragas does."
            )
        by_reasons: dict[str, list[str]] = {}
        for metric, stats in run.summary["metrics"].items():
            reasons = stats.get("missing_by_reason") or {}
            if reasons:
                said = ", ".join(f"{reason} {count}" for reason, count in reasons.items())
                by_reasons.setdefault(said, []).append(metric)
        for said, names in by_reasons.items():
            yield f"{run.label}: without a value in {', '.join(names)}: {said}"


def format_p_value(p_value: float, n: int, n_resamples: int = P_RESAMPLES) -> str:
    """A paired test's p-value with the digits its Monte Carlo error leaves meaningful.

    With 2^n <= `n_resamples` sign patterns the test counts them all (`statistics.paired_test`):
    p is exact, shown to 3 significant digits. Otherwise p = (1 + hits) / (1 + R) from R random
    patterns, whose standard error is sqrt(p (1 - p) / R): p is shown as `p ± error`, the error to
    one significant digit and p to the same decimal place (`0.031 ± 0.002`). When no pattern
    reached the observed difference (p = 1 / (1 + R), the smallest it can be), p is shown as below
    the rule-of-three 95% upper bound 3 / R, rounded up (`< 0.0003` at R = 10,000).
    """
    if (1 << n) <= n_resamples:
        return f"{p_value:.3g}"
    hits = round(p_value * (n_resamples + 1)) - 1
    if hits <= 0:
        bound = 3 / n_resamples
        digits = -math.floor(math.log10(bound))
        # Rounded up at its first significant digit (less a hair, so 3/10,000 stays 0.0003).
        return f"< {math.ceil(bound * 10**digits - 1e-9) / 10**digits:.{digits}f}"
    error = math.sqrt(p_value * (1 - p_value) / n_resamples)
    if error == 0:
        return f"{p_value:.3g}"  # every pattern reached it: p = 1
    digits = max(0, -math.floor(math.log10(error)))
    return f"{p_value:.{digits}f} ± {error:.{digits}f}"


def _format(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows
    )


def bar_chart(runs: list[EvalRun], metric: str, path: Path) -> Path:
    """A bar chart of one metric across runs with its 95% intervals, like the notebook's (PNG)."""
    plt = pyplot()
    figure = comparison_figure(runs, metric)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def comparison_figure(runs: list[EvalRun], metric: str) -> Any:
    """The figure `bar_chart` saves: one bar per run with a value for `metric`, in percent."""
    plt = pyplot()
    labels: list[str] = []
    means: list[float] = []
    errors: list[list[float]] = [[], []]
    for run in runs:
        stats = run.summary["metrics"].get(metric)
        if not stats or stats["mean"] is None:
            continue
        labels.append(run.label)
        means.append(100 * stats["mean"])
        errors[0].append(100 * (stats["mean"] - stats["low"]))
        errors[1].append(100 * (stats["high"] - stats["mean"]))
    if not labels:
        known = sorted({name for run in runs for name in run.summary["metrics"]})
        raise QagenError(
            f"No run has a value for '{metric}'; choose another `metric` ({', '.join(known)}).", settings=("metric",)
        )
    figure, axes = plt.subplots(figsize=(max(6, 1.6 * len(labels)), 5))
    bars = axes.bar(labels, means, yerr=errors, capsize=4, color="#4c72b0")
    axes.bar_label(bars, labels=[f"{m:.1f}%" for m in means], padding=3)
    axes.set_ylim(0, 105)
    axes.set_ylabel(f"{metric} (%)")
    axes.set_xlabel("RAG settings")
    # Two short lines: the narrowest chart (one or two runs) is 6 inches wide, too narrow for one long line.
    axes.set_title(f"{metric} by RAG settings\n(with 95% bootstrap intervals)")
    plt.setp(axes.get_xticklabels(), rotation=20, ha="right")
    figure.tight_layout()
    return figure
