"""The reply rules every parser shares (`qagen.llm.reply_rules`): a table of numbers and replies, and
properties (never raises; a failure kind or a valid score), then the same failure read the same way
by a critic's parser and a judge's."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from qagen.evaluate.judges.parsing import parse_prometheus
from qagen.failures import FailureKind
from qagen.generation.replies import parse_rating
from qagen.llm.reply_rules import MAX_DIGITS, NUMBER, check_score, no_verdict

_NUMBER = re.compile(NUMBER)

SCORE_TABLE: list[tuple[str, int | None, FailureKind | str]] = [
    # (the number as written, score on 1..5, reason)
    ("4", 4, ""),
    ("+4", 4, ""),
    ("4.0", 4, ""),
    ("4,00", 4, ""),
    ("4/5", 4, ""),
    ("4 / 5", 4, ""),
    ("٤", 4, ""),  # Arabic-Indic digits are digits (`\d` reads them)
    ("٤.٠", 4, ""),
    ("1", 1, ""),
    ("5", 5, ""),
    ("0", None, FailureKind.OUT_OF_RANGE),
    ("-0", None, FailureKind.OUT_OF_RANGE),
    ("6", None, FailureKind.OUT_OF_RANGE),
    ("-2", None, FailureKind.OUT_OF_RANGE),
    ("4.5", None, FailureKind.NON_INTEGER),
    ("4,5", None, FailureKind.NON_INTEGER),
    ("0.5", None, FailureKind.NON_INTEGER),
    # float() would round these to 4.0 and 5.0: a score the model never gave.
    ("4.00000000000000001", None, FailureKind.NON_INTEGER),
    ("4.99999999999999999", None, FailureKind.NON_INTEGER),
    ("8/10", None, FailureKind.WRONG_SCALE),
    ("4.5/10", None, FailureKind.WRONG_SCALE),  # the scale is checked first
    ("4/" + "5" * 5000, None, FailureKind.WRONG_SCALE),
    ("9" * 5000, None, FailureKind.OUT_OF_RANGE),
    ("1" * (MAX_DIGITS + 1), None, FailureKind.OUT_OF_RANGE),
    ("4." + "0" * 5000, 4, ""),
    ("4." + "0" * 5000 + "1", None, FailureKind.NON_INTEGER),
]


@pytest.mark.parametrize(("written", "score", "reason"), SCORE_TABLE)
def test_check_score_table(written: str, score: int | None, reason: FailureKind | str) -> None:
    match = _NUMBER.fullmatch(written)
    assert match is not None, written
    assert check_score(match["value"], match["scale"], 1, 5) == (score, reason)


@pytest.mark.parametrize(
    ("reply", "kind"),
    [
        ("", FailureKind.EMPTY_REPLY),
        (" \n\t", FailureKind.EMPTY_REPLY),
        ("I'm sorry, but I can't help with that.", FailureKind.REFUSAL),
        ("**I cannot** rate this.", FailureKind.REFUSAL),
        ("As an AI, I do not judge.", FailureKind.REFUSAL),
        ("Sorry, but I won't.", FailureKind.REFUSAL),
        ("The context says I cannot know.", FailureKind.PARSE_FAILURE),  # only a refusal up front
        ("Looks good to me.", FailureKind.PARSE_FAILURE),
    ],
)
def test_no_verdict_table(reply: str, kind: FailureKind) -> None:
    assert no_verdict(reply) is kind


# Any decimal digits (`\d` matches every script's), signs, separators and scales.
DIGITS = "0123456789٠١٢٣٤٥٦٧٨٩０１２３４５"
digit_runs = st.text(alphabet=DIGITS, min_size=1, max_size=40) | st.text(alphabet="0159", min_size=1, max_size=6000)
written_numbers = st.tuples(
    st.sampled_from(["", "+", "-"]),
    digit_runs,
    st.none() | st.tuples(st.sampled_from([".", ","]), digit_runs).map("".join),
    st.none() | st.tuples(st.sampled_from(["/", " / ", "\t/"]), digit_runs).map("".join),
).map(lambda parts: "".join(part or "" for part in parts))


@given(written_numbers, st.integers(min_value=1, max_value=10))
@example("4/" + "5" * 5000, 5)
@example("9" * 5000, 5)
@settings(max_examples=500)
def test_check_score_never_raises_and_gives_a_failure_kind_or_a_score_on_the_scale(written: str, high: int) -> None:
    match = _NUMBER.fullmatch(written)
    assert match is not None, written
    score, reason = check_score(match["value"], match["scale"], 1, high)
    if score is None:
        assert type(reason) is FailureKind
    else:
        assert reason == "" and type(score) is int and 1 <= score <= high


@given(st.text(max_size=200) | st.sampled_from(["", " ", "I'm sorry", "I cannot", "As an AI"]))
@settings(max_examples=300)
def test_no_verdict_never_raises_and_gives_one_of_three_kinds(reply: str) -> None:
    assert no_verdict(reply) in {FailureKind.EMPTY_REPLY, FailureKind.REFUSAL, FailureKind.PARSE_FAILURE}


@given(written_numbers)
@settings(max_examples=300)
def test_critics_and_judges_read_a_number_alike(written: str) -> None:
    """One rule, so one result: the critic's `Total rating: N` and the judge's `[RESULT] N` give the
    same score or the same failure kind for the same number."""
    rating = parse_rating(f"Evaluation: fine.\nTotal rating: {written}")
    judged = parse_prometheus(f"Feedback: fine. [RESULT] {written}")
    assert (rating.score, rating.reason) == (judged.score, judged.reason)
    assert rating.score is not None or type(rating.reason) is FailureKind
