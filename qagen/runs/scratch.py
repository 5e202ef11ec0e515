"""Temporary SQLite databases on disk, for what a build would otherwise hold in memory for every draft.

A build of 100,000 drafts handles about 280,000 records, 100,000 candidate rows and tens of
thousands of kept questions; whatever it keeps of each one as Python objects (a few hundred bytes
apiece) makes its memory grow with its drafts. What it must keep of them (the record index's states,
the near-duplicate filter's index of the kept questions, the sets of ids the final write counts) goes
to a database of its own instead: SQLite's temporary database (an empty file name), private to the
object that made it and deleted when it is closed, of which only SQLite's page cache (a few MB) is
in memory.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from qagen.errors import RunWriteError

_KEY_BATCH = 1000
"""Keys a `KeySet` gathers before writing them (one statement each batch)."""


def scratch_database() -> sqlite3.Connection:
    """A new temporary database on disk, deleted when closed. Used by one thread at a time, but not
    always the one that made it (a notebook's build runs its event loop in a thread)."""
    return sqlite3.connect("", check_same_thread=False, isolation_level=None)


@contextmanager
def scratch_writes(what: str) -> Iterator[None]:
    """Writes to a scratch database, a failed one (a full disk where temporary files go) said as a
    `RunWriteError` naming `what` was being kept."""
    try:
        yield
    except sqlite3.Error as exc:
        raise RunWriteError(
            f"Cannot keep {what} in a temporary file: {exc}. Free some space in the temporary folder (the "
            "TMPDIR environment variable names another) and run the same command again: every finished "
            "record is kept."
        ) from exc


class KeySet:
    """A set of strings in a scratch database: `add`, `in` and `len`, in memory that does not grow
    with the keys."""

    def __init__(self, what: str) -> None:
        """`what`: what the keys are, for the message of a failed write (`scratch_writes`)."""
        self._what = what
        self._db = scratch_database()
        self._db.execute("CREATE TABLE key (key TEXT PRIMARY KEY) WITHOUT ROWID")
        self._pending: list[tuple[str]] = []

    def add(self, key: str) -> None:
        self._pending.append((key,))
        if len(self._pending) >= _KEY_BATCH:
            self._flush()

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        self._flush()
        return self._db.execute("SELECT 1 FROM key WHERE key = ?", (key,)).fetchone() is not None

    def __len__(self) -> int:
        self._flush()
        count: int = self._db.execute("SELECT count(*) FROM key").fetchone()[0]
        return count

    def among(self, keys: Iterable[str]) -> set[str]:
        """The `keys` in the set: `{key for key in keys if key in self}`, asked in one statement."""
        self._flush()
        rows = self._db.execute(
            "SELECT key FROM key WHERE key IN (SELECT value FROM json_each(?))", (json.dumps(list(keys)),)
        )
        return {key for (key,) in rows}

    def _flush(self) -> None:
        if self._pending:
            with scratch_writes(self._what):
                self._db.executemany("INSERT OR IGNORE INTO key VALUES (?)", self._pending)
            self._pending = []
