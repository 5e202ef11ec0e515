"""The evaluation's records are written flat: a results row's metric columns and the summary's
`about` land where `results.jsonl` and `summary.json` have always had them."""

from __future__ import annotations

import json

from qagen.evaluate.judges.registry import LLM_METRICS
from qagen.evaluate.metrics.scoring import SCORES_BY_COLUMN, Reported
from qagen.evaluate.records import EvalItem, EvalSummary, EvalUsage, JudgeVerdict, RagOutput, ResultsSummary, SkippedRow
from qagen.evaluate.results import result_row, summarise
from qagen.records import RetrievedContext, Usage

ITEM = EvalItem(id="q1", question="When was the lighthouse built?", true_answer="In 1871.", source_doc="a.txt")
OUTPUT = RagOutput(answer="In 1871.", contexts=[RetrievedContext(text="Built in 1871.", source="a.txt")])
CORRECT = JudgeVerdict(
    metric="correctness",
    value=5.0,
    raw=["Feedback: Right. [RESULT] 5"],
    detail={"feedback": "Right.", "model": "openai:judge", "prompts": ["correctness"]},
)
FIXED = [
    "id", "question", "true_answer", "source_doc", "generated_answer", "answer_error", "output_cut",
    "retrieved_docs", "retrieved_sources", "test_settings", "evidence",
]  # fmt: skip


def _row() -> dict[str, object]:
    verdicts = {"correctness": CORRECT, "faithfulness": None}
    row = result_row(ITEM, OUTPUT, verdicts, system="bm25", k=7, groups={"text"}, run=Reported(contexts=True))
    return row.model_dump()


def test_a_row_has_the_fixed_columns_then_the_scores_then_each_judged_metric() -> None:
    row = _row()
    assert list(row) == [
        *FIXED,
        "context_rouge_l_recall", "token_f1",
        "correctness", "correctness_reason", "correctness_raw", "correctness_detail", "correctness_feedback",
        "faithfulness", "faithfulness_reason", "faithfulness_raw", "faithfulness_detail",
    ]  # fmt: skip


def test_a_row_keeps_the_notebook_values() -> None:
    row = _row()
    # correctness is the raw 1-5 score as an int; the judge's model and prompts are in the summary only.
    assert row["correctness"] == 5 and type(row["correctness"]) is int
    assert row["correctness_raw"] == "Feedback: Right. [RESULT] 5"
    assert row["correctness_detail"] == {"feedback": "Right."}
    assert row["correctness_feedback"] == "Right."
    # A metric with no verdict: no value, why, and no reply in the shape its replies take.
    assert (row["faithfulness"], row["faithfulness_reason"], row["faithfulness_raw"]) == (None, "not_judged", [])
    assert row["token_f1"] == 1.0


def test_the_summary_writes_about_after_testset_and_the_scores_in_place() -> None:
    rows = [
        result_row(ITEM, OUTPUT, {"correctness": CORRECT}, system="bm25", k=7, groups=set(), run=Reported()),
    ]
    scores = summarise(rows, k=7, llm_metrics=["correctness"], groups=set())
    record = EvalSummary(
        **dict(scores),
        system="bm25",
        judge_model="openai:judge",
        testset="set.jsonl",
        about={"reader_model": "openai:reader", "notes": []},
        skipped_rows=[SkippedRow(row=3, reason="empty_question", content="{}")],
        usage=EvalUsage(system=Usage(input_tokens=1), judge=Usage()),
    )
    summary = record.model_dump(mode="json")
    assert list(summary) == [
        "system", "judge_model", "testset", "reader_model", "notes",
        *ResultsSummary.model_fields, "skipped_rows", "usage", "batch",
    ]  # fmt: skip
    assert summary["metrics"]["correctness"] == {
        "mean": 1.0, "low": 1.0, "high": 1.0, "n": 1, "missing": 0, "missing_by_reason": {}
    }  # fmt: skip
    assert summary["judges"]["correctness"]["judged"] == 1
    assert summary["skipped_rows"] == [{"row": 3, "reason": "empty_question", "content": "{}"}]
    assert summary["usage"]["system"] == {"input_tokens": 1, "output_tokens": 0, "cached_input_tokens": 0}
    json.dumps(summary)  # plain JSON types only
    # The flat form reads back as it was: what is no field goes back into `about`.
    assert EvalSummary.model_validate(summary) == record
    assert EvalSummary.model_validate(summary).about == {"reader_model": "openai:reader", "notes": []}


def test_a_row_says_where_the_answer_was_found_and_the_summary_why_it_was_not() -> None:
    chunk = "The lighthouse was built in 1871 by the council."
    located = ITEM.model_copy(update={"context": chunk, "start_index": 0, "end_index": len(chunk)})
    unlocatable = located.model_copy(update={"id": "q2", "true_answer": "Yes."})
    nowhere = located.model_copy(update={"id": "q3", "context": None})
    output = RagOutput(answer="1871.", contexts=[RetrievedContext(text=chunk, source="a.txt")])
    rows = [
        result_row(item, output, {}, system="bm25", k=7, groups={"retrieval"}, run=Reported(contexts=True))
        for item in (located, unlocatable, nowhere)
    ]
    dumped = [row.model_dump(mode="json") for row in rows]
    assert dumped[0]["evidence"] == {"match": "normalised", "spans": [[25, 32]]}  # "In 1871." as "in 1871"
    assert dumped[0]["evidence_hit@k"] == 1.0
    assert dumped[1]["evidence"] == {"match": "not_found", "spans": []} and dumped[1]["evidence_hit@k"] is None
    assert dumped[2]["evidence"] is None and dumped[2]["evidence_hit@k"] is None  # no chunk text
    stats = summarise(rows, k=7, llm_metrics=[], groups={"retrieval"}).metrics["evidence_hit@7"]
    assert (stats.n, stats.missing_by_reason) == (1, {"answer_not_in_chunk": 1, "no_inputs": 1})


def test_the_summary_says_which_results_column_each_metric_reads_and_on_what_scale() -> None:
    rows = [
        result_row(
            ITEM, OUTPUT, {"correctness": CORRECT}, system="bm25", k=7, groups={"retrieval"}, run=Reported(True, True)
        ),
    ]
    summary = summarise(rows, k=7, llm_metrics=["correctness"], groups={"retrieval"}).model_dump(mode="json")
    assert set(summary["columns"]) == set(summary["metrics"])  # every metric, by its summary name
    assert summary["columns"]["correctness"] == {
        "results_column": "correctness", "question_value": LLM_METRICS.get("correctness").help,
        "results_range": [1.0, 5.0], "summarised_as": "(score - 1) / 4", "range": [0.0, 1.0],
    }  # fmt: skip
    assert summary["columns"]["mrr@7"]["results_column"] == "reciprocal_rank@k"
    assert summary["columns"]["evidence_mrr@7"]["results_column"] == "evidence_reciprocal_rank@k"
    assert summary["columns"]["hit@7"] == {
        "results_column": "hit@k", "question_value": SCORES_BY_COLUMN["hit@k"].help, "results_range": [0.0, 1.0],
        "summarised_as": "value", "range": [0.0, 1.0],
    }  # fmt: skip
    # The row's raw 5 is the summary's 1.0, as the note says.
    assert summary["metrics"]["correctness"]["mean"] == 1.0 and rows[0].judged["correctness"].value == 5
