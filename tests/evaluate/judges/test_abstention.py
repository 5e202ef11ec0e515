"""The abstention judge (`qagen.evaluate.judges.abstention`) on real RAG answers: real refusals and
real invented answers, from `../shared/reference/data/judged_rag_answers.jsonl` (139 answers of a real
RAG system over Hugging Face docs, each with a real Llama-3-70B correctness score).

Chosen by reading every answer (the rows' `sample_idx`):

- `REFUSALS`: the system said its context does not hold the answer ("There is no information about
  ... in the provided context"), and committed to nothing. Answers that decline and then guess
  anyway (rows 32 and 122) are left out: they are neither.
- `INVENTED`: the system committed to an answer its context did not support, and the real judge
  scored it 1 (wrong): the answer a system that never declines gives.

What is tested offline: each real answer reaches the judge whole, neutralised, between its tags;
the judge's replies are read as a table; and the whole flow (task, stand-in reply, parser) scores
the refusals 1.0 and the invented answers 0.0. How a real model grades them is measured by
`tests/realserver/test_abstention_real.py`.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from qagen.evaluate.judges.abstention import ABSTENTION_SYSTEM, judge_abstention, render_abstention
from qagen.evaluate.records import JudgeVerdict
from qagen.llm.prompts import load_prompt
from qagen.llm.task import Reply
from qagen.llm.untrusted import neutralize
from qagen.records import Usage
from qagen.runs.executor import drive_steps

REFUSALS = (17, 18, 69, 104, 111, 113, 117, 118, 119, 120, 121, 124, 126, 127, 128, 129, 130, 133, 134, 135)
INVENTED = (31, 43, 48, 114, 115, 125, 131, 136, 137)


def _rows(reference_data: Path, wanted: tuple[int, ...]) -> list[dict[str, Any]]:
    lines = (reference_data / "judged_rag_answers.jsonl").read_text(encoding="utf-8").splitlines()
    rows = {row["sample_idx"]: row for row in map(json.loads, lines)}
    return [rows[index] for index in wanted]


@pytest.fixture()
def refusals(reference_data: Path) -> list[dict[str, Any]]:
    return _rows(reference_data, REFUSALS)


@pytest.fixture()
def invented(reference_data: Path) -> list[dict[str, Any]]:
    rows = _rows(reference_data, INVENTED)
    assert all(row["rag_score"] == 1 for row in rows)  # the real judge found every one wrong
    return rows


def test_every_real_answer_reaches_the_judge_whole_between_its_tags(
    refusals: list[dict[str, Any]], invented: list[dict[str, Any]]
) -> None:
    for row in [*refusals, *invented]:
        system, user = render_abstention(row["question"], row["rag_answer"])
        assert system == load_prompt(ABSTENTION_SYSTEM).text.strip()
        assert f"<answer>\n{neutralize(row['rag_answer'])}\n</answer>" in user
        assert f"<question>\n{neutralize(row['question'])}\n</question>" in user
    assert "Grade true when the answer declines" in system and "Grade false when the answer commits" in system


def _verdict(question: str, answer: str, reply: str) -> JudgeVerdict:
    async def call(request: Any) -> Reply:
        return Reply(reply, Usage(input_tokens=3, output_tokens=2))

    return asyncio.run(drive_steps(judge_abstention(question, answer, "m"), call))


@pytest.mark.parametrize(
    ("reply", "value", "reason"),
    [
        ("Explanation: it says the context has no information.\nGrade: true", 1.0, ""),
        ("Explanation: it names a batch size.\nGrade: false", 0.0, ""),
        ("**Explanation:** declines.\n**Grade:** True", 1.0, ""),
        ('{"explanation": "commits", "grade": false}', 0.0, ""),
        ("Explanation: unclear.\nGrade: maybe", None, "invalid_grade"),
        ("", None, "empty_reply"),
        ("I'm sorry, but I can't help with that.", None, "refusal"),
    ],
)
def test_the_judges_replies_are_read_as_a_table(reply: str, value: float | None, reason: str) -> None:
    verdict = _verdict("What is the dropout rate of the model?", "There is no information about it.", reply)
    assert (verdict.metric, verdict.value, verdict.reason) == ("abstention", value, reason)
    assert verdict.raw == [reply]


def test_the_stand_in_flow_scores_real_refusals_one_and_real_invented_answers_zero(
    refusals: list[dict[str, Any]], invented: list[dict[str, Any]], fake_llm: Any
) -> None:
    client = fake_llm.client()

    def score(row: dict[str, Any]) -> float | None:
        step = judge_abstention(row["question"], row["rag_answer"], client.settings.spec)
        return asyncio.run(drive_steps(step, client.complete)).value

    assert [score(row) for row in refusals] == [1.0] * len(refusals)
    assert [score(row) for row in invented] == [0.0] * len(invented)
