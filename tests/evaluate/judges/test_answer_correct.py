"""The `answer_correct` judge: the reference's key terms, the yes/no read as P(yes) or (no token
probabilities) as written, the key-term cap, and through `qagen evaluate` against the stand-in with and
without token probabilities (the fallback said once)."""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner

from qagen.cli.app import main
from qagen.evaluate.api import JUDGE_NO_TOKEN_PROBABILITIES
from qagen.evaluate.judges.answer_correct import CORRECT_AT, NO_KEY_TERM_CAP, judge_answer_correct
from qagen.evaluate.judges.transcript import JudgeStep
from qagen.evaluate.metrics.key_terms import key_term_evidence, key_terms
from qagen.evaluate.records import JudgeVerdict
from qagen.llm.task import Reply, Request, TokenChoice
from qagen.records import Usage
from qagen.review.eval_answers import judge_says_correct
from qagen.runs.executor import drive_steps
from standins.llm.server import StandInLLM

QUESTION = "In what order does git log list commits by default?"
REFERENCE = "In reverse chronological order."


def _judged(step: JudgeStep, reply: Reply) -> tuple[JudgeVerdict, list[Request]]:
    asked: list[Request] = []

    async def complete(request: Request) -> Reply:
        asked.append(request)
        return reply

    return asyncio.run(drive_steps(step, complete)), asked


def _yes_no(written: str, p_yes: float | None) -> Reply:
    """A one-word reply; with `p_yes`, its token with yes and no among the alternatives."""
    if p_yes is None:
        return Reply(written, Usage(input_tokens=10, output_tokens=1))
    top = (("Yes", math.log(p_yes)), ("No", math.log(1 - p_yes)))
    return Reply(written, Usage(input_tokens=10, output_tokens=1), tokens=(TokenChoice(written, top),))


def test_key_terms_leave_out_what_the_question_already_says() -> None:
    assert key_terms(QUESTION, REFERENCE) == ("reverse", "chronological")
    # Every content word of the reference is in the question: they are all its key terms.
    assert key_terms("Which module handles gzip?", "gzip") == ("gzip",)
    evidence = key_term_evidence(QUESTION, "Newest first, in reverse chronology.", REFERENCE)
    assert evidence.found == ("reverse", "chronological")  # "chronology" shares its first five letters
    assert evidence.containment == 1.0
    none = key_term_evidence(QUESTION, "Commits are listed by author name.", REFERENCE)
    assert none.found == () and none.containment == 0.0 and none.token_f1 == 0.0


def test_the_verdict_is_p_yes_where_the_server_sent_token_probabilities() -> None:
    verdict, asked = _judged(
        judge_answer_correct(QUESTION, "Newest first: reverse chronological.", REFERENCE, "m"), _yes_no("Yes", 0.8)
    )
    assert verdict.value == 0.8 and verdict.detail["read_as"] == "probability" and verdict.detail["p_yes"] == 0.8
    assert verdict.detail["written"] == "yes" and verdict.detail["capped"] is False
    assert len(asked) == 1 and "reverse chronological order" in asked[0][-1].content
    # A written No whose probability still leans to yes is what the probability says (the written word is kept).
    leaning, _ = _judged(judge_answer_correct(QUESTION, "In reverse order.", REFERENCE, "m"), _yes_no("No", 0.6))
    assert leaning.value == 0.6 and leaning.detail["written"] == "no"


def test_without_token_probabilities_the_written_verdict_is_the_value() -> None:
    yes, _ = _judged(judge_answer_correct(QUESTION, "Reverse chronological.", REFERENCE, "m"), _yes_no("Yes.", None))
    no, _ = _judged(judge_answer_correct(QUESTION, "Reverse chronological.", REFERENCE, "m"), _yes_no("No", None))
    assert (yes.value, yes.detail["read_as"], yes.detail["p_yes"]) == (1.0, "written", None)
    assert (no.value, no.detail["read_as"]) == (0.0, "written")


def test_an_answer_holding_only_the_words_the_question_gives_is_not_capped() -> None:
    # The answer's word is in the question: no key term of the reference, but a word of it (tuning half).
    question = "What command in git-sparse-checkout allows you to disable the core.sparseCheckout setting?"
    reference = "The `disable` command is used to disable the `core.sparseCheckout` config setting."
    verdict, _ = _judged(
        judge_answer_correct(question, "Use the disable command.", reference, "m"), _yes_no("Yes", 0.7)
    )
    assert verdict.detail["key_terms_found"] == [] and verdict.detail["reference_words_shared"] == 2
    assert verdict.value == 0.7 and verdict.detail["capped"] is False


def test_an_answer_without_any_key_term_cannot_pass() -> None:
    verdict, _ = _judged(judge_answer_correct(QUESTION, "By author name.", REFERENCE, "m"), _yes_no("Yes", 0.99))
    assert verdict.value == NO_KEY_TERM_CAP < CORRECT_AT and verdict.detail["capped"] is True
    assert verdict.detail["key_terms_found"] == [] and verdict.detail["reference_words_shared"] == 0
    assert verdict.detail["p_yes"] == 0.99
    assert not judge_says_correct("answer_correct", verdict.value)
    assert judge_says_correct("answer_correct", CORRECT_AT) and judge_says_correct("correctness", 3.0)


def test_an_unreadable_reply_is_a_failure_with_its_evidence() -> None:
    verdict, _ = _judged(judge_answer_correct(QUESTION, "x", REFERENCE, "m"), _yes_no("Maybe so.", None))
    assert verdict.value is None and verdict.reason == "parse_failure"
    assert verdict.detail["key_terms"] == ["reverse", "chronological"]


def _evaluate(server: StandInLLM, tmp_path: Path, name: str, extra: Sequence[str] = ()) -> tuple[str, Path]:
    testset, answers = tmp_path / "set.jsonl", tmp_path / "answers.jsonl"
    references = ["Reverse chronological order.", "The default port is 8080.", "It uses gzip compression."]
    replies = ["Newest first, reverse chronological order.", "It listens on 9090.", "Commits by author."]
    testset.write_text("".join(json.dumps({"id": f"q{i}", "question": f"Q{i}?", "answer": a}) + "\n"
                               for i, a in enumerate(references)))  # fmt: skip
    answers.write_text("".join(json.dumps({"id": f"q{i}", "question": f"Q{i}?", "answer": a}) + "\n"
                               for i, a in enumerate(replies)))  # fmt: skip
    out = tmp_path / name
    args = ["evaluate", str(testset), "--answers", str(answers), "--out", str(out), "--reader-model",
            "openai:stand-in", "--base-url", server.base_url, "--metrics", "answer_correct", "-q", *extra]  # fmt: skip
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stderr, out


def _rows(out: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def test_a_judge_server_without_token_probabilities_falls_back_to_the_written_verdict_said_once(
    tmp_path: Path,
) -> None:
    with StandInLLM() as server:  # sends no token probabilities, as many servers do unless asked
        stderr, out = _evaluate(server, tmp_path, "eval")
        asked = [entry for entry in server.log if entry["kind"] == "judge_answer_correct"]
    assert stderr.count(JUDGE_NO_TOKEN_PROBABILITIES) == 1
    summary = json.loads((out / "summary.json").read_text())
    assert summary["notes"].count(JUDGE_NO_TOKEN_PROBABILITIES) == 1
    rows = _rows(out)
    assert [row["answer_correct_detail"]["read_as"] for row in rows] == ["written"] * 3  # type: ignore[index]
    # The stand-in says Yes when the response holds half the reference's words: only the first does.
    # The requests run concurrently, so the log's order is the server's: compared as a multiset.
    assert sorted(entry["score"] for entry in asked) == [0, 0, 1]
    assert [row["answer_correct"] for row in rows] == [1.0, 0.0, 0.0]


def test_a_judge_server_with_token_probabilities_gives_p_yes_and_no_note(tmp_path: Path) -> None:
    with StandInLLM() as server:
        server.configure(logprobs=True)
        stderr, out = _evaluate(server, tmp_path, "eval")
    assert JUDGE_NO_TOKEN_PROBABILITIES not in stderr
    assert JUDGE_NO_TOKEN_PROBABILITIES not in json.loads((out / "summary.json").read_text())["notes"]
    rows = _rows(out)
    assert [row["answer_correct_detail"]["read_as"] for row in rows] == ["probability"] * 3  # type: ignore[index]
    # The stand-in's Yes holds 0.9 of yes, its No 0.1.
    assert [row["answer_correct"] for row in rows] == pytest.approx([0.9, 0.1, 0.1])
