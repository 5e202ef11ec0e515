"""A record log's records by id, kept small: a few facts of each, and where its line is.

A build at 30,000 drafts stores about 100,000 records, each with the model's raw reply; held as
objects they take about 2.5 KB apiece, most of a build's memory. The LLM stage needs only a few
facts of each record (is it finished, what score), and finalize reads whole records one sampled
chunk at a time. So an index keeps, per id, what `summarise` takes from the record (its "state")
and the byte range of its line, and reads the record back from the log when it is asked for.

Even those take about 0.5 KB a record as Python objects (a build of 100,000 drafts makes about
280,000 records), so they are kept in a scratch database on disk (`qagen.runs.scratch`), private to
the index and deleted with it, of which only SQLite's page cache (a few MB) is in memory.

The log is read once: `scan` reads the lines it has not read yet, and a record this process appends
(`add`) is kept and located as it is written, so it is not read at all until it is asked for
whole. As in `RecordLog.load`, a later record with the same id replaces an earlier one.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import BinaryIO, Generic, TypeVar

from pydantic import BaseModel

from qagen.runs.scratch import scratch_database, scratch_writes
from qagen.runs.store import Located, RecordLog, RecordWriter

R = TypeVar("R", bound=BaseModel)
S = TypeVar("S")

_SCAN_BATCH = 2000
"""Entries a scan keeps at once (one transaction each)."""

_ADDED_BATCH = 1000
"""Entries of added records kept in memory before they are written at once (`_Entries.add`)."""

_NOT_SCANNED = -1
"""The offset of a record added by this process and not located by a scan yet."""


class _Entries(Generic[S]):
    """Each record's place in its log and its state, by record id, in a temporary SQLite database.

    The entries of records added one at a time wait in memory until `_ADDED_BATCH` of them are
    written in one transaction (a transaction per record was a tenth of the LLM stage's CPU); the
    database is this process's scratch copy of what the log holds, so nothing is lost by waiting."""

    def __init__(self) -> None:
        self._db = scratch_database()
        self._db.execute(
            "CREATE TABLE entry (key TEXT PRIMARY KEY, offset INTEGER, end INTEGER, line INTEGER, state BLOB)"
            " WITHOUT ROWID"
        )
        self._added: dict[str, Located[S]] = {}

    def get(self, key: str) -> Located[S] | None:
        added = self._added.get(key)
        if added is not None:
            return added
        row = self._db.execute("SELECT offset, end, line, state FROM entry WHERE key = ?", (key,)).fetchone()
        return None if row is None else _located(row)

    def add(self, key: str, entry: Located[S]) -> None:
        """Keep one entry, replacing the one with its id (written with the next batch)."""
        self._added[key] = entry
        if len(self._added) >= _ADDED_BATCH:
            self._write_added()

    def put(self, entries: Iterable[tuple[str, Located[S]]]) -> None:
        """Keep these entries, each replacing the one with its id (a later record replaces an earlier one)."""
        self._write_added()  # (earlier than these)
        self._write(entries)

    def _write_added(self) -> None:
        if self._added:
            added, self._added = self._added, {}
            self._write(added.items())

    def _write(self, entries: Iterable[tuple[str, Located[S]]]) -> None:
        rows = [(key, e.offset, e.end, e.line, pickle.dumps(e.record, pickle.HIGHEST_PROTOCOL)) for key, e in entries]
        # One transaction: a scan's thousands of lines are written at once.
        with scratch_writes("the index of the run's records"), self._db:
            self._db.executemany("INSERT OR REPLACE INTO entry VALUES (?, ?, ?, ?, ?)", rows)

    def items(self) -> Iterator[tuple[str, S]]:
        self._write_added()
        for key, state in self._db.execute("SELECT key, state FROM entry"):
            yield key, pickle.loads(state)

    def __len__(self) -> int:
        self._write_added()
        count: int = self._db.execute("SELECT count(*) FROM entry").fetchone()[0]
        return count


def _located(row: tuple[int, int, int, bytes]) -> Located[S]:
    offset, end, line, state = row
    # The states are this index's own, pickled by this process into its private database.
    return Located(offset, end, line, pickle.loads(state))


class RecordIndex(Generic[R, S]):
    """The records of one log by id: each one's state in memory, the record itself on disk."""

    def __init__(self, log: RecordLog[R], summarise: Callable[[R], S]) -> None:
        self.log = log
        self._summarise = summarise
        self._entries: _Entries[S] = _Entries()
        self._scanned_bytes = 0
        self._scanned_lines = 0
        self._writer: RecordWriter[R] | None = None
        self._reader: BinaryIO | None = None

    def scan(self) -> None:
        """Read the lines not read yet (every line the first time): states and places of their records."""
        batch: list[tuple[str, Located[S]]] = []
        for located in self.log.iter_located(self._scanned_bytes, self._scanned_lines + 1):
            key = str(getattr(located.record, self.log.key))
            batch.append((key, Located(located.offset, located.end, located.line, self._summarise(located.record))))
            if len(batch) == _SCAN_BATCH:
                self._keep(batch)
                batch = []
        self._keep(batch)

    def _keep(self, batch: list[tuple[str, Located[S]]]) -> None:
        """Keep scanned entries, and read on after them (a line that stops a scan is read again by the next)."""
        if batch:
            self._entries.put(batch)
            last = batch[-1][1]
            self._scanned_bytes, self._scanned_lines = last.end, last.line

    def state(self, key: str) -> S | None:
        """What the index keeps of the record with this id; None when there is none."""
        entry = self._entries.get(key)
        return None if entry is None else entry.record

    def states(self) -> Iterator[S]:
        return (state for _, state in self._entries.items())

    def items(self) -> Iterator[tuple[str, S]]:
        """Each id with its state."""
        return self._entries.items()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> R | None:
        """The whole record with this id, read back from the log; None when there is none."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry.offset == _NOT_SCANNED:
            self.scan()
            entry = self._entries.get(key)
            if entry is None:  # (a scan replaces an entry, never removes one)
                raise RuntimeError(f"{self.log.path} lost the record {key}; run the command again")
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
        size = self._writer.append(record)
        state = self._summarise(record)
        key = str(getattr(record, self.log.key))
        if start == self._scanned_bytes:
            # Right after what was read: located now, and the next scan starts after it.
            end, line = start + size, self._scanned_lines + 1
            self._entries.add(key, Located(start, end, line, state))
            self._scanned_bytes, self._scanned_lines = end, line
        else:  # (no scan yet, or lines of another writer between: the next scan reads them all)
            self._entries.add(key, Located(_NOT_SCANNED, _NOT_SCANNED, _NOT_SCANNED, state))
        return state

    def close(self) -> None:
        """Close the file `get` reads from (the index stays usable: it opens it again)."""
        if self._reader is not None:
            self._reader.close()
            self._reader = None
