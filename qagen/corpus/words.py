"""Content words: the words of a text that carry its meaning (case-folded, stopwords dropped), read by the
build's checks and the evaluator's key-term evidence (`qagen.evaluate.judges.key_terms`).

The tokens are the evaluator's BM25 tokens (`qagen.corpus.bm25_index.tokenize`), so a
question's content words are the words BM25 matches it on. The stopwords are bm25s' lists for the
languages below, merged: a text's language is not known here, and a function word of one of them
is seldom a content word of another.
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
    """The merged stopword lists, case-folded."""
    # Imported here: the CLI names the checks (`checks.rules`) without loading bm25s.
    from bm25s import stopwords as bm25s_stopwords

    words: set[str] = set()
    for name in _STOPWORD_LISTS:
        words.update(word.casefold() for word in getattr(bm25s_stopwords, name))
    return frozenset(words)


def content_words(text: str) -> list[str]:
    """The text's tokens, in order, without stopwords."""
    from qagen.corpus.bm25_index import tokenize

    drop = stopwords()
    return [token for token in tokenize(text) if token not in drop]
