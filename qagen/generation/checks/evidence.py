"""Where a draft's evidence lies in its chunk, found without an LLM call.

The generation prompt asks for the sentence of the context that holds the answer, copied
(`Evidence: ...`). `place_evidence` finds it in the chunk with rapidfuzz's best partial alignment
(`fuzz.partial_ratio_alignment`: the window of the chunk closest to the quote by Indel distance),
so a quote with its line breaks joined, a dropped backtick or another letter case is still found,
and a sentence the chunk does not hold is not. Both are compared in one form first (`_Comparable`):
NFC, case-folded, each run of whitespace one space, so a quote differing from the chunk only in
Unicode normalisation (PDFs and macOS text are often NFD, models write NFC) or in spacing (an aligned
table quoted with single spaces) is found whole. The match keeps its offsets in the chunk.

A quote found in the chunk must also hold the answer it stands for: at least one content word
(`checks.words`; `the` holds no answer), and when the answer has content words, at least
`MIN_QUOTE_ANSWER_SHARE` of them, each exactly or by a close spelling. Otherwise it is
`unsupported`: a sentence of the chunk, but not the answer's evidence.

A reply without the evidence line (an older prompt, a prompt of the user's own) still gets a
check: the answer's content words (`checks.words`) are looked for among the chunk's words, each
exactly or by a close spelling (rapidfuzz `fuzz.ratio`), and at least half of them must be there.
Its offsets are the answer's own place in the chunk when the evaluator's rule finds it
(`qagen.corpus.evidence.locate_evidence`), else none.

What is not found, or not the answer's, is rejected as `evidence_not_found` before any critic is asked.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from typing import Literal

from pydantic import Field
from rapidfuzz import fuzz, process

from qagen.corpus.evidence import locate_evidence
from qagen.generation.checks.words import content_words
from qagen.records import Record

EVIDENCE_NOT_FOUND = "evidence_not_found"
"""The rejection reason of a draft whose evidence (or answer) its chunk does not hold."""

MIN_QUOTE_SCORE = 90.0
"""Least `partial_ratio` (0-100) of a quote against the chunk: about one character in twenty may
differ (joined lines, a dropped backtick), not a word of its own."""
MIN_ANSWER_WORD_SHARE = 0.5
"""Least share of the answer's content words found in the chunk, for replies without a quote."""
MIN_QUOTE_ANSWER_SHARE = 1 / 3
"""Least share of the answer's content words found in its quote. Lower than in the chunk: an answer
restates its question around the quoted fact (`The heapq module provides ...` for the quote `heapq ---
Heap queue algorithm`: 4 of 10 in a draft the reviewer kept)."""
MIN_WORD_RATIO = 85.0
"""Least `fuzz.ratio` of two words counted as the same word (`tag`/`tags`, `checkout`/`checkouts`)."""
_MIN_FUZZY_WORD = 4
"""Shorter words must match exactly: at 3 letters one letter off is another word."""

EvidenceMatch = Literal["quoted", "answer_words", "not_found", "unsupported", "no_words"]


class EvidencePlacement(Record):
    """Where the draft's evidence is in its chunk, and how it was found."""

    match: EvidenceMatch = Field(
        description="`quoted`: the quoted sentence found in the chunk; `answer_words`: no quote, the answer's "
        "content words found; `not_found`: neither (the draft is rejected); `unsupported`: the quote is in the "
        "chunk but does not hold the answer (rejected); `no_words`: no quote and an answer with no word to look "
        "for (not checked)."
    )
    score: float | None = Field(
        description="The quote's partial_ratio (0-100), or the share of the answer's content words found in the "
        "chunk (`answer_words`) or in the quote (`unsupported`) (0-1)."
    )
    start: int | None = Field(description="Offset of the evidence in the chunk's text; None when not placed.")
    end: int | None = Field(description="End offset (exclusive) of the evidence in the chunk's text.")

    @property
    def found(self) -> bool:
        """Whether the check passes (a draft with nothing to look for is not rejected)."""
        return self.match not in ("not_found", "unsupported")


class _Comparable:
    """A text in the form quotes and chunks are compared in, and where each of its characters came from."""

    __slots__ = ("_ends", "_runs", "_starts", "text")

    def __init__(
        self, text: str, starts: list[int] | None, ends: list[int] | None, runs: tuple[tuple[int, int], ...] = ()
    ) -> None:
        self.text = text
        self._starts = starts
        """Offset in the original text where the character at each position of `text` starts (None:
        an ASCII text, whose offsets follow from `_runs`)."""
        self._ends = ends
        """Offset (exclusive) where it ends: a character made of several (`e` + U+0301, a run of spaces)
        spans them all."""
        self._runs = runs
        """Of an ASCII text: (start, end) of each run of two or more whitespace characters in the original,
        the only places where `text` and the original part ways."""

    @classmethod
    def of(cls, original: str) -> _Comparable:
        if original.isascii():
            # ASCII is its own NFC, case-folds to its lower case and composes nothing: the form is the
            # lower-cased text with each run of whitespace one space (a run at either end too), made
            # on bytes at C speed, without a string a word (a chunk is compared once a draft, in the
            # build's LLM stage and again in its filter).
            spaced = original.encode("ascii").lower().translate(_ASCII_SPACES)
            runs = _space_runs(spaced)
            kept: list[bytes] = []  # the text between the runs, each run's first space with it
            copied = 0
            for start, end in runs:
                kept.append(spaced[copied : start + 1])
                copied = end
            kept.append(spaced[copied:])
            return cls(b"".join(kept).decode("ascii"), None, None, runs)
        pieces: list[str] = []
        starts: list[int] = []
        ends: list[int] = []
        for start, end in _clusters(original):
            cluster = original[start:end]
            if cluster.isspace():
                if pieces and pieces[-1] == " " and ends[-1] == start:
                    ends[-1] = end  # one space for the whole run
                    continue
                form = " "
            else:
                # Case-folding may expand (`ß` -> `ss`) or decompose (`İ`): each piece keeps its cluster's span.
                form = unicodedata.normalize("NFC", unicodedata.normalize("NFC", cluster).casefold())
            for piece in form:
                pieces.append(piece)
                starts.append(start)
                ends.append(end)
        return cls("".join(pieces), starts, ends)

    def span(self, first: int, stop: int) -> tuple[int, int]:
        """Where the characters `first` to `stop` (exclusive) of `text` are in the original text."""
        if self._starts is not None and self._ends is not None:
            return self._starts[first], self._ends[stop - 1]
        return self._ascii_span(first)[0], self._ascii_span(stop - 1)[1]

    def _ascii_span(self, position: int) -> tuple[int, int]:
        # Only runs of two or more whitespace characters moved what follows them.
        shrunk = 0
        for start, end in self._runs:
            at = start - shrunk  # where the run's one space is in `text`
            if at > position:
                break
            if at == position:
                return start, end
            shrunk += end - start - 1
        return position + shrunk, position + shrunk + 1


_ASCII_WHITESPACE = "".join(chr(code) for code in range(128) if chr(code).isspace())
"""What `str.isspace` calls whitespace among ASCII characters (the file and record separators too)."""
_ASCII_SPACES = bytes.maketrans(_ASCII_WHITESPACE.encode("ascii"), b" " * len(_ASCII_WHITESPACE))
"""`bytes.translate`'s table that makes each ASCII whitespace character a space."""
_SPACES = re.compile(b" +")


def _space_runs(spaced: bytes) -> tuple[tuple[int, int], ...]:
    """(start, end) of each run of two or more spaces (few in a text: looked for with `bytes.find`)."""
    runs: list[tuple[int, int]] = []
    start = spaced.find(b"  ")
    while start >= 0:
        run = _SPACES.match(spaced, start)
        assert run is not None  # (two spaces are at `start`)
        runs.append(run.span())
        start = spaced.find(b"  ", run.end())
    return tuple(runs)


def _clusters(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each run of whitespace and of each character with what NFC would compose into
    it (combining marks, Hangul jamo): the smallest pieces whose normal form is the text's."""
    start = 0
    for position in range(1, len(text) + 1):
        if position < len(text):
            char = text[position]
            if char.isspace() and text[position - 1].isspace():
                continue
            if not char.isascii() and not char.isspace() and _composes(text[start:position], char):
                continue
        if start < position:
            yield start, position
        start = position


def _composes(cluster: str, char: str) -> bool:
    if cluster.isspace():
        return False
    if unicodedata.combining(char):
        return True
    nfc = unicodedata.normalize
    return nfc("NFC", cluster + char) != nfc("NFC", cluster) + nfc("NFC", char)


def place_quote(quote: str, chunk: str) -> EvidencePlacement:
    """The chunk's window closest to `quote`, both in their `_Comparable` form; `not_found` under
    `MIN_QUOTE_SCORE` (a quote longer than the chunk is measured against the whole chunk)."""
    needle, haystack = _Comparable.of(quote.strip()).text, _Comparable.of(chunk)
    if not needle.strip() or not haystack.text:
        return EvidencePlacement(match="not_found", score=0.0, start=None, end=None)
    if len(needle) > len(haystack.text):
        # `partial_ratio` would align the chunk inside the quote, and a quote of the chunk plus text
        # of its own would pass: a quote longer than the chunk must be the whole chunk.
        whole = fuzz.ratio(needle, haystack.text)
        match: EvidenceMatch = "quoted" if whole >= MIN_QUOTE_SCORE else "not_found"
        start, end = (0, len(chunk)) if match == "quoted" else (None, None)
        return EvidencePlacement(match=match, score=round(whole, 2), start=start, end=end)
    alignment = fuzz.partial_ratio_alignment(needle, haystack.text)
    if alignment is None or alignment.score < MIN_QUOTE_SCORE or alignment.dest_end <= alignment.dest_start:
        score = alignment.score if alignment is not None else 0.0
        return EvidencePlacement(match="not_found", score=round(score, 2), start=None, end=None)
    start, end = haystack.span(alignment.dest_start, alignment.dest_end)
    # A window may begin or end on a run of whitespace: the evidence is the text between.
    while start < end and chunk[start].isspace():
        start += 1
    while end > start and chunk[end - 1].isspace():
        end -= 1
    return EvidencePlacement(match="quoted", score=round(alignment.score, 2), start=start, end=end)


def place_answer(answer: str, chunk: str) -> EvidencePlacement:
    """The answer's content words looked for in the chunk (see the module docstring)."""
    wanted = list(dict.fromkeys(content_words(answer)))
    if not wanted:
        return EvidencePlacement(match="no_words", score=None, start=None, end=None)
    chunk_words = set(content_words(chunk))
    found = sum(1 for word in wanted if _word_in(word, chunk_words))
    share = found / len(wanted)
    if share < MIN_ANSWER_WORD_SHARE:
        return EvidencePlacement(match="not_found", score=round(share, 4), start=None, end=None)
    spans = locate_evidence(answer, chunk).spans
    start, end = spans[0] if spans else (None, None)
    return EvidencePlacement(match="answer_words", score=round(share, 4), start=start, end=end)


def _word_in(word: str, words: set[str]) -> bool:
    if word in words:
        return True
    if len(word) < _MIN_FUZZY_WORD:
        return False
    return process.extractOne(word, words, scorer=fuzz.ratio, score_cutoff=MIN_WORD_RATIO) is not None


def answer_share_in_quote(answer: str, quote: str) -> float:
    """Share of the answer's content words in the quote (1.0 for an answer with none, 0.0 for a quote
    with none: it holds no answer)."""
    quoted = set(content_words(quote))
    if not quoted:
        return 0.0
    wanted = list(dict.fromkeys(content_words(answer)))
    if not wanted:
        return 1.0
    return sum(1 for word in wanted if _word_in(word, quoted)) / len(wanted)


def place_evidence(quote: str | None, answer: str, chunk: str) -> EvidencePlacement:
    """The draft's evidence in its chunk: its quote when the reply gave one (found in the chunk and
    holding the answer), else its answer's words. A quote the chunk does not hold rejects only when the
    answer's words are not there either: small models wrap the sentence in prose ("The context states:
    ...") or quote it with its markup rewritten, and on Python's documentation 3 of the 11 drafts
    rejected on their quote alone were drafts a reviewer keeps. A quote the chunk holds that does not
    hold the answer still rejects (`unsupported`): it points at the wrong sentence."""
    if quote is None or not quote.strip():
        return place_answer(answer, chunk)
    placed = place_quote(quote, chunk)
    if not placed.found:
        by_answer = place_answer(answer, chunk)
        return by_answer if by_answer.match == "answer_words" else placed
    share = answer_share_in_quote(answer, quote)
    if share < MIN_QUOTE_ANSWER_SHARE:
        return EvidencePlacement(match="unsupported", score=round(share, 4), start=None, end=None)
    return placed
