"""The evaluation's outputs: one results row per question, and the summary of all rows.

The rows and the summary are records (`records.ResultRow`, `records.ResultsSummary`), whose
field descriptions say what every column means.
"""

from __future__ import annotations

from collections import Counter

from qagen.evaluate.judges.correctness import normalise_correctness
from qagen.evaluate.judges.registry import LLM_METRICS
from qagen.evaluate.metrics.scoring import DETERMINISTIC_GROUPS, Reported, deterministic_metrics
from qagen.evaluate.metrics.statistics import mean_ci
from qagen.evaluate.records import (
    EvalItem,
    JudgeCounts,
    JudgeVerdict,
    MetricCell,
    MetricStats,
    RagOutput,
    ResultRow,
    ResultsSummary,
)
from qagen.llm.prompts import load_prompt

MULTI_CALL_METRICS = frozenset({"faithfulness", "context_precision"})
"""Metrics made of several judge calls (statements then verdicts; one call per context)."""

NOT_JUDGED = frozenset({"no_answer", "no_contexts", "no_reference", "not_judged"})
"""Reasons a metric has no value that are no failure of the judge: there was nothing to judge
(the system gave no answer or no contexts), or the run has not reached this question yet."""

_SUMMARY_NAMES = {"reciprocal_rank": "mrr", "chunk_reciprocal_rank": "chunk_mrr"}


def metric_columns(llm_metrics: list[str], groups: set[str]) -> list[str]:
    """The per-question value columns, LLM metrics first, in the order the summary lists them."""
    columns = [column for group in DETERMINISTIC_GROUPS if group in groups for column in DETERMINISTIC_GROUPS[group]]
    return [*llm_metrics, *columns]


def summary_name(column: str, k: int) -> str:
    """The summary's name of a row column: `reciprocal_rank` is `mrr`, `hit@k` is `hit@7`."""
    return _SUMMARY_NAMES.get(column, column).replace("@k", f"@{k}")


def row_column(name: str, k: int | None) -> str:
    """The row column a summary metric is computed from (the inverse of `summary_name`)."""
    columns = {summary: column for column, summary in _SUMMARY_NAMES.items()}
    column = columns.get(name, name)
    return column.replace(f"@{k}", "@k") if k is not None else column


def summary_value(column: str, value: float) -> float:
    """A row's value as the summary averages it: correctness as (N-1)/4, the rest as they are."""
    return normalise_correctness(value) if column == "correctness" else value


def result_row(
    item: EvalItem,
    output: RagOutput,
    verdicts: dict[str, JudgeVerdict | None],
    *,
    system: str,
    k: int,
    groups: set[str],
    run: Reported,
) -> ResultRow:
    """One question's row; `verdicts` has an entry for every LLM metric asked for (None: no verdict),
    `run` what the system reports over the run (for `deterministic_metrics`)."""
    return ResultRow(
        id=item.id,
        question=item.question,
        true_answer=item.true_answer,
        source_doc=item.source_doc,
        generated_answer=output.answer,
        answer_error=output.error,
        retrieved_docs=[c.text for c in output.contexts],
        retrieved_sources=[c.source for c in output.contexts],
        test_settings=system,
        scores=deterministic_metrics(item, output, k, groups, run),
        judged={metric: _cell(metric, verdict, output) for metric, verdict in verdicts.items()},
    )


def _cell(metric: str, verdict: JudgeVerdict | None, output: RagOutput) -> MetricCell:
    if verdict is None:
        # No call was made: no reply, in the shape the metric's replies take.
        none: list[str] | None = [] if metric in MULTI_CALL_METRICS else None
        return MetricCell(value=None, reason=_not_judged_reason(metric, output), raw=none, detail={})
    value: float | None = verdict.value
    if value is not None and metric == "correctness":
        value = int(value)  # the 1-5 rubric score, as the notebook stores it
    raw = list(verdict.raw) if metric in MULTI_CALL_METRICS else (verdict.raw[-1] if verdict.raw else None)
    # The judge model and prompt hashes are the same on every row: the summary has them once.
    detail = {k: v for k, v in verdict.detail.items() if k not in ("model", "prompts")}
    return MetricCell(value=value, reason=verdict.reason, raw=raw, detail=detail)


def _not_judged_reason(metric: str, output: RagOutput) -> str:
    if output.answer is None:
        return "no_answer"
    if LLM_METRICS[metric].needs_contexts and not output.contexts:
        return "no_contexts"
    return "not_judged"


def _error_kind(error: str) -> str:
    """An answer error up to its second level: `reader_failed: rate_limited`, `system_error: ValueError`."""
    return ":".join(error.split(":")[:2]).strip()


def summarise(rows: list[ResultRow], *, k: int, llm_metrics: list[str], groups: set[str]) -> ResultsSummary:
    """Mean and 95% bootstrap interval of every metric over the questions where it has a value,
    and the counts behind them: questions answered and failed (by reason), and per LLM metric the
    verdicts, the judge's failures by reason and the questions it had nothing to judge on.

    `correctness` is summarised as the mean of (N-1)/4, the notebook's normalisation, so 1 means
    every answer scored 5; `mrr` is the mean reciprocal rank. `missing` counts the questions
    without a value (`n + missing` = questions).
    """
    metrics: dict[str, MetricStats] = {}
    for column in metric_columns(llm_metrics, groups):
        values = [summary_value(column, float(v)) for row in rows if (v := row.value(column)) is not None]
        name = summary_name(column, k)
        if not values:
            metrics[name] = MetricStats(mean=None, low=None, high=None, n=0, missing=len(rows))
            continue
        ci = mean_ci(values)
        metrics[name] = MetricStats(mean=ci.mean, low=ci.low, high=ci.high, n=ci.n, missing=len(rows) - ci.n)
    failed = Counter(_error_kind(row.answer_error or "unknown") for row in rows if row.generated_answer is None)
    judges: dict[str, JudgeCounts] = {}
    for metric in llm_metrics:
        cells = [row.judged[metric] for row in rows]
        reasons = Counter(cell.reason for cell in cells if cell.value is None)
        judges[metric] = JudgeCounts(
            judged=sum(cell.value is not None for cell in cells),
            failed=sum(n for reason, n in reasons.items() if reason not in NOT_JUDGED),
            failures={reason: n for reason, n in sorted(reasons.items()) if reason not in NOT_JUDGED},
            not_judged={reason: n for reason, n in sorted(reasons.items()) if reason in NOT_JUDGED},
            prompts={name: load_prompt(name).hash for name in LLM_METRICS[metric].prompts},
        )
    return ResultsSummary(
        k=k,
        metrics=metrics,
        questions=len(rows),
        answered=len(rows) - sum(failed.values()),
        failed=sum(failed.values()),
        failed_by_reason=dict(sorted(failed.items())),
        judges=judges,
    )
