"""Append-only JSONL logs of records: the run directory's memory, safe against `kill -9`.

Each finished call is appended as one line and flushed to the OS at once, so killing the process
loses only the calls in flight.

Damaged lines, decided deliberately:

- A last line with no newline that does not parse is a write cut short (a crash, a kill, a full
  disk): every record is written with its newline in one flush, so only the last write can be
  torn, and nothing depends on it yet (a draft's critics are asked only once it is stored). It is
  cut off on the next open, with a one-line notice, and its call is made again.
- Any other line that is not a record (in the middle, or complete with its newline) was edited,
  damaged on disk, or written by another qagen version: qagen cannot tell which record it held or
  whether later ones depend on it, so it stops with the file, the line number and a way forward
  (`CorruptRecordError`), never guessing. Lines are read as bytes, so one that is not UTF-8 (an
  edit saved in another encoding) is named the same way, with its first byte that is not, by every
  command that reads the log (the build, `qagen status`, the review tools, `qagen push`).

A write that fails (a full disk, no permission) stops the run with the path and what to do
(`RunWriteError`); the run ends there, so no later record is appended after a torn one.
"""

from __future__ import annotations

import errno
import gc
import hashlib
import json
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO, Generic, NamedTuple, TypeVar

from pydantic import BaseModel, ValidationError
from tqdm import tqdm

from qagen.errors import CorruptRecordError, RunWriteError

R = TypeVar("R", bound=BaseModel)
T = TypeVar("T")  # a store's records: BaseModels too, typed by what the executor needs of them


def record_key(*parts: str) -> str:
    """A stable id from parts (sha256; never Python's per-process salted `hash()`)."""
    # Each part followed by a NUL, hashed as one string: the same digest as hashing them one by one.
    joined = "\x00".join(parts) + "\x00" if parts else ""
    return hashlib.sha256(joined.encode("utf-8")).hexdigest()[:20]


class Dependents(NamedTuple):
    """Records of another log made from this one's: a record made again makes them stale."""

    path: Path
    field: str
    """Their field that holds this log's record id (`draft_id` in critiques)."""


# Records are dumped field by field in declaration order, `id` first: a damaged line often still names it.
_LEADING_ID = re.compile(r'^\{"id":"([^"]+)"')


class Located(NamedTuple, Generic[T]):
    """A record of a log and where its line is: bytes `offset` to `end`, line number `line`."""

    offset: int
    end: int
    line: int
    record: T


def not_utf8(line: str | bytes) -> str | None:
    """Where a line's bytes stop being UTF-8 (`byte 0xe9 at column 97`); None when they are text."""
    if isinstance(line, str):
        return None
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"byte 0x{line[exc.start]:02x} at column {exc.start + 1}"
    return None


class RecordLog(Generic[R]):
    """A JSONL file of `R` records; a later record with the same id replaces an earlier one."""

    redone = "its call is made again"
    """What becomes of a record lost with a torn last line (said in the notice that cuts it off)."""

    def __init__(
        self, path: Path, record_type: type[R], *, key: str = "id", dependents: Dependents | None = None
    ) -> None:
        self.path = path
        self.record_type = record_type
        self.key = key
        self.dependents = dependents
        self.repaired_bytes = 0

    def load(self) -> dict[str, R]:
        """All records by id (the last one wins), after cutting off a torn final line."""
        records: dict[str, R] = {}
        with collector_paused():
            for record in self.iter_records():
                records[str(getattr(record, self.key))] = record
        return records

    def iter_records(self) -> Iterator[R]:
        if not self.path.exists():
            return
        self._repair_torn_tail()
        # Bytes, decoded by `parse`: a line that is not UTF-8 is named with the way to repair it, as any damage is.
        with self.path.open("rb") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                yield self.parse(line, number)

    def parse(self, line: str | bytes, number: int) -> R:
        """The record of line `number` (counted from 1); `CorruptRecordError` when it holds none."""
        try:
            return self.record_type.model_validate_json(line)
        except ValidationError as exc:
            text = line if isinstance(line, str) else line.decode("utf-8", errors="replace")
            raise CorruptRecordError(self._damaged(number, text, self._what_is_wrong(line, exc))) from exc

    def _what_is_wrong(self, line: str | bytes, exc: ValidationError) -> str:
        """What is wrong with a line that holds no record, said after "line N" (see the module)."""
        if (where := not_utf8(line)) is not None:
            return f"is not UTF-8 ({where}: an edit saved in another encoding)"
        return self._not_a_record(exc)

    def _not_a_record(self, exc: ValidationError) -> str:
        """What is wrong with a line of text that holds no record."""
        first = exc.errors()[0]
        if first["type"] == "json_invalid":
            return "is damaged (a write cut short by a crash or a full disk, or an edit)"
        where = ".".join(str(part) for part in first["loc"])
        return (
            f"is not a record this qagen version reads ({where}: {first['msg']}): it was edited, or written "
            "by another qagen version (run.json names the one that started the run: that one can resume it, "
            "or start again in a new `out`)"
        )

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

    def _damaged(self, number: int, line: str, what: str) -> str:
        """Line `number`, `what` is wrong with it (`_what_is_wrong`), and how to go on (see the module)."""
        message = (
            f"{self.path} line {number} {what}. To go on, delete that line (e.g. `sed -i '{number}d' {self.path}`) "
            "and run the same command again: the record it held is asked for again, every other one is kept."
        )
        held = _LEADING_ID.match(line)
        if self.dependents is not None:
            dependents = self.dependents
            unread = f'a "{dependents.field}" that no line here holds'
            rule = f'"{dependents.field}":"{held.group(1)}"' if held else unread
            message += (
                f" The record made again may differ, so delete also the lines of {dependents.path} made from it "
                f"(those with {rule})."
            )
        return message

    def _repair_torn_tail(self) -> None:
        """Cut a final line that has no newline and does not parse (a write cut short by a crash).

        Checked read-only first: a command that only reads (`qagen status`, `qagen agreement`) needs
        no write access to a directory whose logs are whole."""
        size = self.path.stat().st_size
        if size == 0:
            return
        with self.path.open("rb") as handle:
            handle.seek(size - 1)
            if handle.read(1) == b"\n":
                return
        with self.path.open("rb+") as handle:
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
                with writing(self.path):
                    handle.truncate(line_start)
                self.repaired_bytes = size - line_start
                tqdm.write(
                    f"{self.path}: the last line was cut short by an interrupted write ({self.repaired_bytes} bytes); "
                    f"it was removed, and {self.redone}.",
                    file=sys.stderr,
                )
                return
            with writing(self.path):
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
        self.path = path
        with writing(path):
            path.parent.mkdir(parents=True, exist_ok=True)
            # Bytes: a record's line is its JSON (UTF-8) and a newline, whatever the platform.
            self._handle = path.open("ab")

    def append(self, record: R) -> int:
        """Append the record's line, flushed; return its size in bytes."""
        line = record.__pydantic_serializer__.to_json(record) + b"\n"  # (what `model_dump_json` encodes)
        try:  # (`writing`'s rule, without a context manager made for every record)
            self._handle.write(line)
            self._handle.flush()
        except OSError as exc:
            raise write_error(self.path, exc) from exc
        return len(line)

    def position(self) -> int:
        """The byte offset where the next record goes: the log's size (appends go to the end, whoever
        else wrote to it; a run directory's lock keeps others from writing in between). Every append
        is flushed, so the file's size is up to date."""
        return os.fstat(self._handle.fileno()).st_size

    def close(self) -> None:
        if self._handle.closed:
            return
        with writing(self.path):
            try:
                self._handle.flush()
                os.fsync(self._handle.fileno())
            finally:
                self._handle.close()  # flushes again: a full disk raises here too, with the same sentence

    def __enter__(self) -> RecordWriter[R]:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def write_json_atomic(path: Path, data: object) -> None:
    """Write JSON through a temporary file and a rename, so readers never see half a file."""
    with writing(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.tmp")
        temporary.write_text(json.dumps(data, indent=2, ensure_ascii=False, sort_keys=False) + "\n", encoding="utf-8")
        os.replace(temporary, path)


RECORDS_KEPT = "every finished record is kept, and only what was not written is made again"
"""What a failed write of a run's file keeps (`writing`)."""


@contextmanager
def writing(path: Path, *, kept: str = RECORDS_KEPT) -> Iterator[None]:
    """Turn a failed write of `path` into one sentence with the path, what to do next, and what of the
    work is kept (`kept`: a run's records, unless said otherwise): `write_error`."""
    try:
        yield
    except OSError as exc:
        raise write_error(path, exc, kept=kept) from exc


def write_error(path: Path, exc: OSError, *, kept: str = RECORDS_KEPT) -> RunWriteError:
    """The error a failed write of `path` stops the run with: the path, what to do next, and what of the
    work is kept.

    A write error carries no file name (only an open does), so without this a full disk reads
    "No space left on device" with no word on where, or whether anything was lost.
    """
    # pyarrow (writing the datasets) raises OSErrors without an errno, the reason only in the text.
    if exc.errno in {errno.ENOSPC, errno.EDQUOT} or "No space left" in str(exc):
        problem, fix = "the disk (or your quota) is full", "free some space"
    elif exc.errno == errno.ENOENT and not path.parent.exists():
        problem, fix = f"its folder {path.parent} does not exist", f"create it (`mkdir -p {path.parent}`)"
    else:
        problem, fix = exc.strerror or str(exc), "fix that (the folder's permissions, the disk)"
        if exc.filename and str(exc.filename) != str(path):
            problem += f" ({exc.filename})"  # e.g. a file where a folder on the way should be
    return RunWriteError(
        f"Cannot write {path}: {problem}. {fix[0].upper()}{fix[1:]} and run the same command again: {kept}."
    )


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while records are loaded in bulk.

    Loading makes many objects that all live on and form no cycles, so the collector's passes over
    them free nothing; at 10,000 evaluated questions they were about a tenth of a re-run's time.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


_YOUNG_COLLECTION_EVERY = 20_000
"""Allocations (net of frees) between the collector's youngest passes while `collections_spaced` lasts:
Python's default is 700."""


@contextmanager
def collections_spaced() -> Iterator[None]:
    """Run the cyclic garbage collector's youngest pass every `_YOUNG_COLLECTION_EVERY` allocations
    instead of every 700 while a command makes its calls and writes its outputs.

    A call makes and frees a few hundred objects (the request, the reply, its record), few of them
    in cycles; at the default every pass walks the objects of the calls in flight that are still
    alive, promotes them, and the older passes then walk them again, up to whole-heap passes over
    every module the build imported: about a tenth of a build's CPU at 0 ms latency
    (benchmarks/bench_scale.py). Spaced out, the same garbage is collected, a little later.
    """
    thresholds = gc.get_threshold()
    gc.set_threshold(max(_YOUNG_COLLECTION_EVERY, thresholds[0]), *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
