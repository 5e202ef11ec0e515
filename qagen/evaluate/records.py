"""The evaluator's records: a test question, a RAG system's output, one judge's verdict, and what
an evaluation hands to the user: a results row per question (`results.jsonl`) and the summary
(`summary.json`)."""

from __future__ import annotations

from typing import Any

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer, model_validator

from qagen.corpus.evidence import Evidence
from qagen.failures import Failure
from qagen.records import BatchSpend, Record, RetrievedContext, Usage


class EvalItem(Record):
    """One question of a test set, with what is known about where its answer lives."""

    id: str = Field(description="Stable id: the dataset's `id` column, else a hash of the question.")
    question: str = Field(description="The question.")
    true_answer: str = Field(description="The reference answer.")
    source_doc: str | None = Field(default=None, description="The document the question was drafted from.")
    context: str | None = Field(default=None, description="The chunk the question was drafted from.")
    start_index: int | None = Field(default=None, description="The chunk's character offset in source_doc.")
    end_index: int | None = Field(default=None, description="start_index + the chunk's length.")
    evidence_start: int | None = Field(
        default=None,
        description="Offset in source_doc of the answer's evidence as the build placed it (the dataset's "
        "`evidence_start`); the chunk-level metrics use it instead of looking for the answer's words.",
    )
    evidence_end: int | None = Field(default=None, description="End offset (exclusive) of that evidence.")
    question_type: str | None = Field(
        default=None,
        description="The question's type (`qagen.question_types`): how its answers are scored; None when the "
        "test set names no types (a factoid).",
    )
    source_docs: tuple[str, ...] = Field(
        default=(),
        description="The documents of every passage the question needs (a multi-hop question's two); empty when "
        "it has one passage (`source_doc`).",
    )


class RagOutput(Record):
    """What the RAG system under test answered, and what it retrieved (best first)."""

    answer: str | None = Field(description="None when the system failed to answer (see `error`).")
    contexts: list[RetrievedContext] = Field(default_factory=list, description="The retrieved passages, best first.")
    error: str = Field(default="", description="Why there is no answer; empty when there is one.")
    usage: Usage = Field(default=Usage(), description="Tokens the system reported for this answer.")
    cut: dict[str, int] = Field(
        default_factory=dict,
        description="What the output cap (`qagen.output_cap.MAX_REPLY_CHARS`) cut: `answer` and `context N` "
        "(0-based, best first) -> the text's length in characters before the cut; empty when nothing was cut.",
    )

    def retrieved_nothing(self, k: int) -> bool:
        """The system answered, and none of its top `k` contexts holds any text."""
        return self.answer is not None and not any(context.text.strip() for context in self.contexts[:k])


class JudgeVerdict(Record):
    """One LLM judge's reading of one answer: a value, or a recorded failure with the raw reply."""

    metric: str = Field(description="The metric the judge scored.")
    value: float | None = Field(description="The metric's value (raw score for 1-5 judges); None when it failed.")
    failure: Failure | None = Field(default=None, description="Why there is no value; None when there is one.")
    raw: list[str] = Field(default_factory=list, description="Every judge reply this verdict was read from.")
    detail: dict[str, object] = Field(
        default_factory=dict, description="Metric-specific parts (statements, verdicts...)."
    )
    usage: Usage = Field(default=Usage(), description="Tokens of every judge call behind this verdict.")

    @property
    def reason(self) -> str:
        """The user-facing reason string; empty when there is a value."""
        return self.failure.reason if self.failure is not None else ""


class AnswerRecord(Record):
    """The RAG system's output for one question, as stored in `answers.jsonl`."""

    id: str = Field(description="Hash of the question and the system's identity (its name and settings).")
    item_id: str = Field(description="The question's id (`EvalItem.id`).")
    system: str = Field(description="The system's name.")
    output: RagOutput = Field(description="What the system answered and retrieved.")


class JudgementRecord(Record):
    """One judge's verdict on one answer, as stored in `judgements.jsonl`."""

    id: str = Field(description="`JudgeTask.key`: the answer, contexts, reference, metric, model and prompts.")
    item_id: str = Field(description="The question's id (`EvalItem.id`).")
    judge_model: str = Field(description="Model spec of the judge.")
    verdict: JudgeVerdict = Field(description="What the judge made of the answer.")

    @property
    def failure(self) -> Failure | None:
        return self.verdict.failure


class SkippedRow(Record):
    """A row of the test set that could not be used, and why (reported, never hidden)."""

    row: int = Field(description="The row's number: a file's line, a spreadsheet's row, a dataset's 1-based index.")
    reason: str = Field(description="Why it was skipped: empty_question, invalid_offsets: ..., duplicate_of_row_N...")
    content: str = Field(description="The row's cells as JSON, cut to 300 characters.")


# --- results.jsonl ------------------------------------------------------------------------------
class MetricCell(Record):
    """One LLM metric `M` on one question, written flat as the columns `M`, `M_reason`, `M_raw`, `M_detail`."""

    value: int | float | None = Field(
        description="`M`: the value (`correctness`: the raw 1-5 score as an int), or None when there is none."
    )
    reason: str = Field(
        description="`M_reason`: why there is no value: a judge failure (`parse_failure`, `refusal`, "
        "`api_error:...`), a reason it was not judged (`results.NOT_JUDGED`) or the metric is undefined "
        "(`results.UNDEFINED`: `no_statements`). Beside a value it is empty, or `no_contexts` when the "
        "system retrieved nothing and the value is what the metric gives an empty retrieval (0, as ragas)."
    )
    raw: str | list[str] | None = Field(
        description="`M_raw`: the judge's reply, or for the metrics that make several calls "
        "(`results.MULTI_CALL_METRICS`) the list of replies in call order; None / [] when no call was made."
    )
    detail: dict[str, Any] = Field(description="`M_detail`: the metric's parts (feedback, statements, verdicts...).")


class ResultRow(Record):
    """One question's row of `results.jsonl`.

    The fixed columns use the cookbook notebook's names (plus `id`, `answer_error`,
    `output_cut`, `retrieved_sources` and `evidence`). The metric columns depend on what was asked for, so they
    are held as two typed maps rather than as loose extra fields (a metric's four columns are one `MetricCell`, and
    the summary reads them by metric, never by a built column name). They are written flat after
    the fixed columns: the deterministic metrics' values (`scores`), then each LLM metric's four
    columns (`judged`), and after `correctness`'s the notebook's `correctness_feedback`.

    The flat form is for the file only: `model_validate` takes the nested form, and `report`
    reads `results.jsonl` as JSON.
    """

    id: str = Field(description="The question's id in the test set.")
    question: str = Field(description="The question.")
    true_answer: str = Field(description="The reference answer.")
    source_doc: str | None = Field(description="The document the question was drafted from, when known.")
    generated_answer: str | None = Field(description="The system's answer; None when it failed to answer.")
    answer_error: str = Field(description="Why there is no answer; empty when there is one.")
    output_cut: dict[str, int] = Field(
        default_factory=dict,
        description="What of the system's output was cut to `qagen.output_cap.MAX_REPLY_CHARS` characters before "
        "any judge read it: `answer` and `context N` -> its length before the cut; empty when nothing was cut.",
    )
    retrieved_docs: list[str] = Field(description="The texts of the contexts the system retrieved, best first.")
    retrieved_sources: list[str | None] = Field(description="Their sources, where the system reports them.")
    test_settings: str = Field(description="The system's name.")
    question_type: str | None = Field(
        default=None,
        description="The question's type, for a test set that names types (`question_type` column); the column "
        "is left out for one that does not.",
    )
    evidence: Evidence | None = Field(
        default=None,
        description="Where the reference answer is written in the question's chunk, which the chunk-level "
        "metrics (`evidence_*`) look for in the retrieved contexts; None when they were not asked for or the "
        "chunk's text is unknown.",
    )
    scores: dict[str, float | None] = Field(
        description="The deterministic metrics asked for (`hit@k`, `token_f1`...), one column each; "
        "None where their inputs do not exist for this question."
    )
    judged: dict[str, MetricCell] = Field(description="The LLM metrics asked for, in the order asked.")

    def value(self, column: str) -> float | None:
        """A metric column's value (None when it has none, or was not asked for)."""
        cell = self.judged.get(column)
        return cell.value if cell is not None else self.scores.get(column)

    @model_serializer(mode="wrap")
    def _flat(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if data.get("question_type") is None:
            data.pop("question_type", None)
        data.update(data.pop("scores", {}))
        for metric, cell in data.pop("judged", {}).items():
            data[metric] = cell["value"]
            data[f"{metric}_reason"] = cell["reason"]
            data[f"{metric}_raw"] = cell["raw"]
            data[f"{metric}_detail"] = cell["detail"]
            if metric == "correctness":
                # The notebook's own column for the judge's feedback (also in the detail).
                data["correctness_feedback"] = cell["detail"].get("feedback")
        return data


# --- summary.json -------------------------------------------------------------------------------
class MetricStats(Record):
    """A metric over the questions where it has a value: the mean and its 95% bootstrap interval."""

    mean: float | None = Field(description="The mean; None when no question has a value.")
    low: float | None = Field(description="Lower bound of the 95% interval.")
    high: float | None = Field(description="Upper bound of the 95% interval.")
    n: int = Field(description="Questions with a value (the mean is over these).")
    missing: int = Field(description="Questions without one (`n + missing` = questions).")
    missing_by_reason: dict[str, int] = Field(
        default_factory=dict,
        description="`missing` by reason (sorted): for an LLM metric its `M_reason` (judge failures, "
        "`no_answer`, `no_statements`...); for the others `no_answer`, `no_inputs` (the question has no "
        "source document or chunk text, or the system reports no sources or contexts), or for `evidence_*` "
        "`answer_not_in_chunk` (the reference answer could not be located in its chunk).",
    )


class MetricColumn(Record):
    """Where a summary metric's per-question values are in `results.jsonl`, and how the summary reads them."""

    results_column: str = Field(
        description="The column of `results.jsonl` holding each question's value; `@k` stands for the cutoff there "
        "(`mrr@7` is the mean of `reciprocal_rank@k`)."
    )
    question_value: str = Field(description="What a question's value in that column is, in a few words.")
    results_range: tuple[float, float] | None = Field(
        description="Where a question's value in that column lies: (1, 5) for correctness, the judge's raw score; "
        "null when its metric states no range (a count)."
    )
    summarised_as: str = Field(
        description="What the summary averages: `value` (the column's values as they are), or the formula each "
        "value goes through first (correctness: `(score - 1) / 4`, the notebook's normalisation)."
    )
    range: tuple[float, float] | None = Field(
        description="Where the summary's mean, low and high lie; null when its metric states no range."
    )


class JudgeCounts(Record):
    """What one LLM metric's judge did over the run."""

    judged: int = Field(description="Questions with a value.")
    retrieved_nothing: int = Field(
        default=0,
        description="Of those, the questions the system retrieved nothing for, scored as ragas scores an "
        "empty retrieval (0; faithfulness 0 when the answer makes statements).",
    )
    failed: int = Field(description="Questions where the judge failed (an error, an unreadable reply).")
    failures: dict[str, int] = Field(description="The failures by reason (sorted).")
    not_judged: dict[str, int] = Field(
        description="Questions with nothing to judge (no answer, no contexts...), by reason (sorted)."
    )
    undefined: dict[str, int] = Field(
        default_factory=dict,
        description="Questions judged, for which the metric has no value by its definition, by reason: "
        '`no_statements` (an answer such as "I don\'t know" makes no statement: faithfulness is undefined, '
        "NaN in ragas, and left out of the mean). No judge failure.",
    )
    prompts: dict[str, str] = Field(description="The hash of each prompt the judge used, by prompt name.")


class ResultsSummary(Record):
    """What the results rows add up to: the part of `summary.json` computed from `results.jsonl`."""

    k: int = Field(description="Contexts judged and scored per question (the top k).")
    metrics: dict[str, MetricStats] = Field(
        description="Every metric by its summary name (`hit@7`, `mrr@7`...), LLM metrics first. `correctness` "
        "is the mean of (score-1)/4, the notebook's normalisation (`columns` says so for each metric)."
    )
    columns: dict[str, MetricColumn] = Field(
        default_factory=dict,
        description="Each metric of `metrics`, by the same name: its column of `results.jsonl` and how the summary "
        "reads it (`correctness`: the judge's 1-5 score there, the mean of (score - 1) / 4 here, on 0-1).",
    )
    questions: int = Field(description="Questions evaluated (the test set's usable rows).")
    answered: int = Field(description="Questions the system answered.")
    retrieved_nothing: int = Field(
        default=0,
        description="Answered questions for which a system that reports contexts retrieved none: scored 0 on "
        "the metrics of the retrieval (ragas' convention), so they stay in the means and the paired tests.",
    )
    failed: int = Field(description="Questions the system failed to answer.")
    failed_by_reason: dict[str, int] = Field(
        description="Those failures by kind: the reason's first level, with its second when that is one word too "
        "(`reader_failed: rate_limited`, `system_error: ValueError`, `bad_response`)."
    )
    failed_examples: dict[str, str] = Field(
        default_factory=dict,
        description="For each kind of `failed_by_reason`, the whole reason of its first question (`bad_response: "
        "no 'answer' in the reply (its keys are: text)`).",
    )
    judges: dict[str, JudgeCounts] = Field(description="Per LLM metric, what its judge did.")
    question_types: dict[str, int] = Field(
        default_factory=dict,
        description="Questions per question type, for a test set that names types (empty for one that does not).",
    )
    by_type: dict[str, dict[str, MetricStats]] = Field(
        default_factory=dict,
        description="Per question type, every metric's mean and interval over that type's questions (as `metrics` "
        "over all of them); empty for a test set that names no types.",
    )


class EvalUsage(Record):
    """Tokens an evaluation used."""

    system: Usage = Field(description="Tokens the system under test reported.")
    judge: Usage = Field(description="Tokens the judges used.")


class EvalSummary(ResultsSummary):
    """An evaluation's `summary.json`, and what `qagen.evaluate` returns: the metrics and counts of
    the results rows (`ResultsSummary`'s fields: `summary.metrics["correctness"].mean`,
    `summary.answered`...), with what was evaluated, how, and what it used.

    Written flat, in the order `system`, `judge_model`, `testset`, then `about`'s entries, then the
    metrics and counts, the skipped rows, the usage and the batch spend; `model_validate` reads that
    flat form back (a key that is no field belongs to `about`).
    """

    system: str = Field(description="The system's name.")
    judge_model: str | None = Field(description="Model spec of the judge; None when no LLM metric was asked.")
    testset: str = Field(description="Where the questions came from.")
    about: dict[str, Any] = Field(
        description="What the caller recorded about the run (models, the system's settings, notes, warnings), "
        "as it gave it."
    )
    skipped_rows: list[SkippedRow] = Field(description="Test set rows that could not be used.")
    usage: EvalUsage = Field(description="Tokens used, by the system and by the judges.")
    batch: dict[str, BatchSpend] = Field(
        default_factory=dict,
        description="Of those, the calls answered in batches, for the system (the baseline's reader) and the "
        "judges: their cost at batch prices and at online prices. Empty when every call was made online.",
    )

    @model_validator(mode="before")
    @classmethod
    def _from_flat(cls, data: Any) -> Any:
        if isinstance(data, dict) and "about" not in data:
            fields = cls.model_fields
            about = {key: value for key, value in data.items() if key not in fields}
            data = {key: value for key, value in data.items() if key in fields} | {"about": about}
        return data

    @model_serializer(mode="wrap")
    def _flat(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        flat: dict[str, Any] = {}
        for name in ("system", "judge_model", "testset", "about", *ResultsSummary.model_fields):
            if name not in data:
                continue
            value = data.pop(name)
            if name == "about":
                flat.update(value)
            else:
                flat[name] = value
        return flat | data  # then the skipped rows, the usage and the batch spend
