"""The evaluation's outputs: one results row per question, and the summary of all rows.

The rows and the summary are records (`records.ResultRow`, `records.ResultsSummary`), whose
field descriptions say what every column means.
"""

from __future__ import annotations

from collections import Counter

from qagen.evaluate.judges.registry import LLM_METRICS, NOT_ITS_TYPE
from qagen.evaluate.metric_columns import metric_column, summary_name, summary_value
from qagen.evaluate.metrics.scoring import (
    DETERMINISTIC_METRICS,
    EVIDENCE_COLUMNS,
    NOT_RETRIEVAL_SCORED,
    PASSAGES_FOUND,
    Reported,
    deterministic_metrics,
    metric_of_column,
    question_evidence,
)
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

MULTI_CALL_METRICS = frozenset({"faithfulness", "context_precision"})
"""Metrics made of several judge calls (statements then verdicts; one call per context)."""

NOT_JUDGED = frozenset({"no_answer", "no_contexts", "no_reference", "not_judged", NOT_ITS_TYPE})
"""Reasons a metric has no value that are no failure of the judge: there was nothing to judge
(the system gave no answer, or never reports contexts), the metric does not score questions of its
type (abstention on a factoid), or the run has not reached this question yet."""

ONE_PASSAGE = "one_passage"
"""Why a question has no `passages_found@k`: it has one passage, whose hit is `hit@k`."""

UNDEFINED = frozenset({"no_statements"})
"""Reasons a judged metric has no value by its definition, which are no failure of the judge either:
an answer with no statement ("I don't know") has no faithfulness (ragas: NaN, left out of means)."""


def metric_columns(llm_metrics: list[str], groups: set[str]) -> list[str]:
    """The per-question value columns, LLM metrics first, in the order the summary lists them."""
    columns = [column for metric in DETERMINISTIC_METRICS if metric.name in groups for column in metric.columns]
    return [*llm_metrics, *columns]


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
    reads_evidence = any(DETERMINISTIC_METRICS.get(group).reads_evidence for group in groups)
    evidence = question_evidence(item) if reads_evidence else None
    return ResultRow(
        id=item.id,
        question=item.question,
        true_answer=item.true_answer,
        source_doc=item.source_doc,
        generated_answer=output.answer,
        answer_error=output.error,
        output_cut=output.cut,
        retrieved_docs=[c.text for c in output.contexts],
        retrieved_sources=[c.source for c in output.contexts],
        evidence=evidence,
        test_settings=system,
        question_type=item.question_type,
        scores=deterministic_metrics(item, output, k, groups, run, evidence),
        judged={metric: _cell(metric, verdict, output, item, k=k, run=run) for metric, verdict in verdicts.items()},
    )


def _cell(
    metric: str, verdict: JudgeVerdict | None, output: RagOutput, item: EvalItem, *, k: int, run: Reported
) -> MetricCell:
    """One LLM metric's cell. An empty retrieval keeps the value its judge gave it (0, as ragas scores
    it) with reason `no_contexts`, so it counts in the mean and the paired tests; but a system that
    never reports contexts is not judged on them at all, as it is not scored on retrieval (`Reported`).
    A metric that does not score the question's type has no value (`NOT_ITS_TYPE`)."""
    # No call was made: no reply, in the shape the metric's replies take.
    none: list[str] | None = [] if metric in MULTI_CALL_METRICS else None
    if not LLM_METRICS.get(metric).judges(item):
        return MetricCell(value=None, reason=NOT_ITS_TYPE, raw=none, detail={})
    empty = LLM_METRICS.get(metric).needs_contexts and output.retrieved_nothing(k)
    if empty and not run.contexts:
        return MetricCell(value=None, reason="no_contexts", raw=none, detail={})
    if verdict is None:
        return MetricCell(
            value=None, reason="no_answer" if output.answer is None else "not_judged", raw=none, detail={}
        )
    value: float | None = verdict.value
    if value is not None and metric == "correctness" and value.is_integer():
        value = int(value)  # the written 1-5 rubric score, as the notebook stores it (an expected rating stays a float)
    raw = list(verdict.raw) if metric in MULTI_CALL_METRICS else (verdict.raw[-1] if verdict.raw else None)
    # The judge model and prompt hashes are the same on every row: the summary has them once.
    detail = {key: part for key, part in verdict.detail.items() if key not in ("model", "prompts")}
    reason = verdict.reason or ("no_contexts" if empty else "")
    return MetricCell(value=value, reason=reason, raw=raw, detail=detail)


def _error_kind(error: str) -> str:
    """An answer error's kind: its first level and, when it is one word too, its second
    (`reader_failed: rate_limited`, `system_error: ValueError`, `bad_response`); the rest is the detail
    of one question, never cut into the kind (`no 'answer' in the reply (its keys are: ...)`)."""
    levels: list[str] = []
    for level in error.split(":", 2)[:2]:
        word = level.strip()
        if not word or len(word.split()) > 1:
            break
        levels.append(word)
    return ": ".join(levels) or error.strip()


def summarise(rows: list[ResultRow], *, k: int, llm_metrics: list[str], groups: set[str]) -> ResultsSummary:
    """Mean and 95% bootstrap interval of every metric over the questions where it has a value,
    and the counts behind them: questions answered and failed (by reason), those the system
    retrieved nothing for, and per LLM metric the verdicts, the judge's failures by reason, the
    questions it had nothing to judge on and those its metric is undefined for. A test set that names
    question types gets the same means per type (`by_type`).

    `correctness` is summarised as the mean of (N-1)/4, the notebook's normalisation, so 1 means
    every answer scored 5; `mrr@k` is the mean reciprocal rank within the top k. `missing` counts
    the questions without a value (`n + missing` = questions), `missing_by_reason` says why.
    """
    columns = metric_columns(llm_metrics, groups)
    # Columns only some questions have (passages_found@k: a test set with questions of several passages).
    chosen = [metric for metric in DETERMINISTIC_METRICS if metric.name in groups]
    optional = [column for metric in chosen for column in metric.optional_columns]
    columns += [column for column in optional if any(column in row.scores for row in rows)]
    metrics = _metric_stats(rows, columns, k)
    types = Counter(row.question_type for row in rows if row.question_type is not None)
    by_type = {name: _metric_stats([row for row in rows if row.question_type == name], columns, k) for name in types}
    errors = [row.answer_error or "unknown" for row in rows if row.generated_answer is None]
    failed = Counter(_error_kind(error) for error in errors)
    first_errors: dict[str, str] = {}
    for error in errors:
        first_errors.setdefault(_error_kind(error), error)
    judges: dict[str, JudgeCounts] = {}
    for metric in llm_metrics:
        cells = [row.judged[metric] for row in rows]
        reasons = Counter(cell.reason for cell in cells if cell.value is None)
        failures = {reason: n for reason, n in sorted(reasons.items()) if reason not in NOT_JUDGED | UNDEFINED}
        judges[metric] = JudgeCounts(
            judged=sum(cell.value is not None for cell in cells),
            retrieved_nothing=sum(cell.value is not None and cell.reason == "no_contexts" for cell in cells),
            failed=sum(failures.values()),
            failures=failures,
            not_judged={reason: n for reason, n in sorted(reasons.items()) if reason in NOT_JUDGED},
            undefined={reason: n for reason, n in sorted(reasons.items()) if reason in UNDEFINED},
            prompts={prompt.name: prompt.hash for prompt in LLM_METRICS.get(metric).load_prompts()},
        )
    # Said only where it matters: the system reports contexts, and some metric reads them.
    reads_contexts = bool(groups) or any(LLM_METRICS.get(metric).needs_contexts for metric in llm_metrics)
    reports_contexts = reads_contexts and any(row.retrieved_docs for row in rows)
    return ResultsSummary(
        k=k,
        metrics=metrics,
        columns={summary_name(column, k): metric_column(column) for column in columns},
        questions=len(rows),
        answered=len(rows) - sum(failed.values()),
        retrieved_nothing=sum(_retrieved_nothing(row, k) for row in rows) if reports_contexts else 0,
        failed=sum(failed.values()),
        failed_by_reason=dict(sorted(failed.items())),
        failed_examples=dict(sorted(first_errors.items())),
        judges=judges,
        question_types=dict(types),
        by_type=by_type,
    )


def _metric_stats(rows: list[ResultRow], columns: list[str], k: int) -> dict[str, MetricStats]:
    """Each column's mean and 95% interval over the rows with a value, and why the others have none."""
    metrics: dict[str, MetricStats] = {}
    for column in columns:
        values = [summary_value(column, float(v)) for row in rows if (v := row.value(column)) is not None]
        why = dict(sorted(Counter(_missing_reason(row, column) for row in rows if row.value(column) is None).items()))
        name = summary_name(column, k)
        if not values:
            metrics[name] = MetricStats(mean=None, low=None, high=None, n=0, missing=len(rows), missing_by_reason=why)
            continue
        ci = mean_ci(values)
        metrics[name] = MetricStats(
            mean=ci.mean, low=ci.low, high=ci.high, n=ci.n, missing=len(rows) - ci.n, missing_by_reason=why
        )
    return metrics


def _retrieved_nothing(row: ResultRow, k: int) -> bool:
    # As `RagOutput.retrieved_nothing`, on the row's copy of the output.
    return row.generated_answer is not None and not any(text.strip() for text in row.retrieved_docs[:k])


def _missing_reason(row: ResultRow, column: str) -> str:
    """Why a row has no value in `column`: the cell's reason for an LLM metric, else whether the
    reference answer is nowhere in its chunk (chunk-level metrics), the system gave no answer, or
    the metric's inputs do not exist for this question."""
    cell = row.judged.get(column)
    if cell is not None:
        return cell.reason or "not_judged"
    metric = metric_of_column(column)
    if metric is not None and not metric.scores(row.question_type):
        return NOT_RETRIEVAL_SCORED
    if column == PASSAGES_FOUND and row.generated_answer is not None:
        return ONE_PASSAGE
    if column in EVIDENCE_COLUMNS and row.evidence is not None and not row.evidence.spans:
        return "answer_not_in_chunk"
    return "no_answer" if row.generated_answer is None else "no_inputs"
