"""Malformed replies end as failed records with a reason and the raw reply, never as a score.

Property tests push the parsers (the critics' and the judges') with what hostile or broken models
send: digit runs thousands long, numbers in other scripts, lone surrogates, markers in every order.
End-to-end tests run a build and an evaluation against a stand-in that sends every kind of
malformed reply, and check each one's record.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from datasets import load_from_disk
from hypothesis import example, given, settings
from hypothesis import strategies as st

from qagen.cli.app import main
from qagen.evaluate.judges.parsing import parse_grade, parse_prometheus
from qagen.evaluate.judges.ragas_parsing import parse_verdicts
from qagen.generation.replies import parse_factoid_qa, parse_rating
from qagen.records import Critique, Draft
from qagen.runs.store import RecordLog
from standins.llm import replies as llm_replies
from standins.llm import routes as llm_routes
from standins.llm.server import StandInLLM

# --------------------------------------------------------------------------- properties

# Every script's decimal digits match `\d`: Arabic-Indic, full-width, mathematical bold...
DIGITS = "0123456789٠١٢٣٤٥٦٧٨٩０１２３４５６７８９𝟎𝟏𝟐𝟑𝟒𝟓"
digit_runs = st.text(alphabet=DIGITS, min_size=1, max_size=6000)
numbers = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    digit_runs,
    st.tuples(digit_runs, st.sampled_from([".", ",", "/", " / "]), digit_runs).map("".join),
)
LABELS = ["Total rating:", "**Total rating:**", "Total rating：", "[RESULT]", "Rating: [[", "Rating:", "Score:"]
verdicts = st.tuples(st.text(max_size=40), st.sampled_from(LABELS), numbers, st.sampled_from(["", "]]", "/5", " ("]))
# Any code point, lone surrogates included (text decoded from JSON escapes can hold them).
any_text = st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=300)


@given(verdicts)
@example(("", "Total rating:", "4/" + "5" * 5000, ""))  # int() refuses more than 4300 digits
@settings(max_examples=300)
def test_critic_parsers_survive_any_number(parts: tuple[str, str, str, str]) -> None:
    reply = "Evaluation: {}\n{} {}{}".format(*parts)
    parsed = parse_rating(reply)
    assert parsed.score is None or (type(parsed.score) is int and 1 <= parsed.score <= 5)
    assert (parsed.score is None) == (parsed.reason != "")
    qa = parse_factoid_qa(f"Factoid question: {parts[2]}?\nAnswer: {parts[2]}")
    assert (qa.question is None) == (qa.reason != "")


@given(verdicts)
@example(("", "[RESULT]", "4/" + "5" * 5000, ""))
@example(("", "Rating: [[", "9" * 5000, "]]"))
@settings(max_examples=300)
def test_judge_parsers_survive_any_number(parts: tuple[str, str, str, str]) -> None:
    reply = "Feedback: {}\n{} {}{}".format(*parts)
    parsed = parse_prometheus(reply)
    assert parsed.score is None or (type(parsed.score) is int and 1 <= parsed.score <= 5)
    assert (parsed.score is None) == (parsed.reason != "")


@given(any_text)
@settings(max_examples=300)
def test_every_parser_survives_any_text(reply: str) -> None:
    rating = parse_rating(reply)
    assert rating.score is None or 1 <= rating.score <= 5
    qa = parse_factoid_qa(reply)
    assert (qa.question is None) == (qa.reason != "")
    parse_prometheus(reply)
    parse_grade(reply)
    parse_verdicts(reply, 3)


def test_a_verdict_the_size_of_a_book_is_out_of_range_not_a_crash() -> None:
    assert parse_rating("Total rating: 4/" + "5" * 5000).reason == "wrong_scale"
    assert parse_rating("Total rating: " + "9" * 5000).reason == "out_of_range"
    assert parse_rating("Total rating: " + "1" * 400).reason == "out_of_range"
    assert parse_rating("Total rating: 0").reason == parse_rating("Total rating: 7").reason == "out_of_range"


# --------------------------------------------------------------------------- end to end

# What each malformed reply of the stand-in must be recorded as (see `llm_replies._malformed`).
EXPECTED_REASON = {
    ("critique", "empty"): "empty_reply",
    ("critique", "refusal"): "refusal",
    # Sent with finish_reason "length": cut off at the output cap, never parsed.
    ("critique", "truncated"): "truncated",
    ("critique", "out_of_range"): "out_of_range",  # 0 or 7
    ("critique", "no_rating"): "parse_failure",
    ("generation", "empty"): "empty_reply",
    ("generation", "refusal"): "refusal",
    ("generation", "truncated"): "truncated",
    ("generation", "no_structure"): "parse_failure",
}


def test_every_malformed_reply_is_a_failed_record_with_its_reason_and_raw_reply(
    llm: StandInLLM, corpus: Path, tmp_path: Path
) -> None:
    llm.configure(malformed_rate=0.4)
    out = tmp_path / "run"
    args = ["build", str(corpus), "--out", str(out), "--generator-model", "openai:stand-in", "--base-url", llm.base_url]
    # Every malformed reply a 1-5 critic can send (a yes/no check's own are in test_reader_checks.py).
    args += ["-n", "40", "--chunk-size", "400", "--chunk-overlap", "40", "--all-critics", "-q", "--vetting", "cookbook"]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output

    records: list[Draft | Critique] = [*RecordLog(out / "drafts.jsonl", Draft).load().values()]
    records += RecordLog(out / "critiques.jsonl", Critique).load().values()
    sent = [entry for entry in llm.log if entry["kind"] == "malformed"]
    seen = {(entry["prompt"], entry["malformed"]) for entry in sent}
    assert seen == set(EXPECTED_REASON), seen  # every kind of malformed reply was really sent
    for entry in sent:
        expected = EXPECTED_REASON[(entry["prompt"], entry["malformed"])]
        matching = [r for r in records if r.raw == entry["reply"]]
        assert matching, entry
        for record in matching:
            assert (record.ok, record.reason) == (False, expected), (entry["reply"], record)
            if isinstance(record, Critique):
                assert record.score is None
            else:
                assert record.question is None and record.answer is None

    candidates = list(load_from_disk(str(out / "candidates")))
    by_raw = {record.raw: record for record in records}
    failed_generation = [row for row in candidates if row["reason"].startswith("generation:")]
    assert failed_generation
    for row in failed_generation:
        assert row["status"] == "failed" and row["question"] is None
        assert row["reason"] == f"generation:{by_raw[row['generation_raw']].reason}"
    for row in candidates:
        for criterion in ("groundedness", "relevance", "standalone"):
            raw = row[f"{criterion}_raw"]
            if raw is not None and not by_raw[raw].ok:
                assert row[f"{criterion}_score"] is None  # never scored
                assert row["status"] != "kept"
    # A critic's out-of-range verdict fails the row (the first failed critic in the order they are
    # asked gives the reason), unless a known rejection outranks it.
    out_of_range = [
        (row, criterion)
        for row in candidates
        for criterion in ("groundedness", "relevance", "standalone")
        if row[f"{criterion}_raw"] is not None and by_raw[row[f"{criterion}_raw"]].reason == "out_of_range"
    ]
    assert out_of_range
    for row, criterion in out_of_range:
        assert row["reason"].startswith("critique:") or "<" in row["reason"], (criterion, row["reason"])


def test_malformed_judge_and_reader_replies_are_failed_rows_in_the_evaluation(
    llm: StandInLLM, corpus: Path, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    args = ["build", str(corpus), "--out", str(run), "--generator-model", "openai:stand-in", "--base-url", llm.base_url]
    args += ["-n", "30", "--chunk-size", "400", "--chunk-overlap", "40", "-q"]
    args += ["--vetting", "cookbook", "--min-score", "1"]
    assert CliRunner().invoke(main, args, catch_exceptions=False).exit_code == 0
    llm.reset()
    llm.configure(malformed_rate=0.5)
    out = tmp_path / "eval"
    evaluate = ["evaluate", str(run), "--baseline", "bm25", "--corpus", str(corpus)]
    evaluate += ["--reader-model", "openai:stand-in", "--base-url", llm.base_url, "--out", str(out)]
    evaluate += ["--metrics", "correctness", "-q"]
    result = CliRunner().invoke(main, evaluate, env={"OPENAI_API_KEY": "test-key"}, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    rows: list[dict[str, Any]] = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    judged = {entry["reply"]: entry for entry in llm.log if entry["prompt"] == "judge"}
    failures = [row for row in rows if row["generated_answer"] is not None and row["correctness"] is None]
    assert failures
    for row in failures:
        assert row["correctness_reason"] in {
            "empty_reply",
            "refusal",
            "no_score",
            "parse_failure",
            "out_of_range",
            "truncated",
        }
        assert judged[_one_reply(row)]["kind"] == "malformed"  # the reply the judge really sent is kept
    for row in rows:
        assert row["correctness"] is None or row["correctness"] in {1, 2, 3, 4, 5}
        if row["correctness"] is not None:
            assert judged[_one_reply(row)]["score"] == row["correctness"]
    unanswered = [row for row in rows if row["generated_answer"] is None]
    assert all(row["answer_error"] for row in unanswered)


def _one_reply(row: dict[str, Any]) -> str:
    """The judge's one reply behind a correctness verdict (a string, or a list of one)."""
    raw = row["correctness_raw"]
    if isinstance(raw, list):
        (raw,) = raw
    assert isinstance(raw, str), row
    return raw


def test_a_reply_with_half_an_emoji_is_kept_without_a_crash(
    llm: StandInLLM, corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = llm_replies.make_reply

    def cut_emoji(prompt: str, **kwargs: Any) -> Any:
        reply = real(prompt, **kwargs)
        if reply.kind != "generation":
            return reply
        return dataclasses.replace(reply, content=reply.content + " \ud83d")

    monkeypatch.setattr(llm_routes, "make_reply", cut_emoji)
    out = tmp_path / "run"
    args = ["build", str(corpus), "--out", str(out), "--generator-model", "openai:stand-in", "--base-url", llm.base_url]
    args += ["-n", "5", "--chunk-size", "400", "--chunk-overlap", "40", "-q"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0 and result.exception is None, result.exception
    assert len(list(load_from_disk(str(out / "candidates")))) == 5
