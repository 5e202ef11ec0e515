"""Locating the reference answer's evidence in its chunk: exact, normalised, window, or not found."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qagen.corpus.evidence import locate_evidence, normalise, normalise_with_tokens

CHUNK = (
    "Python was created by Guido van Rossum and first released in 1991. In 2023 it reached\n"
    "version 3.12. To reload a tokenizer from a file, use the `Tokenizer.from_file` classmethod."
)


def _texts(chunk: str, spans: tuple[tuple[int, int], ...]) -> list[str]:
    return [chunk[start:end] for start, end in spans]


def test_an_answer_written_as_is_is_found_where_it_is() -> None:
    evidence = locate_evidence("Guido van Rossum", CHUNK)
    assert evidence.match == "exact" and _texts(CHUNK, evidence.spans) == ["Guido van Rossum"]
    assert locate_evidence("  3.12 \n", CHUNK).spans == ((CHUNK.index("3.12"), CHUNK.index("3.12") + 4),)


def test_every_occurrence_is_evidence_and_only_whole_words_count() -> None:
    chunk = "The 2 cats. In 2023 the 2nd cat left; 2 remained."
    evidence = locate_evidence("2", chunk)
    assert evidence.match == "exact"
    assert evidence.spans == ((4, 5), (38, 39))  # not inside 2023, nor 2nd
    assert locate_evidence("cat", "concatenate").match == "not_found"
    assert locate_evidence("caf", "cafe\u0301").match == "not_found"  # the accent belongs to the word


def test_case_punctuation_and_spacing_aside() -> None:
    cases = {
        "guido VAN rossum.": "Guido van Rossum",  # case, a final period
        "It reached version 3.12": "it reached\nversion 3.12",  # a line wrapped elsewhere
        "Tokenizer.from_file": "Tokenizer.from_file",  # exact after all
        "`tokenizer.from_file` classmethod": "Tokenizer.from_file` classmethod",  # backticks
    }
    for answer, found in cases.items():
        evidence = locate_evidence(answer, CHUNK)
        assert evidence.match in ("exact", "normalised"), answer
        [text] = _texts(CHUNK, evidence.spans)
        assert normalise(text) == normalise(answer) and text.lower() == found.lower(), answer


def test_an_answer_not_written_word_for_word_is_located_at_the_window_sharing_most_words() -> None:
    evidence = locate_evidence("You reload a tokenizer from a file with the Tokenizer.from_file classmethod", CHUNK)
    assert evidence.match == "window"
    [text] = _texts(CHUNK, evidence.spans)
    # Trimmed to the first and last word the answer shares with the window.
    assert text == "reload a tokenizer from a file, use the `Tokenizer.from_file` classmethod"
    evidence = locate_evidence("Guido van Rossum, in 1991", CHUNK)
    assert evidence.match == "window"
    assert _texts(CHUNK, evidence.spans) == ["Guido van Rossum and first released in 1991"]


@pytest.mark.parametrize(
    "answer",
    [
        "Yes.",  # nothing of it is in the chunk
        "Nineteen ninety-one",
        "Rossum wrote Perl",  # one shared word of three is not half
        "Perl and Ruby by Larry Wall with Python",  # three shared words of eight: fewer than half
        "—",  # no letters or digits: nothing to look for
    ],
)
def test_an_answer_the_chunk_does_not_hold_is_not_found(answer: str) -> None:
    evidence = locate_evidence(answer, CHUNK)
    assert evidence.match == "not_found" and evidence.spans == ()


def test_accents_aside_composed_or_not() -> None:
    for chunk in ("Un café au lait.", "Un cafe\u0301 au lait."):
        for answer in ("CAFÉ au lait", "cafe\u0301 au lait", "cafe au lait"):
            evidence = locate_evidence(answer, chunk)
            assert evidence.match in ("exact", "normalised") and evidence.spans[0][0] == 3, (answer, chunk)


def test_scripts_written_without_spaces() -> None:
    chunk = "我在北京市工作。ＰＹＴＨＯＮ　３"
    assert _texts(chunk, locate_evidence("北京", chunk).spans) == ["北京"]
    evidence = locate_evidence("python 3", chunk)  # full-width letters and space
    assert evidence.match == "normalised" and _texts(chunk, evidence.spans) == ["ＰＹＴＨＯＮ　３"]


# --------------------------------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------------------------------

words = st.sampled_from(["alpha", "Beta", "gamma", "42", "x86_64", "naïve", "北京", "ǅemal", "straße", "ok."])
separators = st.sampled_from([" ", "  ", "\n", ", ", " - ", "\t"])


@st.composite
def texts(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.tuples(words, separators), min_size=1, max_size=30))
    return "".join(word + separator for word, separator in parts)


@given(st.text(max_size=200) | st.text(st.characters(max_codepoint=127), max_size=60) | texts())
@settings(max_examples=300)
def test_the_fast_path_gives_the_same_words_as_the_tokens(text: str) -> None:
    normalised = normalise_with_tokens(text)
    assert normalise(text) == normalised.text
    assert [normalised.text[start:].split(" ")[0] for start in normalised.starts] == [t.text for t in normalised.tokens]
    for token in normalised.tokens:
        assert normalise(text[token.start : token.end]).replace(" ", "") == token.text


@given(st.text(max_size=120) | texts(), st.text(max_size=40) | texts())
@settings(max_examples=300)
def test_never_raises_and_every_span_holds_the_answer(chunk: str, answer: str) -> None:
    evidence = locate_evidence(answer, chunk)
    assert (evidence.match == "not_found") == (evidence.spans == ())
    for start, end in evidence.spans:
        assert 0 <= start < end <= len(chunk)
        if evidence.match == "exact":
            assert chunk[start:end] == answer.strip()
        elif evidence.match == "normalised":
            assert normalise(chunk[start:end]) == normalise(answer)


@given(texts(), st.data())
@settings(max_examples=200)
def test_a_run_of_whole_words_of_the_chunk_is_found_where_it_was_taken(chunk: str, data: st.DataObject) -> None:
    tokens = normalise_with_tokens(chunk).tokens
    first = data.draw(st.integers(0, len(tokens) - 1))
    last = data.draw(st.integers(first, len(tokens) - 1))
    start, end = tokens[first].start, tokens[last].end
    evidence = locate_evidence(chunk[start:end], chunk)
    assert evidence.match == "exact" and (start, end) in evidence.spans
