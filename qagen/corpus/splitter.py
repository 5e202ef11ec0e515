"""The recursive character splitter of the cookbook notebook (LangChain's `RecursiveCharacterTextSplitter`
with its defaults: separators kept at the start of the piece after them, whitespace stripped, length in
characters), the same chunks from the same text, without importing `langchain_text_splitters`.

Why a copy: that package imports `langchain_core` (and `requests` through it), about 0.2 s of CPU
of a build's start-up before its first LLM call (benchmarks/bench_build_timeline.py), for one function.
`tests/corpus/test_splitter.py` compares the two on varied texts, so the copy cannot drift unseen.
Lengths measured in tokens still go through LangChain's splitter (`qagen.corpus.chunk.make_splitter`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol


class TextSplitter(Protocol):
    """What chunking needs of a splitter: a text's pieces, in order, whitespace stripped."""

    def split_text(self, text: str) -> list[str]: ...


class RecursiveSplitter:
    """Split by the first separator the text holds, merge the pieces up to `chunk_size` characters with
    up to `chunk_overlap` of the previous chunk's pieces, and split a piece still too long by the next
    separators (the last one, "", splits between any two characters)."""

    def __init__(self, chunk_size: int, chunk_overlap: int, separators: Sequence[str]) -> None:
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap
        self.separators = list(separators)

    def split_text(self, text: str) -> list[str]:
        return self._split(text, self.separators)

    def _split(self, text: str, separators: list[str]) -> list[str]:
        separator, rest = separators[-1], []
        for index, candidate in enumerate(separators):
            if not candidate:
                separator = candidate
                break
            if candidate in text:
                separator, rest = candidate, separators[index + 1 :]
                break
        chunks: list[str] = []
        fitting: list[str] = []
        for piece in _pieces(text, separator):
            if len(piece) < self.chunk_size:
                fitting.append(piece)
                continue
            if fitting:
                chunks.extend(self._merge(fitting))
                fitting = []
            chunks.extend(self._split(piece, rest) if rest else [piece])
        if fitting:
            chunks.extend(self._merge(fitting))
        return chunks

    def _merge(self, pieces: list[str]) -> list[str]:
        """Consecutive pieces joined into chunks of at most `chunk_size` characters, each chunk opening
        with the last pieces of the one before, up to `chunk_overlap` characters of them."""
        chunks: list[str] = []
        current: list[str] = []
        start = total = 0  # `current[start:]` is the chunk under way, `total` its length
        for piece in pieces:
            size = len(piece)
            if total + size > self.chunk_size and start < len(current):
                _append_stripped(chunks, "".join(current[start:]))
                while total > self.chunk_overlap or (total + size > self.chunk_size and total > 0):
                    total -= len(current[start])
                    start += 1
            current.append(piece)
            total += size
        _append_stripped(chunks, "".join(current[start:]))
        return chunks


def _pieces(text: str, separator: str) -> list[str]:
    """`text` cut before each `separator` (kept at the start of the piece after it), empty pieces left out."""
    if not separator:
        return list(text)
    parts = re.split(f"({re.escape(separator)})", text)
    # One captured group: the text, then each separator with the text after it.
    pieces = [parts[0], *(parts[i] + parts[i + 1] for i in range(1, len(parts), 2))]
    return [piece for piece in pieces if piece]


def _append_stripped(chunks: list[str], chunk: str) -> None:
    stripped = chunk.strip()
    if stripped:
        chunks.append(stripped)
