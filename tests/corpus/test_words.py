"""Content words without bm25s' package: the build's free checks read them while calls are in flight."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from hypothesis import given, settings
from hypothesis import strategies as st

from qagen.corpus import words


def test_content_words_load_neither_bm25s_nor_scipy() -> None:
    script = textwrap.dedent(
        """
        import sys
        from qagen.corpus.words import content_words
        assert content_words("What is the role of the stdlib in Tokyo?") == ["role", "stdlib", "tokyo"]
        print(sorted(name for name in ("bm25s", "scipy", "numpy") if name in sys.modules))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_stopwords_are_bm25s_lists() -> None:
    from bm25s import stopwords as bm25s_stopwords

    expected = {word.casefold() for name in words._STOPWORD_LISTS for word in getattr(bm25s_stopwords, name)}
    assert words.stopwords() == frozenset(expected)
    assert "the" in words.stopwords() and "und" in words.stopwords()


def test_bm25_index_tokenizes_as_content_words_do() -> None:
    from qagen.corpus.bm25_index import tokenize

    assert tokenize is words.tokenize
    assert tokenize("U\u0308ber-Test: 東京") == ["über", "test", "東", "京"]  # NFC first, CJK one by one


def _tokens_by_the_pattern(text: str) -> list[str]:
    """`tokenize` as the pattern finds them, for any text (the ASCII shortcut's reference)."""
    import unicodedata

    return words._TOKEN.findall(unicodedata.normalize("NFC", text).casefold())


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=80))
def test_ascii_text_is_tokenized_as_the_pattern_tokenizes_it(text: str) -> None:
    assert words.tokenize(text) == _tokens_by_the_pattern(text)


def test_ascii_shortcut_table() -> None:
    cases = {
        "": [],
        "What is `os.path.join(a, b)`?": ["what", "is", "os", "path", "join", "a", "b"],
        "snake_case CamelCase-2024\tTabs\x1cFS\x7fDEL": ["snake_case", "camelcase", "2024", "tabs", "fs", "del"],
        "Naïve café, 日本語 text": ["naïve", "café", "日", "本", "語", "text"],  # not ASCII: the pattern
    }
    for text, tokens in cases.items():
        assert words.tokenize(text) == tokens == _tokens_by_the_pattern(text)
