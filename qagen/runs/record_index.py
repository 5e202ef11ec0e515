"""A record log's records by id, kept small: a few facts of each, and where its line is.

A build at 30,000 drafts stores about 100,000 records, each with the model's raw reply; held as
objects they take about 2.5 KB apiece, most of a build's memory. The LLM stage needs only a few
facts of each record (is it finished, what score), and finalize reads whole records one sampled
chunk at a time. So an index keeps, per id, what `summarise` takes from the record (its "state")
and the byte range of its line, and reads the record back from the log when it is asked for.

The log is read once: `scan` reads the lines it has not read yet, and a record this process appends
(`add`) is kept and located as it is written, so it is not read at all until it is asked for
whole. As in `RecordLog.load`, a later record with the same id replaces an earlier one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import BinaryIO, Generic, TypeVar

from pydantic import BaseModel

from qagen.runs.store import Located, RecordLog, RecordWriter

R = TypeVar("R", bound=BaseModel)
S = TypeVar("S")

_NOT_SCANNED = -1
"""The offset of a record added by this process and not located by a scan yet."""


class RecordIndex(Generic[R, S]):
    """The records of one log by id: each one's state in memory, the record itself on disk."""

    def __init__(self, log: RecordLog[R], summarise: Callable[[R], S]) -> None:
        self.log = log
        self._summarise = summarise
        self._entries: dict[str, Located[S]] = {}
        self._scanned_bytes = 0
        self._scanned_lines = 0
        self._writer: RecordWriter[R] | None = None
        self._reader: BinaryIO | None = None

    def scan(self) -> None:
        """Read the lines not read yet (every line the first time): states and places of their records."""
        for located in self.log.iter_located(self._scanned_bytes, self._scanned_lines + 1):
            key = str(getattr(located.record, self.log.key))
            self._entries[key] = Located(located.offset, located.end, located.line, self._summarise(located.record))
            self._scanned_bytes, self._scanned_lines = located.end, located.line

    def state(self, key: str) -> S | None:
        """What the index keeps of the record with this id; None when there is none."""
        entry = self._entries.get(key)
        return None if entry is None else entry.record

    def states(self) -> Iterator[S]:
        return (entry.record for entry in self._entries.values())

    def items(self) -> Iterator[tuple[str, S]]:
        """Each id with its state."""
        return ((key, entry.record) for key, entry in self._entries.items())

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> R | None:
        """The whole record with this id, read back from the log; None when there is none."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry.offset == _NOT_SCANNED:
            self.scan()
            entry = self._entries[key]
        if self._reader is None:
            self._reader = self.log.path.open("rb")
        return self.log.read_at(self._reader, entry)

    @contextmanager
    def appending(self) -> Iterator[None]:
        """`add` may append records to the log while this lasts (each flushed at once)."""
        with self.log.writer() as writer:
            self._writer = writer
            try:
                yield
            finally:
                self._writer = None

    def add(self, record: R) -> S:
        """Append a record to the log (within `appending`) and keep its state; return the state."""
        if self._writer is None:
            raise RuntimeError("RecordIndex.add outside `appending()`")
        start = self._writer.position()
        self._writer.append(record)
        state = self._summarise(record)
        key = str(getattr(record, self.log.key))
        if start == self._scanned_bytes:
            # Right after what was read: located now, and the next scan starts after it.
            end, line = self._writer.position(), self._scanned_lines + 1
            self._entries[key] = Located(start, end, line, state)
            self._scanned_bytes, self._scanned_lines = end, line
        else:  # (no scan yet, or lines of another writer between: the next scan reads them all)
            self._entries[key] = Located(_NOT_SCANNED, _NOT_SCANNED, _NOT_SCANNED, state)
        return state

    def close(self) -> None:
        """Close the file `get` reads from (the index stays usable: it opens it again)."""
        if self._reader is not None:
            self._reader.close()
            self._reader = None
