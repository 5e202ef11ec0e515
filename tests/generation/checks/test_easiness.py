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
