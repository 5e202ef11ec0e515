"""Append-only JSONL logs of records: the run directory's memory, safe against `kill -9`.

Each finished call is appended as one line and flushed to the OS at once, so killing the process
loses only the calls in flight. A line cut short by a crash mid-write is detected on the next
open, reported, and cut off; every complete line before it is kept.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO, Generic, NamedTuple, TypeVar

from pydantic import BaseModel, ValidationError

from qagen.errors import QagenError

R = TypeVar("R", bound=BaseModel)
T = TypeVar("T")  # a store's records: BaseModels too, typed by what the executor needs of them


def record_key(*parts: str) -> str:
    """A stable id from parts (sha256; never Python's per-process salted `hash()`)."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8"))
        digest.update(b"\x00")
    return digest.hexdigest()[:20]


class Located(NamedTuple, Generic[T]):
    """A record of a log and where its line is: bytes `offset` to `end`, line number `line`."""

    offset: int
    end: int
    line: int
    record: T


class RecordLog(Generic[R]):
    """A JSONL file of `R` records; a later record with the same id replaces an earlier one."""

    def __init__(self, path: Path, record_type: type[R], *, key: str = "id") -> None:
        self.path = path
        self.record_type = record_type
        self.key = key
        self.repaired_bytes = 0

    def load(self) -> dict[str, R]:
        """All records by id (the last one wins), after cutting off a torn final line."""
        records: dict[str, R] = {}
        for record in self.iter_records():
            records[str(getattr(record, self.key))] = record
        return records

    def iter_records(self) -> Iterator[R]:
        if not self.path.exists():
            return
        self._repair_torn_tail()
        with self.path.open("r", encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                yield self.parse(line, number)

    def parse(self, line: str | bytes, number: int) -> R:
        """The record of one line (`number` counts from 1, for the message when it is no record)."""
        try:
            return self.record_type.model_validate_json(line)
        except ValidationError as exc:
            raise QagenError(
                f"{self.path} line {number} is not a valid record ({exc.error_count()} errors); "
                "the run directory was edited or is from another qagen version."
            ) from exc

    def iter_located(self, start: int = 0, first_line: int = 1) -> Iterator[Located[R]]:
        """Each record of a complete line from byte `start` (a line's start: line `first_line`) on,
        with where it is; from the start of the file, a torn final line is cut off first."""
        if not self.path.exists():
            return
        if start == 0:
            self._repair_torn_tail()
        with self.path.open("rb") as handle:
            handle.seek(start)
            offset = start
            for number, line in enumerate(handle, start=first_line):
                if not line.endswith(b"\n"):
                    return  # still being written: a later read takes it
                end = offset + len(line)
                if line.strip():
                    yield Located(offset, end, number, self.parse(line, number))
                offset = end

    def read_at(self, handle: BinaryIO, located: Located[Any]) -> R:
        """The record of the line at `located.offset` of this log, opened as `handle` ("rb")."""
        handle.seek(located.offset)
        return self.parse(handle.read(located.end - located.offset), located.line)

    def _repair_torn_tail(self) -> None:
        """Cut a final line that has no newline and does not parse (a write cut short by a crash)."""
        size = self.path.stat().st_size
        if size == 0:
            return
        with self.path.open("rb+") as handle:
            handle.seek(max(0, size - 1))
            if handle.read(1) == b"\n":
                return
            # Find the start of the last line.
            block = min(size, 1 << 20)
            while True:
                handle.seek(size - block)
                tail = handle.read(block)
                newline = tail.rfind(b"\n")
                if newline >= 0 or block == size:
                    break
                block = min(size, block * 2)
            line_start = size - block + newline + 1 if newline >= 0 else 0
            handle.seek(line_start)
            last = handle.read()
            try:
                json.loads(last)
            except ValueError:
                handle.truncate(line_start)
                self.repaired_bytes = size - line_start
                return
            handle.seek(size)
            handle.write(b"\n")

    def writer(self) -> RecordWriter[R]:
        return RecordWriter(self.path)

    @contextmanager
    def open(self) -> Iterator[RecordStore[R]]:
        """The records by id, to read and to add to (each addition appended at once)."""
        with self.writer() as writer:
            yield RecordStore(self.load(), writer, self.key)


class RecordStore(Generic[T]):
    """A log's records in memory, by id; `add` keeps a record and appends it to the log at once."""

    def __init__(self, records: dict[str, T], writer: RecordWriter[Any], key: str = "id") -> None:
        self.records = records
        self._writer = writer
        self._key = key

    def get(self, key: str) -> T | None:
        return self.records.get(key)

    def add(self, record: T) -> None:
        self.records[str(getattr(record, self._key))] = record
        self._writer.append(record)


class RecordWriter(Generic[R]):
    """Appends records, one flushed line each."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._handle = path.open("a", encoding="utf-8")

    def append(self, record: R) -> None:
        self._handle.write(record.model_dump_json() + "\n")
        self._handle.flush()

    def position(self) -> int:
        """The byte offset where the next record goes: the log's size (appends go to the end, whoever
        else wrote to it; a run directory's lock keeps others from writing in between)."""
        self._handle.flush()
        return os.fstat(self._handle.fileno()).st_size

    def close(self) -> None:
        self._handle.flush()
        os.fsync(self._handle.fileno())
        self._handle.close()

    def __enter__(self) -> RecordWriter[R]:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def write_json_atomic(path: Path, data: object) -> None:
    """Write JSON through a temporary file and a rename, so readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(json.dumps(data, indent=2, ensure_ascii=False, sort_keys=False) + "\n", encoding="utf-8")
    os.replace(temporary, path)
