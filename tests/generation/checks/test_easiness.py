"""The copied share against plain counting (the BM25 rank of a question's chunk is the chunk
index's: tests/corpus/test_chunk_index.py)."""

from __future__ import annotations

import random

import pytest

from qagen.corpus.words import tokenize, tokens_among
from qagen.generation.checks.easiness import copied_share, too_close


def test_copied_share_by_hand() -> None:
    chunk = "The packfile holds compressed objects; git gc writes it."
    # Content words of the question: packfile, holds, objects, written, daily (5); in the chunk: 3.
    assert copied_share("Which packfile holds the objects written daily?", chunk) == 3 / 5
    assert copied_share("What is it?", chunk) is None  # stopwords only
    assert too_close("Which packfile holds compressed objects?", chunk, 0.9)
    assert not too_close("Which packfile holds the objects written daily?", chunk, 0.9)


def test_longest_copied_run_counts_consecutive_words_in_order() -> None:
    from qagen.generation.checks.easiness import longest_copied_run

    chunk = "The packfile holds compressed objects; git gc writes it."
    assert longest_copied_run("Which packfile holds compressed objects?", chunk) == 4  # punctuation aside
    assert longest_copied_run("Which objects does the packfile hold?", chunk) == 2  # "the packfile"
    assert longest_copied_run("Objects compressed holds packfile", chunk) == 1  # the words, not in order
    assert longest_copied_run("What is it?", chunk) == 1  # stopwords count: "it"
    assert longest_copied_run("", chunk) == 0


@pytest.mark.parametrize(
    ("text", "words", "found"),
    [
        ("The packfile holds objects.", {"packfile", "pack", "objects", "holds"}, {"packfile", "objects", "holds"}),
        ("sometimes, time_out; TIME", {"time", "time_out", "some"}, {"time", "time_out"}),  # case-folded
        ("Straße und 日本語の本", {"strasse", "本", "日本", "und"}, {"strasse", "本", "und"}),  # a kana/ideograph alone
        ("x語y", {"x", "y", "x語y"}, {"x", "y"}),  # an ideograph ends a run; a word no token can be is none
        ("e\u0301te", {"\u00e9te"}, {"\u00e9te"}),  # NFC, as `tokenize`
    ],
)
def test_tokens_among_are_the_words_that_are_tokens_of_the_text(text: str, words: set[str], found: set[str]) -> None:
    assert tokens_among(text, words) == found == words & set(tokenize(text))


def test_tokens_among_equals_intersecting_every_token_on_random_text() -> None:
    rng = random.Random(5)
    alphabet = list("abé_1ßſﬁÅ語日かカ한 \n.,-'\u0301İı")
    for _ in range(3000):
        text = "".join(rng.choices(alphabet, k=rng.randint(0, 40)))
        words = set(tokenize("".join(rng.choices(alphabet, k=rng.randint(0, 15)))))
        assert tokens_among(text, words) == words & set(tokenize(text)), (text, words)


def test_extractive_share_counts_the_answers_words_in_any_passage() -> None:
    from qagen.generation.checks.easiness import extractive_share

    first, second = "The packfile holds compressed objects.", "git gc writes the packfile daily."
    # Content words of the answer: packfile, compressed, weekly (3); in the passages: 2.
    assert extractive_share("The packfile, compressed weekly.", [first]) == 2 / 3
    assert extractive_share("compressed daily", [first, second]) == 1.0  # one word from each passage
    assert extractive_share("compressed daily", [first]) == 1 / 2
    assert extractive_share("It is.", [first]) is None  # stopwords only


def test_restated_share_counts_the_answers_words_already_asked() -> None:
    from qagen.generation.checks.easiness import restated_share

    question = "What does the punctuation_chars argument of shlex set?"
    # The answer's content words: punctuation_chars, argument, sets, punctuation, characters; the question
    # holds punctuation_chars and argument ("set" is not "sets": words are matched exactly).
    assert restated_share(question, "The punctuation_chars argument sets the punctuation characters.") == 2 / 5
    assert restated_share(question, "punctuation_chars argument") == 1.0
    assert restated_share(question, "Characters treated as separate tokens.") == 0.0
    assert restated_share(question, "It is.") is None


def test_the_shares_at_once_are_each_share_on_its_own() -> None:
    """`shares` (the final write's, each text looked through once) against the three shares asked one by one,
    on random texts of one passage and of several, stopwords among their words."""
    from qagen.generation.checks.easiness import Shares, extractive_share, restated_share, shares

    rng = random.Random(11)
    alphabet = [*"abé_1ßİı語か ", " ", " ", ".", "\n", "the ", "is ", "What ", "und ", "packfile ", "GC "]
    for _ in range(2000):
        question, answer = ("".join(rng.choices(alphabet, k=rng.randint(0, 25))) for _ in range(2))
        passages = ["".join(rng.choices(alphabet, k=rng.randint(0, 60))) for _ in range(rng.choice([1, 1, 2, 3]))]
        expected = Shares(
            copied_share(question, passages[0]),
            extractive_share(answer, passages),
            restated_share(question, answer),
        )
        assert shares(question, answer, passages) == expected, (question, answer, passages)
