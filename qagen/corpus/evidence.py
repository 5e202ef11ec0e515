"""Where a reference answer's evidence lies in the chunk its question was drafted from.

The chunk-level retrieval metrics (`qagen.evaluate.metrics.evidence_hits`) count a retrieved chunk
as a hit when it holds the answer's *evidence*: the place in the reference chunk where the answer
is written, usually a few words, rather than the whole reference chunk (which a smaller chunk can
never hold). `locate_evidence` looks for it in three steps; the first that finds it wins:

1. `exact`: the answer as written, as whole words (`2` is not found inside `2023`).
2. `normalised`: the same with case, accents, punctuation and spacing aside (`normalise`), so an
   answer with a final period, backticks or another line wrapping is found. A match starts and
   ends at word boundaries.
3. `window`: an answer that is not in the chunk word for word (a generator's full-sentence answer
   such as "You can reload a tokenizer with the `Tokenizer.from_file` classmethod") is located at
   the window of the chunk that shares most of its words: of the windows twice the answer's length
   in words that start at one of its words, the first with the most words of the answer (each
   counted at most as often as the answer has it), trimmed to its last shared word. It counts
   only when it holds at least half of the answer's words, and at least two. Unigram overlap
   (ROUGE-1) rather than ROUGE-L: it is linear in the chunk's length (it runs for every question
   of every evaluation), and inside a window twice the answer's length word order adds little.

In the first two steps every occurrence is evidence: nothing tells which one the question was
drafted from, and keeping only the first would favour large chunks (which hold all of them).

A test set made by qagen carries each question's evidence as the build placed it (the sentence the
generator quoted, found in the chunk: `qagen.generation.checks.evidence`): its offsets are used as
they are (`quoted`), and the three steps only serve sets without them.

When no step finds it (a yes/no answer, a computed number, a translation, an answer with no letters
or digits) the evidence is `not_found`, and the chunk-level metrics have no value for the question,
for every system alike: falling back to the whole reference chunk would bring back the bias these
metrics exist to remove.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections import Counter
from typing import Literal, NamedTuple

from pydantic import Field

from qagen.corpus.spaceless_scripts import is_unsegmented
from qagen.records import Record

__all__ = ["Evidence", "EvidenceMatch", "NormalisedText", "locate_evidence", "normalise", "normalise_with_tokens"]

EvidenceMatch = Literal["quoted", "exact", "normalised", "window", "not_found"]

# Window step: windows are WINDOW_FACTOR times the answer's length in words, and must share at least
# this many of its words (and at least half of them).
WINDOW_FACTOR = 2
WINDOW_MIN_SHARED = 2


class Evidence(Record):
    """Where the reference answer is written in its reference chunk (`context`)."""

    match: EvidenceMatch = Field(
        description="How it was found: `quoted` (the sentence the build placed when the question was drafted: "
        "the dataset's `evidence_start`/`evidence_end`), `exact`, `normalised` (case, accents, punctuation and "
        "spacing aside), `window` (the part of the chunk sharing most of the answer's words), or `not_found`."
    )
    spans: tuple[tuple[int, int], ...] = Field(
        description="Each place, as offsets into the chunk's text (`context[start:end]`); empty when not found."
    )


# --------------------------------------------------------------------------------------------------
# Normalised text: lower-case words separated by single spaces
# --------------------------------------------------------------------------------------------------

_WORD_RE = re.compile(r"[^\W_]+")  # runs of letters and digits (`_` is punctuation here)
_ASCII_WORD_RE = re.compile(r"[A-Za-z0-9]+")
_ASCII_NON_WORD = bytes(byte if chr(byte).isalnum() else ord(" ") for byte in range(256))
"""`bytes.translate`'s table that makes every ASCII character but a letter or digit a space (`normalise`)."""


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
    folded = unicodedata.normalize("NFD", unicodedata.normalize("NFKC", text[start:end]).casefold())
    # Combining marks are dropped (accents aside): they are no word characters to the tokenizer, so
    # `e` + U+0301 would otherwise read as `e` where the composed `é` reads as `é`.
    kept = (char for char in folded if not char.isspace() and not unicodedata.category(char).startswith("M"))
    return Token("".join(kept), start, end)


def normalise(text: str) -> str:
    """`text` as lower-case words (letters and digits) joined by single spaces; the rest dropped.

    Non-ASCII words are NFKC-normalised, case-folded and stripped of combining marks, and each
    character of a script written without spaces is a word. `normalise(a) in normalise(b)`, padded
    with spaces, is "a occurs in b as whole words, case, accents, punctuation and spacing aside".
    """
    if text.isascii():
        # The same words as `_word_tokens` gives, at C speed: contexts are many and long.
        return b" ".join(text.encode("ascii").translate(_ASCII_NON_WORD).lower().split()).decode("ascii")
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
    if after and unicodedata.category(after).startswith("M"):
        return False  # a combining mark belongs to the letter before it
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


class _ChunkWords:
    """A chunk's normalised words, and where each came from in the chunk (worked out when asked)."""

    def __init__(self, chunk: str) -> None:
        self.chunk = chunk
        self._spans: list[tuple[int, int]] | None = None
        if chunk.isascii():
            self.words = normalise(chunk).split()  # at C speed: most answers are not found this way
        else:
            tokens = normalise_with_tokens(chunk).tokens
            self.words = [token.text for token in tokens]
            self._spans = [(token.start, token.end) for token in tokens]

    def span(self, first: int, last: int) -> tuple[int, int]:
        """Where words `first` to `last` (indices into `words`) are in the chunk."""
        if self._spans is not None:
            return self._spans[first][0], self._spans[last][1]
        # ASCII: the same words as `normalise` makes, runs of letters and digits, skipped at C speed.
        matches = list(itertools.islice(_ASCII_WORD_RE.finditer(self.chunk), first, last + 1))
        return matches[0].start(), matches[-1].end()


def _normalised(answer: str, chunk: _ChunkWords) -> list[tuple[int, int]]:
    # Padded with spaces, a match of whole words starts at a space and ends at one.
    needle, haystack = f" {answer} ", f" {' '.join(chunk.words)} "
    spans: list[tuple[int, int]] = []
    found = haystack.find(needle)
    while found >= 0:
        first = haystack.count(" ", 0, found)  # the words before the match: one space each
        spans.append(chunk.span(first, first + answer.count(" ")))
        found = haystack.find(needle, found + 1)
    return spans


def _window(answer: list[str], words: list[str]) -> tuple[int, int] | None:
    """The first and last word counted as shared with `answer` in the best window (module docstring).

    A window is as good as the same window moved on to its first shared word, so only windows
    starting at a shared word are scored: two pointers over the shared words' positions.
    """
    wanted = Counter(answer)
    width = WINDOW_FACTOR * len(answer)
    shared_at = [position for position, word in enumerate(words) if word in wanted]
    held: Counter[str] = Counter()
    shared = best = 0
    best_window = (0, 0)  # indices into shared_at
    end = 0  # shared_at[end] is the first shared word beyond the current window
    for begin, start in enumerate(shared_at):
        while end < len(shared_at) and shared_at[end] < start + width:
            word = words[shared_at[end]]
            shared += held[word] < wanted[word]  # each word counts as often as the answer has it
            held[word] += 1
            end += 1
        if shared > best:
            best, best_window = shared, (begin, end)
        leaving = words[start]
        held[leaving] -= 1
        shared -= held[leaving] < wanted[leaving]
    if best < max(WINDOW_MIN_SHARED, (len(answer) + 1) // 2):
        return None
    # Trimmed to the last word that counted: a word the answer has once, seen again, does not.
    counted: Counter[str] = Counter()
    last = shared_at[best_window[0]]
    for position in shared_at[best_window[0] : best_window[1]]:
        if counted[words[position]] < wanted[words[position]]:
            counted[words[position]] += 1
            last = position
    return shared_at[best_window[0]], last


def locate_evidence(answer: str, chunk: str) -> Evidence:
    """Where `answer` is written in `chunk` (the reference chunk's text): see the module docstring."""
    answer = answer.strip()
    if answer and (spans := _exact(answer, chunk)):
        return Evidence(match="exact", spans=tuple(spans))
    answer_words = normalise(answer)
    if not answer_words:
        return Evidence(match="not_found", spans=())
    words = _ChunkWords(chunk)
    if spans := _normalised(answer_words, words):
        return Evidence(match="normalised", spans=tuple(spans))
    window = _window(answer_words.split(" "), words.words)
    if window is not None:
        return Evidence(match="window", spans=(words.span(*window),))
    return Evidence(match="not_found", spans=())
