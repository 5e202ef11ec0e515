"""An answers file's rows paired with a test set's questions: by id, as written, then ignoring case
and spacing; rows that match no question are counted and shown, in the summary and on the CLI."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from qagen.cli.app import main
from qagen.errors import ConfigError
from qagen.evaluate.api import evaluate
from qagen.evaluate.config import EvalConfig
from qagen.evaluate.records import EvalItem
from qagen.evaluate.systems.answers_file import AnswersFileSystem


def item(question: str, item_id: str | None = None) -> EvalItem:
    return EvalItem(id=item_id or f"id-{question}", question=question, true_answer="ref")


def answers(path: Path, rows: list[dict[str, Any]]) -> AnswersFileSystem:
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    return AnswersFileSystem(path)


def answered(system: AnswersFileSystem, items: list[EvalItem]) -> list[str | None]:
    """Each item's answer, once the rows are paired with `items` (as `evaluate` does first)."""
    system.match(items)
    return [asyncio.run(system.answer_item(i)).answer for i in items]


def test_an_upper_case_or_differently_spaced_copy_matches(tmp_path: Path) -> None:
    items = [item("What is BM25?"), item("Who wrote Ｙ?"), item("Where is Z?")]
    system = answers(
        tmp_path / "a.jsonl",
        [
            {"question": "WHAT IS BM25?", "answer": "A ranking function."},
            {"question": "  who\u00a0wrote   y?\n", "answer": "Robertson."},  # NBSP, spaces, full-width Y
        ],
    )
    match = system.match(items)
    assert (match.rows, match.unmatched) == (2, [])
    assert answered(system, items) == ["A ranking function.", "Robertson.", None]
    assert asyncio.run(system.answer_item(items[2])).error == "not_in_answers_file"


def test_rows_matching_no_question_are_counted_with_three_examples_in_one_sentence(tmp_path: Path) -> None:
    rows = [{"question": "What is BM25?", "answer": "A."}] + [
        {"question": f"Unrelated question number {n}?", "answer": "B."} for n in range(5)
    ]
    system = answers(tmp_path / "mine.jsonl", rows)
    match = system.match([item("what is bm25?")])
    assert [row.where for row in match.unmatched] == ["line 2", "line 3", "line 4", "line 5", "line 6"]
    sentence = match.sentence(system.path)
    assert sentence is not None and sentence.count(".") == sentence.count("?") + 1  # one sentence: one full stop
    assert sentence.startswith("5 of the 6 rows of the answers file mine.jsonl match no question of the test set")
    assert "e.g. line 2: 'Unrelated question number 0?'; line 3:" in sentence and "line 5" not in sentence
    assert "line 4: 'Unrelated question number 2?')" in sentence
    # Without any unmatched row there is nothing to say.
    assert answers(tmp_path / "b.jsonl", rows[:1]).match([item("What is BM25?")]).sentence(tmp_path) is None


def test_one_row_answers_two_test_questions_that_are_the_same_question(tmp_path: Path) -> None:
    items = [item("What is US?", "q1"), item("what is us?", "q2")]
    system = answers(tmp_path / "a.jsonl", [{"question": "WHAT IS US?", "answer": "A country."}])
    assert answered(system, items) == ["A country.", "A country."]
    assert system.match(items).unmatched == []


def test_questions_that_differ_only_in_case_are_told_apart_as_written(tmp_path: Path) -> None:
    items = [item("What is US?", "q1"), item("What is us?", "q2")]
    system = answers(
        tmp_path / "a.jsonl",
        [{"question": "What is us?", "answer": "A pronoun."}, {"question": "What is US?", "answer": "A country."}],
    )
    assert answered(system, items) == ["A country.", "A pronoun."]


def test_two_different_answers_to_one_question_ignoring_case_are_refused(tmp_path: Path) -> None:
    items = [item("What is US?", "q1"), item("What is us?", "q2")]
    system = answers(
        tmp_path / "a.jsonl",
        [{"question": "WHAT IS US?", "answer": "A country."}, {"question": "what IS us?", "answer": "A pronoun."}],
    )
    with pytest.raises(ConfigError, match=r"line 1 and line 2 both ask the test-set question 'What is US\?'") as error:
        system.match(items)
    assert "`id`" in str(error.value)  # the way forward


def test_rows_with_ids_are_matched_by_id_first(tmp_path: Path) -> None:
    items = [item("What is US?", "q1"), item("What is us?", "q2")]
    system = answers(
        tmp_path / "a.jsonl",
        [
            {"id": "q2", "question": "WHAT IS US?", "answer": "A pronoun."},
            {"id": "q1", "question": "WHAT IS US?", "answer": "A country."},
            {"id": "q3", "question": "Something else?", "answer": "Lost."},  # an id of no question, nor its text
        ],
    )
    match = system.match(items)
    assert answered(system, items) == ["A country.", "A pronoun."]
    assert [row.where for row in match.unmatched] == ["line 3"]


def test_one_id_with_two_answers_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="line 2: the question of line 1 again, with a different answer"):
        answers(
            tmp_path / "a.jsonl",
            [{"id": "q1", "question": "Q?", "answer": "A."}, {"id": "q1", "question": "Other?", "answer": "B."}],
        )


# --------------------------------------------------------------------------- through evaluate and the CLI


def write_testset(path: Path, questions: list[str]) -> Path:
    path.write_text("".join(json.dumps({"question": q, "answer": f"Ref {n}."}) + "\n" for n, q in enumerate(questions)))
    return path


QUESTIONS = ["What is item 0?", "What is item 1?", "What is item 2?"]
ROWS = [
    {"question": "WHAT IS ITEM 0?", "answer": "Ref 0.", "contexts": ["Ref 0."]},
    {"question": "what is item 1?  ", "answer": "Ref 1.", "contexts": ["Ref 1."]},
    {"question": "What is item 9?", "answer": "Nine.", "contexts": ["Nine."]},
    {"question": "What is item 10?", "answer": "Ten.", "contexts": ["Ten."]},
]


def test_evaluate_warns_and_records_the_unmatched_rows_in_the_summary(tmp_path: Path) -> None:
    testset = write_testset(tmp_path / "set.jsonl", QUESTIONS)
    warnings: list[str] = []
    system = answers(tmp_path / "answers.jsonl", ROWS)
    stats = evaluate(
        EvalConfig(testset=testset, metrics=["text"]),
        system,
        tmp_path / "eval",
        progress=False,
        on_warning=warnings.append,
    )
    assert len(warnings) == 1 and warnings[0].startswith("2 of the 4 rows of the answers file answers.jsonl match no")
    assert "line 3: 'What is item 9?'; line 4: 'What is item 10?'" in warnings[0]
    assert stats.about["warnings"] == warnings
    assert stats.about["answers_file"] == {
        "rows": 4,
        "matched_rows": 2,
        "unmatched_rows": 2,
        "unmatched_examples": [
            {"row": "line 3", "question": "What is item 9?"},
            {"row": "line 4", "question": "What is item 10?"},
        ],
    }
    saved = json.loads((tmp_path / "eval" / "summary.json").read_text())
    assert saved["warnings"] == warnings and saved["answers_file"]["unmatched_rows"] == 2
    rows = [json.loads(line) for line in (tmp_path / "eval" / "results.jsonl").read_text().splitlines()]
    assert [r["generated_answer"] for r in rows] == ["Ref 0.", "Ref 1.", None]  # the case-changed copies matched
    assert (stats.answered, stats.failed_by_reason) == (2, {"not_in_answers_file": 1})


def test_cli_shows_the_unmatched_rows(tmp_path: Path) -> None:
    testset = write_testset(tmp_path / "set.jsonl", QUESTIONS)
    (tmp_path / "answers.jsonl").write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    args = ["evaluate", testset, "--answers", tmp_path / "answers.jsonl", "--metrics", "text", "--out", tmp_path / "e"]
    result = CliRunner().invoke(main, [*map(str, args), "-q"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    warning = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert warning == [
        "warning: 2 of the 4 rows of the answers file answers.jsonl match no question of the test set "
        "(line 3: 'What is item 9?'; line 4: 'What is item 10?') and are not scored; questions are compared "
        "ignoring case and spacing, so these are other questions (or give each row the `id` of its test-set question)."
    ]
