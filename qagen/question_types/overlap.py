"""How many of a question's words its passage spells out: the word overlap the `reworded` type bounds
and the summary reports per type.

`copied_share` is the share of the question's distinct content words that occur in the passage:
1.0 for a question made of the passage's words, lower for one asked in a user's own words. Content
words are the evaluator's BM25 tokens (`qagen.evaluate.systems.bm25_index.tokenize`: the words BM25
matches a question on) without the stopwords of bm25s' lists for several languages (a text's
language is not known here, and a function word of one is seldom a content word of another).

The same definition as the quality checks' `copied_share` (branch `quality`, `checks/easiness.py`):
when both are on main, one of them goes.
"""

from __future__ import annotations

from functools import cache

_STOPWORD_LISTS = (
    "STOPWORDS_EN_PLUS",
    "STOPWORDS_FRENCH",
    "STOPWORDS_GERMAN",
    "STOPWORDS_SPANISH",
    "STOPWORDS_ITALIAN",
    "STOPWORDS_PORTUGUESE",
    "STOPWORDS_DUTCH",
)


@cache
def stopwords() -> frozenset[str]:
    """bm25s' stopword lists for the languages above, merged and case-folded."""
    from bm25s import stopwords as bm25s_stopwords

    words: set[str] = set()
    for name in _STOPWORD_LISTS:
        words.update(word.casefold() for word in getattr(bm25s_stopwords, name))
    return frozenset(words)


def content_words(text: str) -> list[str]:
    """The text's BM25 tokens, in order, without stopwords."""
    from qagen.evaluate.systems.bm25_index import tokenize

    drop = stopwords()
    return [token for token in tokenize(text) if token not in drop]


def copied_share(question: str, passage: str) -> float | None:
    """The share of the question's distinct content words found in the passage; None for a question
    with no content word."""
    wanted = set(content_words(question))
    if not wanted:
        return None
    return len(wanted & set(content_words(passage))) / len(wanted)
