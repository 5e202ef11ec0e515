"""Where a reference answer's evidence lies in the chunk its question was drafted from.

The chunk-level retrieval metrics (`qagen.evaluate.metrics.evidence_hits`) count a retrieved chunk
as a hit when it holds the answer's *evidence*: the place in the reference chunk where the answer
is written, usually a few words, rather than the whole reference chunk (which a smaller chunk can
never hold). `locate_evidence` looks for it in three steps; the first that finds it wins:

1. `exact`: the answer as written, as whole words (`2` is not found inside `2023`).
2. `normalised`: the same after case folding, with punctuation and runs of whitespace read as one
   space (`normalise`), so an answer with a final period, backticks or another line wrapping is
   found. A match starts and ends at word boundaries.
3. `window`: an answer that is not in the chunk word for word (a generator's full-sentence answer
   such as "You can reload a tokenizer with the `Tokenizer.from_file` classmethod") is located at
   the window of the chunk that shares most of its words: of the windows twice the answer's length
   in words, the first with the most words of the answer (each counted at most as often as the
   answer has it), trimmed to its first and last shared word. It counts only when it holds at least
   half of the answer's words, and at least two. Unigram overlap (ROUGE-1) rather than ROUGE-L:
   it is linear in the chunk's length (it runs for every question of every evaluation), and inside
   a window twice the answer's length word order adds little.

In the first two steps every occurrence is evidence: nothing tells which one the question was
drafted from, and keeping only the first would favour large chunks (which hold all of them).

When no step finds it (a yes/no answer, a computed number, a translation, an answer with no letters
or digits) the evidence is `not_found`, and the chunk-level metrics have no value for the question,
for every system alike: falling back to the whole reference chunk would bring back the bias these
metrics exist to remove.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections import Counter
from typing import Literal, NamedTuple

from pydantic import Field

from qagen.evaluate.metrics.spaceless_scripts import is_unsegmented
from qagen.records import Record

__all__ = ["Evidence", "EvidenceMatch", "NormalisedText", "locate_evidence", "normalise", "normalise_with_tokens"]

EvidenceMatch = Literal["exact", "normalised", "window", "not_found"]

# Window step: windows are WINDOW_FACTOR times the answer's length in words, and must share at least
# this many of its words (and at least half of them).
WINDOW_FACTOR = 2
WINDOW_MIN_SHARED = 2


class Evidence(Record):
    """Where the reference answer is written in its reference chunk (`context`)."""

    match: EvidenceMatch = Field(
        description="How it was found: `exact`, `normalised` (case, punctuation and spacing aside), "
        "`window` (the part of the chunk sharing most of the answer's words), or `not_found`."
    )
    spans: tuple[tuple[int, int], ...] = Field(
        description="Each place, as offsets into the chunk's text (`context[start:end]`); empty when not found."
    )


# --------------------------------------------------------------------------------------------------
# Normalised text: lower-case words separated by single spaces
# --------------------------------------------------------------------------------------------------

_WORD_RE = re.compile(r"[^\W_]+")  # runs of letters and digits (`_` is punctuation here)
_ASCII_NON_WORD = str.maketrans({chr(c): " " for c in range(128) if not chr(c).isalnum()})


class Token(NamedTuple):
    """A normalised word and the half-open range `[start, end)` of the original text it came from."""

    text: str
    start: int
    end: int


class NormalisedText(NamedTuple):
    """`normalise(original)` with the words it is made of (their offsets in the original)."""

    text: str
    tokens: list[Token]
    starts: list[int]
    """Where each token starts in `text`."""


def _word_tokens(text: str) -> list[Token]:
    tokens: list[Token] = []
    for match in _WORD_RE.finditer(text):
        word, start = match.group(), match.start()
        if word.isascii():
            tokens.append(Token(word.lower(), start, match.end()))
            continue
        # A character of a script written without spaces (Han, Kana, Thai...) is a word of its own.
        piece_start = start
        for offset, char in enumerate(word, start):
            if is_unsegmented(char):
                if piece_start < offset:
                    tokens.append(_folded(text, piece_start, offset))
                tokens.append(_folded(text, offset, offset + 1))
                piece_start = offset + 1
        if piece_start < match.end():
            tokens.append(_folded(text, piece_start, match.end()))
    return tokens


def _folded(text: str, start: int, end: int) -> Token:
    folded = unicodedata.normalize("NFKC", text[start:end]).casefold()
    return Token("".join(folded.split()), start, end)  # NFKC may decompose into spaced forms


def normalise(text: str) -> str:
    """`text` as lower-case words (letters and digits) joined by single spaces; the rest dropped.

    Non-ASCII words are NFKC-normalised and case-folded, and each character of a script written
    without spaces is a word. `normalise(a) in normalise(b)`, padded with spaces, is "a occurs in b
    as whole words, case, punctuation and spacing aside".
    """
    if text.isascii():
        # The same words as `_word_tokens` gives, at C speed: contexts are many and long.
        return " ".join(text.translate(_ASCII_NON_WORD).lower().split())
    return " ".join(token.text for token in _word_tokens(text) if token.text)


def normalise_with_tokens(text: str) -> NormalisedText:
    """`normalise(text)`, with where each of its words came from in `text`."""
    tokens = [token for token in _word_tokens(text) if token.text]
    starts: list[int] = []
    position = 0
    for token in tokens:
        starts.append(position)
        position += len(token.text) + 1
    return NormalisedText(" ".join(token.text for token in tokens), tokens, starts)


# --------------------------------------------------------------------------------------------------
# The three steps
# --------------------------------------------------------------------------------------------------


def _is_edge(before: str, after: str) -> bool:
    """Whether a match may begin or end between `before` and `after` (no word is cut in two)."""
    if not before or not after or not before.isalnum() or not after.isalnum():
        return True
    return is_unsegmented(before) or is_unsegmented(after)


def _exact(answer: str, chunk: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    start = chunk.find(answer)
    while start >= 0:
        end = start + len(answer)
        if _is_edge(chunk[start - 1 : start], answer[0]) and _is_edge(answer[-1], chunk[end : end + 1]):
            spans.append((start, end))
        start = chunk.find(answer, start + 1)
    return spans


def _normalised(answer: str, chunk: NormalisedText) -> list[tuple[int, int]]:
    # Padded with spaces, a match of whole words is a match at a token start ending at a token end.
    needle, haystack = f" {answer} ", f" {chunk.text} "
    spans: list[tuple[int, int]] = []
    found = haystack.find(needle)
    while found >= 0:
        first = bisect.bisect_left(chunk.starts, found)  # `found` is where the first word starts in `text`
        last = first + answer.count(" ")
        spans.append((chunk.tokens[first].start, chunk.tokens[last].end))
        found = haystack.find(needle, found + 1)
    return spans


def _window(answer: list[str], chunk: list[Token]) -> tuple[int, int] | None:
    wanted = Counter(answer)
    width = min(WINDOW_FACTOR * len(answer), len(chunk))
    held: Counter[str] = Counter()
    shared = best = 0
    best_start = 0
    for position, token in enumerate(chunk):
        if held[token.text] < wanted[token.text]:
            shared += 1
        held[token.text] += 1
        if position >= width:
            leaving = chunk[position - width].text
            held[leaving] -= 1
            if held[leaving] < wanted[leaving]:
                shared -= 1
        if position >= width - 1 and shared > best:
            best, best_start = shared, position - width + 1
    if best < max(WINDOW_MIN_SHARED, (len(answer) + 1) // 2):
        return None
    inside = [token for token in chunk[best_start : best_start + width] if token.text in wanted]
    return inside[0].start, inside[-1].end


def locate_evidence(answer: str, chunk: str) -> Evidence:
    """Where `answer` is written in `chunk` (the reference chunk's text): see the module docstring."""
    answer = answer.strip()
    if answer and (spans := _exact(answer, chunk)):
        return Evidence(match="exact", spans=tuple(spans))
    answer_text = normalise_with_tokens(answer)
    if not answer_text.tokens:
        return Evidence(match="not_found", spans=())
    chunk_text = normalise_with_tokens(chunk)
    if spans := _normalised(answer_text.text, chunk_text):
        return Evidence(match="normalised", spans=tuple(spans))
    window = _window([token.text for token in answer_text.tokens], chunk_text.tokens)
    if window is not None:
        return Evidence(match="window", spans=(window,))
    return Evidence(match="not_found", spans=())
