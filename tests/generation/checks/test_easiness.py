"""The copied share against plain counting (the BM25 rank of a question's chunk is the chunk
index's: tests/corpus/test_chunk_index.py)."""

from __future__ import annotations

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
