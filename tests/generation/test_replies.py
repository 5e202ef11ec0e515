"""Parsers: tables of real replies (read from ../shared), hand-made traps, and property tests."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from qagen.failures import FailureKind
from qagen.generation.replies import parse_factoid_qa, parse_labelled_qa, parse_rating


def _records(reference_data: Path, kind: str) -> list[dict[str, Any]]:
    lines = (reference_data / "real_llm_outputs.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines if line.strip()]
    return [row for row in rows if row["kind"] == kind]


def test_every_real_critique_reply_gives_its_known_score(reference_data: Path) -> None:
    records = _records(reference_data, "critique")
    assert records, "the reference file has critique records"
    for record in records:
        parsed = parse_rating(record["raw"])
        assert parsed.reason == "", record["raw"][:200]
        assert parsed.score == int(record["expected_score"])
        # The rationale is the model's own, never one of its invented continuation blocks.
        assert parsed.rationale and "Feedback:::" not in parsed.rationale


def test_runaway_continuations_do_not_change_the_verdict(reference_data: Path) -> None:
    runaway = [r for r in _records(reference_data, "critique") if "Feedback:::" in r["raw"]]
    assert runaway, "the reference file has runaway continuations"
    for record in runaway:
        later_ratings = record["raw"].split("Feedback:::", 1)[1]
        assert "Total rating" in later_ratings  # the trap: further, different ratings follow
        assert parse_rating(record["raw"]).score == int(record["expected_score"])


def test_every_real_generation_reply_gives_its_question_and_answer(reference_data: Path) -> None:
    records = _records(reference_data, "qa_generation")
    assert len(records) >= 30
    for record in records:
        parsed = parse_factoid_qa(record["raw"])
        assert parsed.reason == ""
        assert parsed.question == record["expected_question"].strip()
        assert parsed.answer == record["expected_answer"].strip()


def test_real_generation_critic_scores_are_in_range(reference_data: Path) -> None:
    # The cookbook's own critic scores beside its drafts: valid 1-5 integers or missing (NaN).
    for record in _records(reference_data, "qa_generation"):
        for key in ("groundedness_score", "relevance_score", "standalone_score"):
            value = record.get(key)
            if value is not None and not math.isnan(value):
                assert 1 <= value <= 5 and float(value).is_integer()


RATING_TABLE = [
    # (reply, score, reason)
    ("Evaluation: clear.\nTotal rating: 4", 4, ""),
    ("Evaluation: clear.\nTotal rating:  2", 2, ""),
    ("Evaluation: clear.\n**Total rating:** 4", 4, ""),
    ("Evaluation: clear.\n**Total rating: 5**", 5, ""),
    ("Evaluation: clear.\nTotal Rating: **3**", 3, ""),
    ("Evaluation: clear.\nTotal rating: 4/5", 4, ""),
    ("Evaluation: clear.\nTotal rating: 4.0", 4, ""),
    ("Evaluation: clear.\nTotal rating:\n4", 4, ""),
    ("Evaluation: clear.\nTotal rating: 5 (Excellent)\nConfidence: 95%", 5, ""),
    ("total rating: 1", 1, ""),
    # The template echoed back first, then the real verdict.
    (
        "Answer:::\nEvaluation: (your rationale for the rating, as a text)\n"
        "Total rating: (your rating, as a number between 1 and 5)\n\nAnswer:::\nEvaluation: ok\nTotal rating: 3",
        3,
        "",
    ),
    # A runaway continuation after the verdict is ignored; one before a missing verdict is not used.
    ("Evaluation: a\nTotal rating: 2\n\nFeedback:::\nEvaluation: b\nTotal rating: 5", 2, ""),
    ("Evaluation: no number here.\n\nFeedback:::\nEvaluation: b\nTotal rating: 5", None, "parse_failure"),
    # Failures are recorded, never guessed or clamped.
    ("Total rating: 0", None, "out_of_range"),
    ("Total rating: 7", None, "out_of_range"),
    ("Total rating: -1", None, "out_of_range"),
    ("Total rating: 4.5", None, "non_integer_rating"),
    ("Total rating: 4.99999999999999999", None, "non_integer_rating"),  # not rounded to 5
    ("Total rating: 8/10", None, "wrong_scale"),
    ("The question is good. I would give it four.", None, "parse_failure"),
    ("Rating: 4", None, "parse_failure"),
    ("", None, "empty_reply"),
    ("   \n", None, "empty_reply"),
    ("I'm sorry, but I can't help with that.", None, "refusal"),
    ("Evaluation: The question asks about the", None, "parse_failure"),
    ("Answer:::\nEvaluation: (your rationale for the rating)\nTotal rating: (your rating)", None, "template_echo"),
]


@pytest.mark.parametrize(("reply", "score", "reason"), RATING_TABLE)
def test_rating_table(reply: str, score: int | None, reason: str) -> None:
    parsed = parse_rating(reply)
    assert (parsed.score, parsed.reason) == (score, reason)
    assert parsed.reason == "" or type(parsed.reason) is FailureKind


def test_rationale_is_the_evaluation_text() -> None:
    parsed = parse_rating("Answer:::\nEvaluation: The question is clear and useful.\nTotal rating: 5")
    assert parsed.rationale == "The question is clear and useful."


QA_TABLE = [
    ("Factoid question: What is X?\nAnswer: Y", "What is X?", "Y", ""),
    ("Output:::\nFactoid question: What is X?\nAnswer: Y\n", "What is X?", "Y", ""),
    ("**Factoid question:** What is X?\n**Answer:** Y", "What is X?", "Y", ""),
    ("Factoid question: Was ist X?\nAnswer: Y ist Z.", "Was ist X?", "Y ist Z.", ""),
    ("Factoid question: 什么是X？\nAnswer: 是Y。", "什么是X？", "是Y。", ""),
    ("Factoid question: Q1?\nAnswer: A1\nFactoid question: Q2?\nAnswer: A2", "Q1?", "A1", ""),
    ("Factoid question: Q1?\nAnswer: A1\n\nOutput:::\nFactoid question: Q2?\nAnswer: A2", "Q1?", "A1", ""),
    (
        "Output:::\nFactoid question: (your factoid question)\nAnswer: (your answer to the factoid question)\n\n"
        "Output:::\nFactoid question: Q?\nAnswer: A",
        "Q?",
        "A",
        "",
    ),
    ("Factoid question: What is X?", None, None, "no_answer"),
    ("Factoid question: \nAnswer: Y", None, None, "empty_question"),
    ("Factoid question: What is X?\nAnswer:   ", None, None, "empty_answer"),
    ("Here is a question about the text.", None, None, "parse_failure"),
    ("", None, None, "empty_reply"),
    ("I cannot create questions from this content.", None, None, "refusal"),
]


@pytest.mark.parametrize(("reply", "question", "answer", "reason"), QA_TABLE)
def test_factoid_table(reply: str, question: str | None, answer: str | None, reason: str) -> None:
    parsed = parse_factoid_qa(reply)
    assert (parsed.question, parsed.answer, parsed.reason, parsed.evidence) == (question, answer, reason, None)
    assert parsed.reason == "" or type(parsed.reason) is FailureKind


# Real replies of Qwen2.5-Coder-1.5B to the multi-hop and reworded prompts (git's documentation),
# which label the question a bare `Question:`; a bare label inside a line is not one.
BARE_LABEL_TABLE = [
    ("Output:::\nQuestion: What is a commit-ish in Git?\nAnswer: A commit object or an object that can be "
     "recursively dereferenced to a commit object.", "What is a commit-ish in Git?",
     "A commit object or an object that can be recursively dereferenced to a commit object.", ""),
    ("Question: In the second passage, what change caused the corruption of a packfile?\nAnswer: The corruption "
     "occurred when the replacement byte found by the \"munge\" program was replaced in the packfile.",
     "In the second passage, what change caused the corruption of a packfile?",
     "The corruption occurred when the replacement byte found by the \"munge\" program was replaced in the packfile.",
     ""),
    ("**Question:** Q1?\n**Answer:** A1\nQuestion: Q2?\nAnswer: A2", "Q1?", "A1", ""),
    ("Here is a question: What is X?\nAnswer: Y", None, None, "parse_failure"),
    # Another type's label (Qwen2.5-1.5B on SQLite's documentation labelled multi-hop, unanswerable and
    # reworded drafts so), and the evidence line echoed as its placeholder: the draft is read.
    ("Output:::\nFactoid question: What does VACUUM INTO write?\nAnswer: A new database file.\nEvidence: (the "
     "sentence of the context that holds the answer, copied word for word)", "What does VACUUM INTO write?",
     "A new database file.", ""),
    ("**Unanswerable question:** Q?\nAnswer: A", "Q?", "A", ""),
    # A question with no label, alone on its line before the answer, is read (Qwen2.5-1.5B, Python's docs);
    # a label-less line that is no question is not.
    ("Output:::\nWhat is the recommended practice for multiple checkouts in Git?\nAnswer: It is NOT "
     "recommended.", "What is the recommended practice for multiple checkouts in Git?", "It is NOT recommended.", ""),
    ("Output:::\nHere is one for you.\nAnswer: It is NOT recommended.", None, None, "parse_failure"),
    # ... or a blank line before it (Qwen2.5-Coder-1.5B, a reworded draft of Python's docs), or on its line.
    ("How can I time a loop with `timeit`?\n\nAnswer: Use the `timeit` command-line interface.",
     "How can I time a loop with `timeit`?", "Use the `timeit` command-line interface.", ""),
    ("How can I time a loop with `timeit`? Answer: Use the `timeit` command-line interface.",
     "How can I time a loop with `timeit`?", "Use the `timeit` command-line interface.", ""),
    ("Here is one for you? Or not: Answer: no.", None, None, "parse_failure"),
    # The answer on the question's own line, after its question mark.
    ("Question: What class creates a temporary directory like `mkdtemp`? Answer: TemporaryDirectory",
     "What class creates a temporary directory like `mkdtemp`?", "TemporaryDirectory", ""),
]  # fmt: skip


@pytest.mark.parametrize(("reply", "question", "answer", "reason"), BARE_LABEL_TABLE)
@pytest.mark.parametrize("label", ["Multi-hop question", "User question", "Factoid question"])
def test_a_bare_question_label_is_read_for_every_type(
    label: str, reply: str, question: str | None, answer: str | None, reason: str
) -> None:
    parsed = parse_labelled_qa(reply, label)
    assert (parsed.question, parsed.answer, parsed.reason) == (question, answer, reason)


@pytest.mark.parametrize(
    ("reply", "question"),
    [
        # Qwen2.5-Coder-1.5B on Python's documentation: a composed multi-hop question, an unanswerable one.
        ("Output:::\nWhat is the name of the module that provides UUID objects and what does `uuid1` do?",
         "What is the name of the module that provides UUID objects and what does `uuid1` do?"),
        ("How much memory does :func:`gzip.compress` use on a 1 GB file?\n",
         "How much memory does :func:`gzip.compress` use on a 1 GB file?"),
        # Prose, several lines, a label-like "word: ": not a lone question.
        ("Here is one: What is X?", None),
        ("What is X?\nWhat is Y?", None),
        ("Output:::\nNo question came to mind.", None),
    ],
)  # fmt: skip
def test_a_reply_of_one_question_alone_is_read_only_where_no_answer_is_needed(reply: str, question: str | None) -> None:
    parsed = parse_labelled_qa(reply, "Multi-hop question", answer_optional=True)
    assert (parsed.question, parsed.reason == "") == (question, question is not None)
    assert parse_labelled_qa(reply, "Multi-hop question").reason != ""  # a type that needs an answer


def test_an_unanswerable_question_needs_no_answer_line() -> None:
    from qagen.generation.draft import DraftTask
    from qagen.llm.task import Reply
    from qagen.question_types import QUESTION_TYPES
    from qagen.question_types.unanswerable import ABSTENTION
    from qagen.records import Chunk, Passages, Usage

    # Qwen2.5-1.5B stopped after 3 of its 16 unanswerable questions on Python's documentation.
    replies = ("Unanswerable question: How many hours does calendar.prcal take?", "Question: How fast is bisect?\n")
    for reply in replies:
        parsed = parse_labelled_qa(reply, "Unanswerable question", answer_optional=True)
        assert parsed.reason == "" and parsed.question is not None and parsed.question.endswith("?")
        assert parsed.answer == ""
        assert parse_labelled_qa(reply, "Unanswerable question").reason == "no_answer"  # an answer is needed
    # The draft task of a type whose reference answer is not the drafted one reads such a reply; others do not.
    text = "prcal prints a year's calendar."
    chunk = Chunk(id="c", source="calendar.rst", text=text, start_index=0, end_index=len(text))
    for name in ("unanswerable", "factoid", "multi_hop"):
        task = DraftTask("m", question_type=QUESTION_TYPES.get(name))
        draft = task.parse(Passages(question_type=name, chunks=(chunk,)), Reply(text=replies[0], usage=Usage()))
        assert (draft.ok, draft.answer) == ((True, ABSTENTION) if name == "unanswerable" else (False, None)), name


@pytest.mark.parametrize(
    ("question", "copied"),
    [
        # Qwen2.5-1.5B's unanswerable drafts of Python's documentation: the example, then the example with difflib in.
        ("How much slower is acme deploy with --wait than without it on a large cluster?", True),
        ("How much faster is difflib with --wait than without it on a large cluster?", True),
        # A drafted question in the example's mould, about the passage's own subject.
        ("How much memory is used by gzip when compressing a large file?", False),
        ("How much slower is bisect_right compared to insort_left for large data sets?", False),
    ],
)
def test_a_draft_that_copies_its_prompts_example_is_a_template_echo(question: str, copied: bool) -> None:
    from qagen.generation.draft import DraftTask
    from qagen.llm.task import Reply
    from qagen.question_types import QUESTION_TYPES
    from qagen.records import Chunk, Passages, Usage

    task = DraftTask("m", question_type=QUESTION_TYPES.get("unanswerable"))
    assert task.examples == ("How much slower is acme deploy with --wait than without it on a large cluster?",)
    text = "gzip.open opens a gzip-compressed file."
    chunk = Chunk(id="c", source="gzip.rst", text=text, start_index=0, end_index=len(text))
    reply = Reply(text=f"Unanswerable question: {question}\nAnswer: Not said.", usage=Usage())
    draft = task.parse(Passages(question_type="unanswerable", chunks=(chunk,)), reply)
    assert (draft.failure.kind if draft.failure else None) == ("template_echo" if copied else None)


def test_the_example_questions_of_the_bundled_draft_prompts_are_recognised() -> None:
    from qagen.generation.draft import DraftTask
    from qagen.question_types import QUESTION_TYPES

    examples = {spec.name: DraftTask("m", question_type=spec).examples for spec in QUESTION_TYPES}
    assert examples["factoid"] == examples["multi_hop"] == ()  # the notebook's prompt, and the multi-hop one, show none
    assert all(len(examples[name]) == 1 and "acme" in examples[name][0] for name in ("unanswerable", "reworded"))


_reply_text = st.text(
    alphabet=st.sampled_from(list("Total rating:Evaluation Feedback::: Answer Factoid question 0123456789./-*\n ")),
    max_size=200,
) | st.text(max_size=200)


@given(_reply_text)
def test_rating_parser_never_raises_and_scores_are_1_to_5(reply: str) -> None:
    parsed = parse_rating(reply)
    assert parsed.score is None or (isinstance(parsed.score, int) and 1 <= parsed.score <= 5)
    assert (parsed.score is None) == bool(parsed.reason)
    assert parsed.reason == "" or type(parsed.reason) is FailureKind


@given(_reply_text)
def test_factoid_parser_never_raises(reply: str) -> None:
    parsed = parse_factoid_qa(reply)
    assert parsed.reason == "" or type(parsed.reason) is FailureKind
    if parsed.reason:
        assert parsed.question is None and parsed.answer is None
    else:
        assert parsed.question and parsed.answer


_LABELS = ["Factoid question", "Multi-hop question", "User question", "Unanswerable question"]
_NEAR_A_LABEL = st.lists(
    st.one_of(
        st.sampled_from([*_LABELS, "Question", "QUESTION", "questſon", "questİon", "questıon", "Factoid  question"]),
        st.sampled_from([":", "**", " ", "\t", "\n", "?", "Answer:", "two words ", "x"]),
        st.text(max_size=3),
    ),
    max_size=8,
).map("".join)


@given(st.sampled_from(_LABELS), _NEAR_A_LABEL)
def test_a_question_label_is_looked_for_only_where_its_words_are(label: str, text: str) -> None:
    """What `parse_labelled_qa` searches an answer for first (`_question_words`) is in every label it finds."""
    from qagen.generation.replies import _question_label, _question_words

    if _question_label(label).search(text) is not None:
        assert _question_words(label).search(text) is not None


_BLOCKY_REPLY = st.lists(
    st.sampled_from(
        ["Feedback:::", "**Answer:::**", "Output :::", "\n", " ", "Evidence: ", "(the sentence of the context",
         " that holds", "(your rating)", "Factoid question: Q?", "Answer: A", "x", ":", "::"]
    ),
    max_size=12,
).map("".join)  # fmt: skip


@given(_BLOCKY_REPLY | _reply_text)
def test_a_reply_without_a_marker_s_own_characters_is_not_searched_for_it(reply: str) -> None:
    """The shortcuts of `verdict_blocks` (no `:::`) and `parse_labelled_qa` (no `(`) change nothing."""
    from qagen.generation.replies import _CONTINUATION_MARKER, _ECHOED_EVIDENCE_LINE, _TEMPLATE_ECHO, verdict_blocks

    blocks = _CONTINUATION_MARKER.split(reply)
    assert verdict_blocks(reply) == [block for block in blocks if block.strip() and not _TEMPLATE_ECHO.search(block)]
    assert _ECHOED_EVIDENCE_LINE.sub("", reply) == reply or "(" in reply
