"""An evaluation directory: answers exported, labelled correct or not, imported, and the correctness
judge and the boolean graders compared with the labels (checked against scikit-learn)."""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path
from typing import Any

import pytest
from sklearn.metrics import cohen_kappa_score

from tests.review.conftest import build_run, invoke


def test_answer_labels_measure_the_judge_and_the_graders(llm: Any, corpus: Path, tmp_path: Path) -> None:
    run = build_run(llm, corpus, tmp_path / "run", n=40)
    model = ["--reader-model", "openai:stand-in", "--base-url", llm.base_url]
    evaluation = tmp_path / "eval"
    result = invoke(
        "evaluate", run, "--baseline", "bm25", "--corpus", corpus, *model, "--out", evaluation,
        "--chunk-size", "400", "--metrics", "correctness,correct,relevant", "-q",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    results = {row["id"]: row for row in map(json.loads, (evaluation / "results.jsonl").read_text().splitlines())}

    sheet = tmp_path / "answers.csv"
    exported = invoke("review", evaluation, "--export", sheet, "--size", "12")
    assert exported.exit_code == 0, exported.output
    with sheet.open(encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == ["id", "question", "reference", "answer", "correct", "note", "reviewer"]
    assert len(rows) == 12 and all(row["answer"] == results[row["id"]]["generated_answer"] for row in rows)
    # Stratified by the judge: answers it calls correct and answers it calls wrong are both there.
    verdicts = {(results[row["id"]]["correctness"] - 1) / 4 >= 0.5 for row in rows}
    assert verdicts == {True, False}

    rng = random.Random(3)
    for row in rows:
        row["correct"] = rng.choice(["yes", "no", "no", "yes", ""])
    with sheet.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    imported = invoke("review", evaluation, "--import", sheet, "--reviewer", "ana")
    assert imported.exit_code == 0, imported.output
    labels = [json.loads(line) for line in (evaluation / "labels.jsonl").read_text().splitlines()]
    assert {label["kind"] for label in labels} == {"answer"} and all(label["via"] == "csv" for label in labels)

    requests = len(llm.log)
    report = json.loads(invoke("agreement", evaluation, "--json").output)
    assert len(llm.log) == requests
    labelled = [row for row in rows if row["correct"]]
    people = [row["correct"] == "yes" for row in labelled]
    machines = {
        "correctness": [(results[row["id"]]["correctness"] - 1) / 4 >= 0.5 for row in labelled],
        "correct": [results[row["id"]]["correct"] >= 0.5 for row in labelled],
        "relevant": [results[row["id"]]["relevant"] >= 0.5 for row in labelled],
    }
    assert set(report["measures"]) == set(machines) and report["kind"] == "answer"
    for judge, machine in machines.items():
        measure = report["measures"][judge]
        assert measure["n"] == len(labelled) and sum(measure["confusion"].values()) == len(labelled)
        assert measure["agreement"] == pytest.approx(
            sum(p == m for p, m in zip(people, machine, strict=True)) / len(people)
        )
        if len(set(people) | set(machine)) > 1 and measure["kappa"] is not None:
            assert measure["kappa"] == pytest.approx(cohen_kappa_score(people, machine), abs=1e-12)
    assert report["recommendations"] == [] and report["filter_command"] is None
