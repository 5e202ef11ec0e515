"""A system that retrieved nothing for a question: 0 on the retrieval metrics where it reports retrieval
(as ragas scores an empty retrieval), kept in the means and the paired tests, and said so."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from qagen.cli.app import main
from qagen.evaluate.api import evaluate
from qagen.evaluate.config import EvalConfig
from qagen.evaluate.metrics.scoring import EVIDENCE_COLUMNS
from qagen.evaluate.report import comparison_table, load_runs


def _testset(path: Path, n: int) -> Path:
    path.write_text(
        "".join(json.dumps({"question": f"What is item {i}?", "answer": f"Item {i}."}) + "\n" for i in range(n))
    )
    return path


# --------------------------------------------------------------------------- retrieving nothing


def test_an_empty_retrieval_scores_zero_only_for_a_system_that_reports_retrieval(tmp_path: Path) -> None:
    testset = tmp_path / "set.jsonl"
    item = {"source_doc": "a.md", "start_index": 0, "end_index": 14, "context": "Answer 2 or 3."}
    testset.write_text(
        "".join(json.dumps(item | {"question": f"Q{i}?", "answer": f"Answer {i % 2 + 2}"}) + "\n" for i in range(4))
    )

    def retriever(question: str) -> dict[str, Any]:
        if question in ("Q0?", "Q1?"):  # found nothing for these
            return {"answer": "No idea.", "contexts": []}
        contexts = [{"text": "Answer 2 or 3.", "source": "a.md", "start_index": 0, "end_index": 14}]
        return {"answer": "Answer.", "contexts": contexts}

    def plain(question: str) -> str:
        return "Answer."

    def broken(question: str) -> dict[str, Any]:
        if question == "Q0?":
            raise RuntimeError("down")
        return retriever(question)

    config = EvalConfig(testset=testset, metrics=["retrieval", "text"], judge=None)
    evaluate(config, retriever, tmp_path / "retriever", progress=False)
    evaluate(config, plain, tmp_path / "plain", progress=False)
    evaluate(config, broken, tmp_path / "broken", progress=False)

    def column(name: str, metric: str) -> list[float | None]:
        lines = (tmp_path / name / "results.jsonl").read_text().splitlines()
        return [json.loads(line)[metric] for line in lines]

    for metric in ("hit@k", "reciprocal_rank@k", "ndcg@k", *EVIDENCE_COLUMNS):
        assert column("retriever", metric) == [0.0, 0.0, 1.0, 1.0], metric
        assert column("plain", metric) == [None] * 4, metric
        assert column("broken", metric) == [None, 0.0, 1.0, 1.0], metric  # a failed answer: no retrieval value
    assert column("retriever", "context_rouge_l_recall")[:2] == [0.0, 0.0]
    assert column("plain", "context_rouge_l_recall") == [None] * 4
    stats = json.loads((tmp_path / "retriever" / "summary.json").read_text())
    hit = stats["metrics"]["hit@7"]
    assert (hit["mean"], hit["high"], hit["n"], hit["missing"]) == (0.5, 1.0, 4, 0)


CONTEXT_METRICS = ("context_precision", "context_recall", "context_relevance", "grounded", "retrieval_relevant")


def test_an_empty_retrieval_scores_zero_on_the_llm_metrics_and_stays_in_the_paired_test(
    fake_llm: Any, tmp_path: Path
) -> None:
    testset = tmp_path / "set.jsonl"
    testset.write_text(
        "".join(
            json.dumps({"question": f"Q{i}?", "answer": f"The answer is {i}.", "source_doc": "a.md"}) + "\n"
            for i in range(6)
        )
    )
    found = {"text": "The answer is 3. The answer is 4. The answer is 5.", "source": "a.md"}

    def sometimes(question: str) -> dict[str, Any]:
        # The first three retrieve nothing: before the system has reported any context at all.
        if question in ("Q0?", "Q1?"):
            return {"answer": "The answer is 1.", "contexts": []}
        if question == "Q2?":
            return {"answer": "I don't know.", "contexts": []}
        return {"answer": f"The answer is {question[1]}.", "contexts": [found]}

    def always(question: str) -> dict[str, Any]:
        return {"answer": f"The answer is {question[1]}.", "contexts": [found]}

    def plain(question: str) -> str:
        return "The answer is 1."

    metrics = ["ragas", "grounded", "retrieval_relevant"]
    config = EvalConfig(testset=testset, metrics=metrics, judge=fake_llm.client(), concurrency=1)
    stats = evaluate(config, sometimes, tmp_path / "sometimes", progress=False)
    rows = [json.loads(line) for line in (tmp_path / "sometimes" / "results.jsonl").read_text().splitlines()]
    for row in rows[:3]:
        for metric in CONTEXT_METRICS:
            assert (row[metric], row[f"{metric}_reason"]) == (0.0, "no_contexts"), metric
    # faithfulness as ragas: statements that nothing supports are 0; "I don't know" has none: no value.
    assert [(row["faithfulness"], row["faithfulness_reason"]) for row in rows[:3]] == [
        (0.0, "no_contexts"), (0.0, "no_contexts"), (None, "no_statements")
    ]  # fmt: skip
    assert all(row[f"{metric}_reason"] == "" for row in rows[3:] for metric in (*CONTEXT_METRICS, "faithfulness"))
    assert stats.retrieved_nothing == 3
    faithfulness = stats.judges["faithfulness"]
    assert (faithfulness.undefined, faithfulness.failed, faithfulness.retrieved_nothing) == (
        {"no_statements": 1}, 0, 2
    )  # fmt: skip
    assert stats.metrics["faithfulness"].missing_by_reason == {"no_statements": 1}
    lower = 0
    for metric in (*CONTEXT_METRICS, "faithfulness"):
        values = [row[metric] for row in rows if row[metric] is not None]
        judged_before = [row[metric] for row in rows[3:]]  # what the mean was over when these were "not judged"
        summary = stats.metrics[metric]
        assert summary.mean == pytest.approx(sum(values) / len(values)) and summary.n == len(values)
        assert summary.mean <= sum(judged_before) / 3
        lower += summary.mean < sum(judged_before) / 3
    assert lower >= 3  # the stand-in supported some of what was retrieved: retrieving nothing now costs

    evaluate(config, always, tmp_path / "always", progress=False)
    runs = load_runs([tmp_path / "always", tmp_path / "sometimes"])
    for metric in CONTEXT_METRICS:
        assert len(runs[0].values(metric).keys() & runs[1].values(metric).keys()) == 6, metric
    table = comparison_table(runs)
    paired = {line.split()[0]: line for line in table.splitlines() if " - always " in line}
    assert all(paired[metric].endswith(" 6") for metric in CONTEXT_METRICS)
    assert paired["faithfulness"].endswith(" 5")  # the answer without statements has no value to pair
    assert "sometimes: 3 rows retrieved nothing: scored 0 on the retrieval metrics" in table
    faithfulness_line = next(line for line in table.splitlines() if line.startswith("faithfulness "))
    assert "n=5 (few), 1 no_statements" in faithfulness_line

    # A system that never reports contexts is not judged on them, and no call is made for them.
    calls = len(fake_llm.log)
    plain_stats = evaluate(config, plain, tmp_path / "plain", progress=False)
    for metric in (*CONTEXT_METRICS, "faithfulness"):
        assert plain_stats.judges[metric].not_judged == {"no_contexts": 6}
        assert plain_stats.metrics[metric].mean is None
    assert plain_stats.retrieved_nothing == 0
    assert not fake_llm.log[calls:]


def test_the_cli_says_what_retrieved_nothing_and_what_had_no_statements(llm: Any, tmp_path: Path) -> None:
    testset = _testset(tmp_path / "set.jsonl", 4)
    found = {"contexts": ["Item 0 is here. Item 1 is here."], "sources": ["a.md"]}
    answers = [
        {"question": "What is item 0?", "answer": "Item 0.", **found},
        {"question": "What is item 1?", "answer": "Item 1.", **found},
        {"question": "What is item 2?", "answer": "Item 2.", "contexts": []},
        {"question": "What is item 3?", "answer": "I don't know.", "contexts": []},
    ]
    answers_file = tmp_path / "answers.jsonl"
    answers_file.write_text("".join(json.dumps(row) + "\n" for row in answers))
    result = CliRunner().invoke(
        main,
        ["evaluate", str(testset), "--answers", str(answers_file), "--out", str(tmp_path / "eval"), "-q",
         "--metrics", "faithfulness,context_relevance", "--reader-model", "openai:stand-in", "--base-url",
         llm.base_url],
        catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "  2 rows retrieved nothing: scored 0 on the retrieval metrics, as ragas does" in result.stdout
    assert "  faithfulness: 3 judged, 1 no_statements (no value, as in ragas)" in result.stdout
    table = {line.split()[0]: line for line in result.stdout.splitlines() if line.startswith(("faith", "context"))}
    assert table["faithfulness"].endswith("n=3 (few), 1 no_statements")
    assert table["context_relevance"].endswith("n=4 (few)")
    assert "eval: 2 rows retrieved nothing: scored 0 on the retrieval metrics" in result.stdout
    assert "eval: without a value in faithfulness: no_statements 1" in result.stdout
