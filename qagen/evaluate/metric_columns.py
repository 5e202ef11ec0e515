"""Every metric's names and scales: its column of `results.jsonl`, its name in `summary.json`, and how
the summary reads the column, derived from the registries (`qagen.evaluate.metrics.scoring`: the
columns of qagen's deterministic metrics in `SCORES`, the others' in `DETERMINISTIC_METRICS`;
`qagen.evaluate.judges.registry.LLM_METRICS` for the judged ones).

A row holds what one question got (`hit@k`, `reciprocal_rank@k`, correctness's raw 1-5 score); the
summary the mean over the questions, named as users name it (`hit@7`, `mrr@7`) and on the scale the
notebook reports (correctness as (score - 1) / 4). `summary.json` says so for each metric
(`ResultsSummary.columns`), and `qagen compare` quotes it under its table (`scale_notes`).
"""

from __future__ import annotations

from collections.abc import Iterable

from qagen.evaluate.judges.registry import LLM_METRICS
from qagen.evaluate.metrics.scoring import SCORES, SCORES_BY_COLUMN, metric_of_column
from qagen.evaluate.records import MetricColumn

__all__ = ["metric_column", "row_column", "scale_notes", "summary_name", "summary_value"]

_UNIT = (0.0, 1.0)
_AS_IS = "value"


def summary_name(column: str, k: int) -> str:
    """The summary's name of a row column: `reciprocal_rank@k` is `mrr@7`, `hit@k` is `hit@7`."""
    spec = SCORES_BY_COLUMN.get(column)
    name = spec.summary_name if spec is not None else column
    return name.replace("@k", f"@{k}")


def row_column(name: str, k: int | None) -> str:
    """The row column a summary metric is computed from (the inverse of `summary_name`)."""
    generic = name.replace(f"@{k}", "@k") if k is not None else name
    return next((spec.column for spec in SCORES if spec.summary_name == generic), generic)


def summary_value(column: str, value: float) -> float:
    """A row's value as the summary averages it: correctness as (N-1)/4, the rest as they are."""
    spec = LLM_METRICS.specs().get(column)
    rescaling = spec.summarised_as if spec is not None else None
    return rescaling.apply(value) if rescaling is not None else value


def metric_column(column: str) -> MetricColumn:
    """How the summary reads the row column `column`: what a question's value is and where it lies, as
    its LLM metric says, else the column's declaration (`SCORES`) and its deterministic metric."""
    judged = LLM_METRICS.specs().get(column)
    values: tuple[float, float] | None
    if judged is not None:
        meaning, values, rescaling = judged.help, judged.value_range, judged.summarised_as
    else:
        own, metric = SCORES_BY_COLUMN.get(column), metric_of_column(column)
        meaning = own.help if own is not None else metric.help if metric is not None else ""
        values, rescaling = (metric.value_range if metric is not None else None), None
    return MetricColumn(
        results_column=column,
        question_value=meaning,
        results_range=values,
        summarised_as=rescaling.formula if rescaling is not None else _AS_IS,
        range=rescaling.range if rescaling is not None else values,
    )


def scale_notes(names: Iterable[str], k: int | None) -> list[str]:
    """What the summary values of the metrics `names` mean, one line per metric that is no plain 0-1
    mean of the column of its name: the rescaled ones (correctness), those on another range
    (answer_relevancy's cosines) or on none stated (a count an installed package's metric gives), those
    named apart from their column (`mrr@7`); then one line for the others. Empty when every metric is plain."""
    notes: list[str] = []
    plain: list[str] = []
    for name in names:
        column = row_column(name, k)
        read = metric_column(column)
        if read.range is None:
            notes.append(f"{name}: the mean of results.jsonl's `{column}`, on a range its metric does not state")
        elif read.summarised_as != _AS_IS and read.results_range is not None:
            (low, high), (first, last) = (_bounds(read.range), _bounds(read.results_range))
            notes.append(
                f"{name}: {low} to {high}, the mean of {read.summarised_as} over the {first}-{last} scores in "
                f"results.jsonl's `{column}`"
            )
        elif read.range != _UNIT:
            low, high = _bounds(read.range)
            notes.append(f"{name}: {low} to {high}, the mean of results.jsonl's `{column}`")
        elif k is not None and column.replace("@k", f"@{k}") != name:
            notes.append(f"{name}: 0 to 1, the mean of results.jsonl's `{column}`")
        else:
            plain.append(name)
    if notes and plain:
        cutoff = f" (`@k` there for `@{k}`)" if any(f"@{k}" in name for name in plain) else ""
        notes.append(f"the others: 0 to 1, the mean of the results.jsonl column of their name{cutoff}")
    return notes


def _bounds(values: tuple[float, float]) -> tuple[str, str]:
    return f"{values[0]:g}", f"{values[1]:g}"
