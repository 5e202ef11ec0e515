"""Compare evaluation runs: a table of metrics with intervals, paired tests, and a bar chart."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from qagen.errors import QagenError
from qagen.evaluate.metrics.statistics import paired_test
from qagen.evaluate.results import row_column, summary_value


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
            columns = {name: row_column(name, summary.get("k")) for name in summary.get("metrics", {})}
            ids, values = _read_scores(results_file, columns)
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


def comparison_table(runs: list[EvalRun]) -> str:
    """Metrics as rows, runs as columns: mean [95% interval] (n); then paired differences vs the first run.

    The paired test compares the runs question by question, on the question ids both have a value
    for (see `statistics.paired_test`); metrics with fewer than two shared questions are left out.
    """
    metrics = list(dict.fromkeys(name for run in runs for name in run.summary["metrics"]))
    header = ["metric", *(run.label for run in runs)]
    lines = [header]
    for metric in metrics:
        cells = [metric]
        for run in runs:
            stats = run.summary["metrics"].get(metric)
            if not stats or stats["mean"] is None:
                cells.append("-")
            else:
                cells.append(f"{stats['mean']:.3f} [{stats['low']:.3f}, {stats['high']:.3f}] n={stats['n']}")
        lines.append(cells)
    text = _format(lines)
    if len(runs) > 1:
        paired = [["metric", "runs", "mean diff [95% CI]", "p", "shared"]]
        base = runs[0]
        for metric in metrics:
            first = base.values(metric)
            for other in runs[1:]:
                second = other.values(metric)
                shared = sorted(first.keys() & second.keys())
                if len(shared) < 2:
                    continue
                result = paired_test([second[i] for i in shared], [first[i] for i in shared])
                paired.append(
                    [
                        metric,
                        f"{other.label} - {base.label}",
                        f"{result.mean_diff:+.3f} [{result.low:+.3f}, {result.high:+.3f}]",
                        f"{result.p_value:.3g}",
                        str(result.n),
                    ]
                )
        if len(paired) > 1:
            text += "\n\npaired on shared questions:\n" + _format(paired)
    return text


def _format(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows
    )


def bar_chart(runs: list[EvalRun], metric: str, path: Path) -> Path:
    """A bar chart of one metric across runs with its 95% intervals, like the notebook's (PNG)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise QagenError("The bar chart needs matplotlib: pip install 'qagen[plot]'.") from exc
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
    axes.set_title(f"{metric} of different RAG configurations (95% bootstrap intervals)")
    plt.setp(axes.get_xticklabels(), rotation=20, ha="right")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path
