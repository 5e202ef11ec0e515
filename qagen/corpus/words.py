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
from functools import cache
from pathlib import Path
from types import ModuleType

# Ideographs and kana are written without spaces, so each one is a token of its own; every other
# run of letters and digits (Latin, Cyrillic, Greek, Hangul words, identifiers with `_`) is one token.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
_TOKEN = re.compile(f"[{_CJK}]|[^\\W{_CJK}]+")

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
    return _TOKEN.findall(unicodedata.normalize("NFC", text).casefold())


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
