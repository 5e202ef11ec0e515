"""Evidence placement: a quoted sentence is found in its chunk (with its offsets) despite small
copying differences, and a sentence the chunk does not hold is not; without a quote, the answer's
content words are looked for."""

from __future__ import annotations

import unicodedata
from typing import Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qagen.generation.checks.evidence import place_answer, place_evidence, place_quote
from qagen.generation.replies import parse_factoid_qa

CHUNK = (
    "Git stores its objects in the .git/objects folder.\n"
    "The `git gc` command packs loose objects into a single\npackfile to save space.\n"
    "Tags are refs that point at a commit and never move."
)


def test_an_exact_quote_is_placed_at_its_offsets() -> None:
    sentence = "Tags are refs that point at a commit and never move."
    placed = place_quote(sentence, CHUNK)
    assert placed.match == "quoted" and placed.score == 100.0
    assert placed.start is not None and placed.end is not None
    assert CHUNK[placed.start : placed.end] == sentence


@pytest.mark.parametrize(
    "quote",
    [
        # backticks dropped, the line break joined
        "The git gc command packs loose objects into a single packfile to save space.",
        "the `git gc` command packs loose objects into a single packfile to save space",  # case, period
    ],
)
def test_a_quote_copied_with_small_differences_is_still_found(quote: str) -> None:
    placed = place_quote(quote, CHUNK)
    assert placed.found and placed.match == "quoted"
    assert placed.start is not None and placed.end is not None
    assert "packs loose objects" in CHUNK[placed.start : placed.end]


@pytest.mark.parametrize(
    "quote",
    [
        "Branches are deleted with git branch -d once they are merged.",
        "Git was written by Linus Torvalds in 2005.",
        "",
    ],
)
def test_a_sentence_the_chunk_does_not_hold_is_not_found(quote: str) -> None:
    placed = place_quote(quote, CHUNK)
    assert placed.match == "not_found" and not placed.found
    assert placed.start is None and placed.end is None


def test_without_a_quote_the_answer_words_are_looked_for_fuzzily() -> None:
    found = place_evidence(None, "It packs the loose object into one packfile", CHUNK)
    assert found.match == "answer_words" and found.found
    assert found.score is not None and found.score >= 0.5
    missing = place_evidence(None, "Linus Torvalds wrote it in 2005", CHUNK)
    assert missing.match == "not_found"
    # An answer written in the chunk as it is gets the evaluator's place for it.
    exact = place_answer("git gc", CHUNK)
    assert exact.start is not None and exact.end is not None and CHUNK[exact.start : exact.end] == "git gc"
    # Nothing to look for: not checked, not rejected.
    assert place_answer("the", CHUNK).match == "no_words"


@pytest.mark.parametrize(
    ("reply", "question", "answer", "evidence"),
    [
        ("Factoid question: Q?\nAnswer: A\nEvidence: The sentence.", "Q?", "A", "The sentence."),
        ('Factoid question: Q?\nAnswer: A\nEvidence: "The sentence."', "Q?", "A", "The sentence."),
        ("**Factoid question:** Q?\n**Answer:** A\n**Evidence:** The sentence.", "Q?", "A", "The sentence."),
        ("Output:::\nFactoid question: Q?\nAnswer: A", "Q?", "A", None),  # an older prompt's reply
        ("Factoid question: Q?\n\nAnswer: A\nEvidence:", "Q?", "A", None),  # an empty evidence line
        (
            "Factoid question: (your factoid question)\nAnswer: (your answer to the factoid question)\n"
            "Evidence: (the sentence of the context that holds the answer, copied)"
            "\nOutput:::\nFactoid question: R?\nAnswer: B\nEvidence: S.",
            "R?",
            "B",
            "S.",
        ),  # the template echoed back, then the real reply
    ],
)
def test_the_evidence_line_is_optional_in_replies(reply: str, question: str, answer: str, evidence: str | None) -> None:
    parsed = parse_factoid_qa(reply)
    assert (parsed.question, parsed.answer, parsed.evidence, parsed.reason) == (question, answer, evidence, "")


def test_a_quote_the_chunk_does_not_hold_is_forgiven_only_when_the_answer_is_there() -> None:
    # Qwen2.5-1.5B on Python's docs: the sentence wrapped in prose, its markup rewritten.
    chunk = "The :mod:`getpass` module provides two functions:\n\n.. function:: getpass(prompt='Password: ')"
    wrapped = place_evidence('The context states: "getpass provides the password prompt functions."', "getpass", chunk)
    assert wrapped.match == "answer_words" and wrapped.found
    invented = place_evidence("The module encrypts passwords with AES.", "It encrypts them with AES", chunk)
    assert invented.match == "not_found" and not invented.found


def test_a_quote_longer_than_the_chunk_is_not_evidence() -> None:
    # The whole chunk plus kilobytes of invented text, for an answer in no chunk: the chunk is inside
    # the quote, but the quote is not in the chunk.
    invented = " Its mascot is a purple owl with gold stripes, chosen by a vote in 2011." * 70
    placed = place_evidence(CHUNK + invented, "A purple owl with gold stripes", CHUNK)
    assert placed.match == "not_found" and not placed.found
    assert placed.start is None and placed.end is None


def test_a_quote_of_the_whole_chunk_with_small_differences_is_found() -> None:
    quote = CHUNK.replace("`", "").replace("\n", " ") + " (see git-gc(1))"
    placed = place_quote(quote, CHUNK)
    assert placed.match == "quoted" and (placed.start, placed.end) == (0, len(CHUNK))


@pytest.mark.parametrize(
    ("quote", "answer"),
    [
        ("the", "Bright purple with gold stripes"),  # a word of the chunk, holding no answer
        ("the", "No"),  # an answer of no content word: the quote still needs one
        ("Tags are refs that point at a commit and never move.", "Bright purple with gold stripes"),
        ("Tags are refs that point at a commit and never move.", "It packs loose objects into one packfile"),
    ],
)
def test_a_quote_in_the_chunk_that_does_not_hold_the_answer_is_not_evidence(quote: str, answer: str) -> None:
    placed = place_evidence(quote, answer, CHUNK)
    assert placed.match == "unsupported" and not placed.found
    assert placed.start is None and placed.end is None


@pytest.mark.parametrize(
    ("quote", "answer"),
    [
        # The answer restates the question around the quoted fact: 3 of its 5 content words are quoted.
        ("The `git gc` command packs loose objects", "Running git gc in a repository packs them"),
        ("Tags are refs that point at a commit and never move.", "a commit"),
        ("Tags are refs that point at a commit and never move.", "No"),  # no content word to look for
    ],
)
def test_a_quote_holding_the_answer_is_evidence(quote: str, answer: str) -> None:
    placed = place_evidence(quote, answer, CHUNK)
    assert placed.match == "quoted" and placed.found


NormalForm = Literal["NFC", "NFD"]
VIETNAMESE = "Thủ đô của Việt Nam là Hà Nội, nằm bên bờ sông Hồng.\nDân số của thành phố khoảng tám triệu người."
VIETNAMESE_SENTENCE = "Thủ đô của Việt Nam là Hà Nội, nằm bên bờ sông Hồng."


@pytest.mark.parametrize(("chunk_form", "quote_form"), [("NFC", "NFD"), ("NFD", "NFC")])
def test_a_quote_in_another_unicode_normalisation_is_found_at_its_offsets(
    chunk_form: NormalForm, quote_form: NormalForm
) -> None:
    # PDFs and macOS text are often decomposed (NFD), a model writes composed (NFC) text, and back.
    chunk = unicodedata.normalize(chunk_form, VIETNAMESE)
    quote = unicodedata.normalize(quote_form, VIETNAMESE_SENTENCE)
    placed = place_evidence(quote, "Hà Nội", chunk)
    assert placed.match == "quoted" and placed.score == 100.0
    assert placed.start is not None and placed.end is not None
    assert chunk[placed.start : placed.end] == unicodedata.normalize(chunk_form, VIETNAMESE_SENTENCE)


TABLE = (
    "Options of git fetch:\n\n"
    "Option          Default    Meaning\n"
    "--depth         none       how many commits of history to fetch\n"
    "--jobs          1          how many submodules are fetched in parallel\n"
)


def test_a_table_row_quoted_with_single_spaces_is_found_at_its_offsets() -> None:
    quote = "--jobs 1 how many submodules are fetched in parallel"
    placed = place_evidence(quote, "1", TABLE)
    assert placed.match == "quoted" and placed.score == 100.0
    assert placed.start is not None and placed.end is not None
    assert TABLE[placed.start : placed.end] == "--jobs          1          how many submodules are fetched in parallel"


# Letters that compose, expand when case-folded, and spaces of several kinds.
_LETTERS = st.sampled_from(["a", "b", "e", "é", "e\u0301", "ß", "İ", "ộ", "한", "\u1100\u1161", " ", "  ", "\n", "\t"])


@given(st.lists(_LETTERS, max_size=60).map("".join), st.text(max_size=30), st.data())
@settings(max_examples=300)
def test_placing_a_quote_never_raises_and_keeps_its_offsets_in_the_chunk(
    chunk: str, noise: str, data: st.DataObject
) -> None:
    start = data.draw(st.integers(0, len(chunk)))
    end = data.draw(st.integers(start, len(chunk)))
    form = data.draw(st.sampled_from(["NFC", "NFD"]))
    for quote in (unicodedata.normalize(form, chunk[start:end]), noise, chunk + noise):
        placed = place_quote(quote, chunk)
        assert placed.score is not None and 0 <= placed.score <= 100
        if placed.found:
            assert placed.start is not None and placed.end is not None
            assert 0 <= placed.start <= placed.end <= len(chunk)


_ASCII = st.sampled_from(["a", "B", "z", "7", ".", "`", " ", "  ", "\n", "\t", "\r\n", "\x0b", "\x0c", "\x1c", "\x1f"])


@given(st.lists(_ASCII, max_size=60).map("".join), st.data())
@settings(max_examples=300)
def test_an_ascii_text_compares_as_the_general_form_would_make_it(text: str, data: st.DataObject) -> None:
    # An ASCII text takes a path of its own; the same text with a non-ASCII letter after it takes
    # the general one, which must give the same form and offsets over the ASCII part.
    from qagen.generation.checks.evidence import _Comparable

    ascii_form, general = _Comparable.of(text), _Comparable.of(text + "é")
    assert general.text[: len(ascii_form.text)] == ascii_form.text
    if ascii_form.text:
        first = data.draw(st.integers(0, len(ascii_form.text) - 1))
        stop = data.draw(st.integers(first + 1, len(ascii_form.text)))
        assert ascii_form.span(first, stop) == general.span(first, stop)
