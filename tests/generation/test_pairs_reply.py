"""Reading a reply asked for several question/answer pairs (`replies.parse_pairs`): the numbered protocol of
the `qa_*_pairs` prompts and the ways models vary it, as a table; properties over any text and over every
numbering the stand-in writes."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qagen.failures import FailureKind
from qagen.generation.replies import FACTOID_LABEL, parse_pairs
from qagen.llm.prompts import load_prompt
from standins.llm.replies import PAIRS_FORMATS, pairs_reply

THREE = [("What is A?", "a", "A is a."), ("What is B?", "b", "B is b."), ("What is C?", "c", "C is c.")]

CANONICAL = (
    "1.\nFactoid question: What is A?\nAnswer: a\nEvidence: A is a.\n\n2.\nFactoid question: What is B?\nAnswer: b\n"
)
READ_AS_ASKED: list[tuple[str, str]] = [
    (
        "the prompt's numbering",
        CANONICAL + "Evidence: B is b.\n\n3.\nFactoid question: What is C?\nAnswer: c\nEvidence: C is c.",
    ),
    (
        "the number before the label",
        "1. Factoid question: What is A?\nAnswer: a\nEvidence: A is a.\n2. Factoid question: What is B?\nAnswer: b\n"
        "Evidence: B is b.\n3. Factoid question: What is C?\nAnswer: c\nEvidence: C is c.",
    ),
    (
        "markdown",
        "**1.**\n**Factoid question:** What is A?\n**Answer:** a\n**Evidence:** A is a.\n\n### 2.\n"
        "**Factoid question:** What is B?\n**Answer:** b\n**Evidence:** B is b.\n\n**3.** **Factoid question:** "
        "What is C?\n**Answer:** c\n**Evidence:** C is c.",
    ),
    (
        "named pairs",
        "Pair 1:\nFactoid question: What is A?\nAnswer: a\nEvidence: A is a.\n\nPair 2: Factoid question: What is B?\n"
        "Answer: b\nEvidence: B is b.\n\n**Pair 3**\nFactoid question: What is C?\nAnswer: c\nEvidence: C is c.",
    ),
    (
        "the number in the labels",
        "Factoid question 1: What is A?\nAnswer 1: a\nEvidence 1: A is a.\n\n"
        "Factoid question 2: What is B? Answer 2: b\nEvidence 2: B is b.\n\n"
        "Question 3: What is C?\nAnswer 3: c\nEvidence 3: C is c.",
    ),
    (
        "no numbers, each pair labelled",
        "Factoid question: What is A?\nAnswer: a\nEvidence: A is a.\nFactoid question: What is B?\nAnswer: b\n"
        "Evidence: B is b.\nFactoid question: What is C?\nAnswer: c\nEvidence: C is c.",
    ),
    (
        "prose before, the template's marker, a label after the number line",
        "Here are three pairs:\n\nOutput:::\n1)\n\nFactoid question: What is A?\nAnswer: a\nEvidence: A is a.\n\n2)\n"
        "Question: What is B?\nAnswer: b\nEvidence: B is b.\n\n3)\nFactoid question: What is C?\nAnswer: c\n"
        "Evidence: C is c.",
    ),
    (
        "the template echoed first",
        "1.\nFactoid question: (your first factoid question)\nAnswer: (your answer to the first factoid question)\n\n"
        + "\n\n".join(
            f"{n}.\nFactoid question: {q}\nAnswer: {a}\nEvidence: {e}" for n, (q, a, e) in enumerate(THREE, 1)
        ),
    ),
]


@pytest.mark.parametrize(("reply",), [(reply,) for _, reply in READ_AS_ASKED], ids=[name for name, _ in READ_AS_ASKED])
def test_the_usual_numberings_give_every_pair(reply: str) -> None:
    read = parse_pairs(reply, FACTOID_LABEL, 3)
    assert read.reason == "" and read.beyond == 0
    assert [(pair.qa.question, pair.qa.answer, pair.qa.evidence) for pair in read.pairs] == THREE
    # Each pair keeps the part of the reply it was read from, verbatim.
    for pair, (question, _, _) in zip(read.pairs, THREE, strict=True):
        assert question in pair.text and pair.text in reply


def test_an_answer_s_own_list_and_figures_open_no_pair() -> None:
    reply = (
        "1. What are the steps?\nAnswer: Two steps:\n1. build it\n2) install it\n12 bytes are kept.\n"
        "2. How long does it wait?\nAnswer: 1.5 seconds"
    )
    read = parse_pairs(reply, FACTOID_LABEL, 2)
    assert [(pair.qa.question, pair.qa.answer) for pair in read.pairs] == [
        ("What are the steps?", "Two steps:\n1. build it\n2) install it\n12 bytes are kept."),
        ("How long does it wait?", "1.5 seconds"),
    ]


def test_fewer_pairs_than_asked_give_what_there_is() -> None:
    read = parse_pairs(CANONICAL, FACTOID_LABEL, 3)
    assert read.reason == "" and [pair.qa.question for pair in read.pairs] == ["What is A?", "What is B?"]


def test_pairs_beyond_those_asked_are_counted_not_read() -> None:
    reply = "\n".join(f"{n}. Factoid question: Q{n}?\nAnswer: a{n}" for n in range(1, 6))
    read = parse_pairs(reply, FACTOID_LABEL, 3)
    assert [pair.qa.question for pair in read.pairs] == ["Q1?", "Q2?", "Q3?"] and read.beyond == 2


def test_a_pair_that_cannot_be_read_keeps_its_place_with_its_reason() -> None:
    reply = (
        "1. Factoid question: What is A?\nAnswer: a\n2. Factoid question: What is B?\n"
        "3. Factoid question: C?\nAnswer: c"
    )
    read = parse_pairs(reply, FACTOID_LABEL, 3)
    assert [pair.qa.reason for pair in read.pairs] == ["", FailureKind.NO_ANSWER, ""]
    assert read.pairs[2].qa.question == "C?"


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("", FailureKind.EMPTY_REPLY),
        ("I'm sorry, but I can't help with that.", FailureKind.REFUSAL),
        ("A good question would be about the flag.", FailureKind.PARSE_FAILURE),
    ],
)
def test_a_reply_with_no_pair_says_why(reply: str, reason: FailureKind) -> None:
    assert parse_pairs(reply, FACTOID_LABEL, 3) == ((), reason, 0)


def test_one_unlabelled_pair_is_read_as_the_first() -> None:
    read = parse_pairs("What is X?\nAnswer: x", FACTOID_LABEL, 3)
    assert [(pair.qa.question, pair.qa.answer) for pair in read.pairs] == [("What is X?", "x")]


def test_another_type_s_label() -> None:
    reply = (
        "1.\nUser question: How do I keep going?\nAnswer: Use -k.\n\n2.\nUser question: How do I stop?\nAnswer: Ctrl-C."
    )
    read = parse_pairs(reply, "User question", 2)
    assert [pair.qa.question for pair in read.pairs] == ["How do I keep going?", "How do I stop?"]


def test_the_prompts_show_the_numbering_they_are_read_with() -> None:
    for name, label in (("qa_generation_pairs", FACTOID_LABEL), ("qa_reworded_pairs", "User question")):
        prompt = load_prompt(name)
        assert "pairs" in prompt.variables
        template = prompt.text.split("Output:::", 1)[1].split("... and so on", 1)[0]
        # The template's own pairs are placeholders: echoed back, they are no pair.
        assert parse_pairs(template, label, 3).pairs == ()


# --------------------------------------------------------------------------- properties
any_text = st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=400)
lines = st.lists(
    st.one_of(
        st.sampled_from(
            ["1.", "2)", "**3.**", "Pair 2:", "Factoid question:", "Answer:", "Evidence:", "Output:::", ""]
        ),
        any_text,
    ),
    max_size=12,
).map("\n".join)


@given(st.one_of(any_text, lines), st.integers(min_value=1, max_value=10))
@settings(max_examples=300, deadline=None)  # a loaded machine must not fail it
def test_never_raises_and_never_reads_more_than_asked(reply: str, asked: int) -> None:
    read = parse_pairs(reply, FACTOID_LABEL, asked)
    assert len(read.pairs) <= asked and read.beyond >= 0
    assert (read.reason != "") == (not read.pairs)
    for pair in read.pairs:
        assert (pair.qa.question is None) == (pair.qa.reason != "")


words = st.text(alphabet="abcdefghijklmnopqrstuvwxyz ", min_size=1, max_size=30).map(str.strip).filter(bool)
pairs = st.lists(st.tuples(words, words, words), min_size=1, max_size=6)


@given(pairs, st.sampled_from(PAIRS_FORMATS), st.integers(min_value=0, max_value=2))
@settings(max_examples=200, deadline=None)
def test_every_numbering_the_stand_in_writes_reads_back(
    written: list[tuple[str, str, str]], fmt: str, short: int
) -> None:
    asked = len(written) + short  # a reply may stop short of what was asked
    drafted = [(f"{question}?", answer, evidence) for question, answer, evidence in written]
    read = parse_pairs(pairs_reply(list(drafted), FACTOID_LABEL, fmt), FACTOID_LABEL, asked)
    assert [(pair.qa.question, pair.qa.answer, pair.qa.evidence) for pair in read.pairs] == drafted


# --------------------------------------------------------------------------- a reply's record into drafts
def _reply_record(task: Any, item: Any, text: str, failure: Any = None) -> Any:
    from qagen.llm.task import Reply
    from qagen.records import Usage

    assert task.calls is not None
    if failure is not None:
        return task.calls.failed(item, failure)
    return task.calls.parse(item, Reply(text=text, usage=Usage(input_tokens=100, output_tokens=30)))


def test_a_reply_record_is_read_into_each_pair_s_draft() -> None:
    from qagen.failures import Failure
    from qagen.generation.draft import DraftTask
    from qagen.question_types.reworded import REWORDED
    from qagen.records import Chunk, Passages

    chunk = Chunk(id="c1", source="docs/acme.md", text="Acme keeps going with -k.", start_index=0, end_index=25)
    task = DraftTask("openai:m", question_type=REWORDED, per_chunk=3)
    assert task.prompt.name == "qa_reworded_pairs"
    items = [Passages(question_type="reworded", chunks=(chunk,), pair=place) for place in (1, 2, 3)]
    reply = _reply_record(
        task,
        items[0],
        "<think>two will do</think>1.\nUser question: How do I keep going?\nAnswer: Use -k.\n\n"
        "2.\nUser question: What does acme do?\nAnswer: It builds.",
    )
    assert reply.pairs == 3 and reply.question is None and reply.usage.input_tokens == 100
    drafts = [task.from_reply(item, reply) for item in items]
    assert [d.pair for d in drafts] == [1, 2, 3] and {d.reply_id for d in drafts} == {reply.id}
    assert len({d.id for d in drafts} | {reply.id}) == 4  # each its own record
    assert [d.question for d in drafts] == ["How do I keep going?", "What does acme do?", None]
    assert drafts[2].failure is not None and drafts[2].failure.kind is FailureKind.MISSING_PAIR
    assert all(d.usage.input_tokens == 0 for d in drafts)  # the call's usage is the reply's
    assert drafts[0].raw == "1.\nUser question: How do I keep going?\nAnswer: Use -k.\n\n"
    # A call that brought no reply: every pair's draft fails as it did, and is asked again on the next run.
    failed = _reply_record(task, items[0], "", Failure.of(FailureKind.SERVER_ERROR, "503"))
    again = [task.from_reply(item, failed) for item in items]
    assert all(d.failure is not None and d.failure.retryable for d in again)
    # A refusal: every pair's draft says so.
    refused = _reply_record(task, items[0], "I'm sorry, but I can't help with that.")
    assert {task.from_reply(item, refused).reason for item in items} == {"refusal"}
