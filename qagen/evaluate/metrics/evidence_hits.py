"""The chunk-level hit rule: whether a retrieved chunk holds the reference answer's evidence.

The rule
--------
The *evidence* is where the reference answer is written in the chunk its question was drafted from
(`qagen.corpus.evidence.locate_evidence`). A retrieved chunk is a **hit** when

- it contains the evidence, or
- it lies inside the reference chunk and covers at least `MIN_EVIDENCE_COVERAGE` (half) of it.

The first branch makes the metric independent of chunk size: a 500-character chunk holding the
answer's sentence counts as much as a 2,000-character one, where the rule it replaced asked every
chunk to cover half of the reference chunk, which a chunk a quarter of its size never does. The
second branch is for evidence cut by a chunk boundary: half is the largest share for which, however
a boundary cuts the evidence in two, one of the two chunks still counts; any less would count
slivers. A chunk outside the reference chunk must hold all of the evidence: the reference chunk is
the text known to support the question, so a piece of the evidence counts only from inside it.

How a chunk is placed
---------------------
- **By offsets** when the retrieved chunk has a source and character offsets and the question has
  its chunk's offsets in the same document (the bundled baseline's chunks, and any system that
  reports `start_index`): the rule above on character ranges, exactly. Chunks of another source
  never hit.
- **By text** otherwise (a system that reports texts only): the chunk contains the evidence when
  the evidence's words occur in it (`evidence.normalise`: case, punctuation and spacing aside); it
  lies inside the reference chunk when its words occur in the reference chunk's, and coverage is
  then counted in normalised characters. A chunk whose reported source is another document never
  hits. A short answer that also occurs elsewhere (a number) can match a chunk by chance this way;
  offsets have no such chance matches.

Questions whose evidence cannot be located have no chunk-level value (see `evidence`); with the
question's chunk text known, every retrieved chunk can be placed one way or the other.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from functools import cached_property

from qagen.corpus.evidence import Evidence, normalise, normalise_with_tokens
from qagen.evaluate.metrics.retrieval import Span, span_overlap

__all__ = ["MIN_EVIDENCE_COVERAGE", "ReferenceEvidence", "covers_evidence"]

MIN_EVIDENCE_COVERAGE = 0.5
"""Share of the evidence a chunk inside the reference chunk must cover to be a hit."""


def covers_evidence(retrieved: Span, evidence: Span, reference: Span) -> bool:
    """The rule on character ranges: `retrieved` holds `evidence` (which lies in `reference`).

    True when `retrieved` is of the same source and contains `evidence`, or lies inside `reference`
    and covers at least `MIN_EVIDENCE_COVERAGE` of it.
    """
    source, start, end = retrieved
    if source != evidence.source:
        return False
    if start <= evidence.start and evidence.end <= end:
        return True
    inside = source == reference.source and reference.start <= start and end <= reference.end
    needed = MIN_EVIDENCE_COVERAGE * (evidence.end - evidence.start)
    return inside and span_overlap(start, end, evidence.start, evidence.end) >= needed


class ReferenceEvidence:
    """One question's evidence, against which its retrieved chunks are tested.

    `chunk` is the reference chunk's text; `reference` its place in its document when known (source
    and offsets), which lets chunks with offsets be placed by offsets.
    """

    def __init__(self, chunk: str, evidence: Evidence, reference: Span | None, source: str | None) -> None:
        if not evidence.spans:
            raise ValueError("the evidence was not found: there is nothing to hold")
        self.chunk = chunk
        self.evidence = evidence
        self.source = source
        # Offsets are usable only when they describe this very text (`document[start:end] == chunk`).
        usable = reference is not None and reference.end - reference.start == len(chunk)
        self.reference = reference if usable else None

    def holds(self, text: str, span: Span | None, source: str | None) -> bool:
        """Whether a retrieved chunk (its text, its place when known, its source when known) is a hit."""
        if self.reference is not None and span is not None:
            offset = self.reference.start
            return any(
                covers_evidence(span, Span(self.reference.source, offset + start, offset + end), self.reference)
                for start, end in self.evidence.spans
            )
        if source is not None and self.source is not None and source != self.source:
            return False
        return self._holds_text(normalise(text))

    def relevance(self, chunks: Sequence[tuple[str, Span | None, str | None]]) -> list[bool]:
        """One bool per retrieved chunk, best first: True at the first hit only (one relevant item,
        as `retrieval.binary_relevance` counts repeats), so the list scores with `n_relevant=1`."""
        found = False
        relevance: list[bool] = []
        for text, span, source in chunks:
            hit = not found and self.holds(text, span, source)
            relevance.append(hit)
            found = found or hit
        return relevance

    # ----------------------------------------------------------------------------- by text

    @cached_property
    def _normalised_chunk(self) -> str:
        return normalise(self.chunk)

    @cached_property
    def _normalised_spans(self) -> list[tuple[int, int]]:
        """The evidence's places in the normalised chunk: from its first word to its last."""
        chunk = self._normalised_chunk
        places: list[tuple[int, int]] = []
        for start, end in self.evidence.spans:
            # Evidence starts and ends between words, so its words follow those before it (checked:
            # a cut word, possible in scripts with combining marks, takes the word-by-word way).
            before, words = normalise(self.chunk[:start]), normalise(self.chunk[start:end])
            place = len(before) + 1 if before else 0
            if words and chunk[place : place + len(words)] == words:
                places.append((place, place + len(words)))
            elif (found := self._place_by_tokens(start, end)) is not None:
                places.append(found)
        return places

    def _place_by_tokens(self, start: int, end: int) -> tuple[int, int] | None:
        chunk = normalise_with_tokens(self.chunk)
        first = bisect.bisect_right([token.end for token in chunk.tokens], start)  # first word ending after start
        last = bisect.bisect_left([token.start for token in chunk.tokens], end) - 1  # last word starting before end
        if first > last:
            return None
        return chunk.starts[first], chunk.starts[last] + len(chunk.tokens[last].text)

    def _holds_text(self, text: str) -> bool:
        if not text:
            return False
        chunk = self._normalised_chunk
        padded = f" {text} "
        for start, end in self._normalised_spans:
            if f" {chunk[start:end]} " in padded:
                return True
        # Inside the reference chunk: wherever its words occur there (its first and last word may be cut).
        found = chunk.find(text)
        while found >= 0:
            for start, end in self._normalised_spans:
                if span_overlap(found, found + len(text), start, end) >= MIN_EVIDENCE_COVERAGE * (end - start):
                    return True
            found = chunk.find(text, found + 1)
        return False
