"""How counts are written in what qagen says: "1 question", "2 questions"."""

from __future__ import annotations


def plural(count: int, word: str, many: str | None = None) -> str:
    """`word` for a count of one, else its plural (`many`, or `word` + "s"); the count is not written."""
    return word if count == 1 else (many if many is not None else f"{word}s")


def counted(count: int, word: str, many: str | None = None) -> str:
    """The count and the word it counts: "1 question", "2 questions", "1,024 drafts"."""
    return f"{count:,} {plural(count, word, many)}"
