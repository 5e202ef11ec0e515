"""The one cap on how much text qagen takes from anything it asks: a model's reply (build, the
judges, the baseline's reader) and a RAG system's answer and contexts (evaluate).

A runaway reply (a small local model repeating itself, a RAG system that returns a whole document as
its answer) is cut to `MAX_REPLY_CHARS` before anything reads or stores it, and the cut is written at
its end, so that neither the run directory nor every judge's prompt carries megabytes of it.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["MAX_REPLY_CHARS", "Capped", "cap_text"]

MAX_REPLY_CHARS = 50_000
"""Longer texts are cut to this many characters before anything reads or stores them."""


class Capped(NamedTuple):
    """A text after the cap, and its length before it when it was cut."""

    text: str
    """The text itself when short enough, else its first `MAX_REPLY_CHARS` characters and a note saying so."""
    cut_from: int | None
    """The length in characters before the cut; None when nothing was cut."""


def cap_text(text: str) -> Capped:
    """`text` cut to `MAX_REPLY_CHARS` characters, the cut written at its end (see the module)."""
    if len(text) <= MAX_REPLY_CHARS:
        return Capped(text, None)
    note = f"\n[qagen: reply cut here, after {MAX_REPLY_CHARS:,} of its {len(text):,} characters]"
    return Capped(text[:MAX_REPLY_CHARS] + note, len(text))
