"""The corpus a bundled baseline retrieves from: which documents, how they are chunked, the cache
key of an index built from them, and the indexes kept in this process's memory.

Every retriever (BM25, dense, hybrid) indexes the chunks of one `CorpusChunks`, made by qagen's own
loader and splitter, so a retrieved context carries the same `source`, `start_index` and
`end_index` as the chunks a test set was drafted from, and chunk-level retrieval metrics line up.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from tqdm import tqdm

from qagen.corpus.chunk import ChunkStats, LengthUnit, chunk_documents, make_splitter
from qagen.corpus.load.documents import CorpusReport, iter_documents
from qagen.corpus.load.fingerprint import READABLE_SUFFIXES, file_digest
from qagen.corpus.load.walk import corpus_files
from qagen.errors import CorpusError
from qagen.records import Document, RetrievedContext

__all__ = ["CorpusChunks", "clear_memory", "remember"]

_logger = logging.getLogger(__name__)

T = TypeVar("T")

# Indexes kept in memory per process (each holds every chunk's text).
_MEMORY_SLOTS = 4
_memory: OrderedDict[str, Any] = OrderedDict()
# One lock for all builds: two baselines on the same corpus must not both build its index. Reentrant,
# so a hybrid retriever may build its two parts while holding it.
_memory_lock = threading.RLock()


def remember(key: str, build: Callable[[], T]) -> T:
    """The index cached in this process under `key`, else `build()`'s (then kept, least recent dropped)."""
    with _memory_lock:
        found = _memory.get(key)
        if found is None:
            found = build()
        _memory[key] = found
        _memory.move_to_end(key)
        while len(_memory) > _MEMORY_SLOTS:
            _memory.popitem(last=False)
        return found


def clear_memory() -> None:
    """Forget every index kept in this process (as a new process starts: only saved indexes help)."""
    with _memory_lock:
        _memory.clear()


class CorpusChunks:
    """A corpus (a path, file or folder, or a Hugging Face dataset) and how it is chunked.

    Loaded and chunked exactly as `qagen build` does; `chunk_overlap` defaults to a tenth of
    `chunk_size`, as in the notebook. The settings are checked now, so a bad chunk size fails
    before any question is asked.
    """

    def __init__(
        self,
        corpus: Path | str | None,
        *,
        hf_dataset: str | None = None,
        split: str = "train",
        chunk_size: int = 2000,
        chunk_overlap: int | None = None,
        length_unit: LengthUnit = "characters",
        encoding: str = "cl100k_base",
        text_column: str = "text",
        source_column: str | None = None,
        progress: bool = True,
    ) -> None:
        self.corpus = Path(corpus) if corpus is not None else None
        self.hf_dataset = hf_dataset
        self.split = split
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_size // 10 if chunk_overlap is None else chunk_overlap
        self.length_unit: LengthUnit = length_unit
        self.encoding = encoding
        self.text_column = text_column
        self.source_column = source_column
        self.progress = progress
        self.splitter = make_splitter(chunk_size, self.chunk_overlap, length_unit, encoding)
        self._fingerprint: list[tuple[str, int, str]] | None = None

    @property
    def label(self) -> str:
        """The chunking in a system's name: `chunk2000`, or `chunk512tok` in tokens."""
        unit = "" if self.length_unit == "characters" else "tok"
        return f"chunk{self.chunk_size}{unit}"

    def settings(self) -> dict[str, object]:
        """What the chunks depend on besides the corpus files' contents (which corpus, how chunked)."""
        return {
            "corpus": str(self.corpus.resolve()) if self.corpus is not None else None,
            "hf_dataset": self.hf_dataset,
            "split": self.split,
            "text_column": self.text_column,
            "source_column": self.source_column,
            "chunk_size": self.chunk_size,
            "chunk_overlap": self.chunk_overlap,
            "length_unit": self.length_unit,
            "encoding": self.encoding if self.length_unit == "tokens" else None,
        }

    def cache_key(self, settings: dict[str, object]) -> str:
        """sha256 of an index's `settings` and the corpus files' names, sizes and contents (`fingerprint`)."""
        keyed = {**settings, "files": self._files()}
        return hashlib.sha256(json.dumps(keyed, sort_keys=True).encode("utf-8")).hexdigest()

    def _files(self) -> list[tuple[str, int, str]] | None:
        """The corpus files' `fingerprint`, read once per `CorpusChunks` (an evaluation's systems ask
        for their keys several times); None for a dataset corpus."""
        if self.corpus is None:
            return None
        if self._fingerprint is None:
            self._fingerprint = fingerprint(self.corpus)
        return self._fingerprint

    def documents(self, report: CorpusReport) -> Iterator[Document]:
        """The corpus's documents, in a deterministic order; skipped inputs are counted in `report`."""
        return iter_documents(
            self.corpus,
            report=report,
            hf_dataset=self.hf_dataset,
            split=self.split,
            text_column=self.text_column,
            source_column=self.source_column,
        )

    def contexts(self, report: CorpusReport, what: str) -> list[RetrievedContext]:
        """Every chunk (repeated ones dropped, as the test sets do) as the context a retriever returns."""
        contexts: list[RetrievedContext] = []
        bar = tqdm(desc=f"Chunking the corpus for {what}", unit=" chunks", file=sys.stderr, disable=not self.progress)
        with bar:
            for chunk in chunk_documents(self.documents(report), self.splitter, ChunkStats()):
                contexts.append(as_context(chunk.text, chunk.source, chunk.start_index, chunk.end_index))
                bar.update()
        return contexts


def as_context(text: str, source: str, start_index: int, end_index: int) -> RetrievedContext:
    return RetrievedContext(text=text, source=source, start_index=start_index, end_index=end_index)


def warn_skipped(report: CorpusReport, what: str) -> None:
    """Say how many corpus inputs the loader skipped, and why (each was named as it was skipped)."""
    if report.skipped:
        _logger.warning(
            "%s: %d corpus inputs skipped (%s).",
            what,
            len(report.skipped),
            ", ".join(f"{reason}: {n}" for reason, n in report.skipped_by_reason().items()),
        )


def fingerprint(corpus: Path) -> list[tuple[str, int, str]]:
    """(relative path, size, sha256) of every input the loader reads under `corpus`, walked as it walks
    (symlinks followed, a cycle cut): what the chunks are made of, so a corpus changed in any way gets
    a new index, a file edited with its size and modification time kept included (a restore from a
    backup, `touch -r`, a tool that keeps times). Hashing reads each file once, at the speed of the
    disk (`file_digest`), and leaves it in the page cache for the loader when the index is built. Files
    of types the loader gets no text from are neither read nor counted, as in a build's `corpus.json`."""
    if not corpus.exists():
        raise CorpusError(f"Corpus path not found: {corpus}")
    entries: list[tuple[str, int, str]] = []
    # Inputs the walk skips (links to files seen before, devices) are reported by the loader itself.
    for file, relative in corpus_files(corpus, lambda skipped: None):
        if file.suffix.lower() in READABLE_SUFFIXES:
            digest = file_digest(file)
            entries.append((relative, digest.size, digest.sha256))
    return entries
