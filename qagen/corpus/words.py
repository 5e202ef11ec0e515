"""Content words: the words of a text that carry its meaning (case-folded, stopwords dropped), read by the
build's checks and the evaluator's key-term evidence (`qagen.evaluate.judges.key_terms`).

The tokens are the evaluator's BM25 tokens (`tokenize`, which `qagen.corpus.bm25_index` indexes
with), so a question's content words are the words BM25 matches it on. The stopwords are bm25s' lists
for the languages below, merged: a text's language is not known here, and a function word of one of
them is seldom a content word of another.

Nothing here loads numpy or scipy (bm25s' package does, about a second of CPU): the build's free
checks read content words of the first draft while the first calls are in flight, and an import then
holds up the event loop and every call waiting on it.
"""

from __future__ import annotations

import importlib.util
import re
import unicodedata
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from types import ModuleType

# Ideographs and kana are written without spaces, so each one is a token of its own; every other
# run of letters and digits (Latin, Cyrillic, Greek, Hangul words, identifiers with `_`) is one token.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
_TOKEN = re.compile(f"[{_CJK}]|[^\\W{_CJK}]+")
_RUN_CHARACTER = re.compile(f"[^\\W{_CJK}]")
"""A character of a token's run (every token but a single ideograph or kana is a maximal run of them)."""
_ASCII_SEPARATORS = bytes(byte if chr(byte).isalnum() or chr(byte) == "_" else ord(" ") for byte in range(256))
"""`bytes.translate`'s table that makes every ASCII character a token cannot hold a space (`tokenize`)."""

_STOPWORD_LISTS = (
    "STOPWORDS_EN_PLUS",
    "STOPWORDS_FRENCH",
    "STOPWORDS_GERMAN",
    "STOPWORDS_SPANISH",
    "STOPWORDS_ITALIAN",
    "STOPWORDS_PORTUGUESE",
    "STOPWORDS_DUTCH",
)


def tokenize(text: str) -> list[str]:
    """Case-folded words, and single CJK characters; no stemming, no stopwords.

    NFC first, so a decomposed "u" + combining diaeresis in a query matches a composed "ü".
    """
    if text.isascii():
        # The same tokens, found about five times faster: in ASCII a token is a run of letters, digits
        # and `_`, so every other character becomes a space and the text is split (NFC and casefold
        # change nothing there but the case). A build tokenizes every chunk of its corpus this way.
        return text.lower().encode("ascii").translate(_ASCII_SEPARATORS).decode("ascii").split()
    return _TOKEN.findall(unicodedata.normalize("NFC", text).casefold())


def tokens_among(text: str, words: Iterable[str]) -> set[str]:
    """The `words` that are tokens of `text`: `set(words) & set(tokenize(text))`, found by looking for
    each word in the text instead of splitting all of it into tokens (a few words in a chunk of
    hundreds: many times faster)."""
    folded = unicodedata.normalize("NFC", text).casefold()
    return {word for word in words if _is_token_of(word, folded)}


def _is_token_of(word: str, folded: str) -> bool:
    """Whether `word` is a token of the normalised text `folded`: one ideograph or kana found anywhere
    in it (each is a token of its own), or a run found with no run character either side of it."""
    if _TOKEN.fullmatch(word) is None:
        return False  # no token at all: `tokenize` gives none like it
    if _RUN_CHARACTER.match(word) is None:
        return word in folded
    size, start = len(word), folded.find(word)
    while start >= 0:
        alone_before = start == 0 or _RUN_CHARACTER.match(folded, start - 1) is None
        if alone_before and _RUN_CHARACTER.match(folded, start + size) is None:
            return True
        start = folded.find(word, start + 1)
    return False


@cache
def stopwords() -> frozenset[str]:
    """The merged stopword lists, case-folded."""
    lists = _bm25s_stopwords()
    words: set[str] = set()
    for name in _STOPWORD_LISTS:
        words.update(word.casefold() for word in getattr(lists, name))
    return frozenset(words)


def _bm25s_stopwords() -> ModuleType:
    """bm25s' `stopwords` module (tuples of words, importing nothing), read from its file without
    running the package's `__init__`, which imports numpy and scipy (see the module)."""
    package = importlib.util.find_spec("bm25s")  # a top-level package is found without being imported
    if package is None or not package.submodule_search_locations:
        raise ModuleNotFoundError("No module named 'bm25s'", name="bm25s")
    path = Path(next(iter(package.submodule_search_locations))) / "stopwords.py"
    spec = importlib.util.spec_from_file_location("qagen.corpus._bm25s_stopwords", path)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"bm25s has no stopwords module at {path}", name="bm25s.stopwords")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def content_words(text: str) -> list[str]:
    """The text's tokens, in order, without stopwords."""
    drop = stopwords()
    return [token for token in tokenize(text) if token not in drop]
