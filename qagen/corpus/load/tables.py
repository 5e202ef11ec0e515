"""Tables whose rows are documents: .jsonl, .csv and .parquet files, and Hugging Face dataset rows.

Every reader streams (line by line, or in record batches) and reports what it cannot use through
`skip` instead of raising, so one bad file or row never stops the rest of the corpus.
"""

from __future__ import annotations

import itertools
import json
import re
import reprlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qagen.corpus.load.csv_rows import CsvRecords
from qagen.errors import CorpusError
from qagen.records import Document, SkippedInput

if TYPE_CHECKING:
    import datasets

Skip = Callable[[SkippedInput], None]

# Half of a UTF-16 surrogate pair on its own: a JSON escape (`"\\ud800"`) or a CSV/Parquet writer
# can produce one, but it is not a character, and hashing or writing it as UTF-8 fails.
_SURROGATE = re.compile("[\ud800-\udfff]")

TABLE_SUFFIXES = frozenset({".jsonl", ".csv", ".parquet"})
BATCH_ROWS = 1024


class _TableSkipped(Exception):
    """The whole table is unusable; carries the reason for the SkippedInput."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


def missing_columns(columns: Iterable[str], text_column: str, source_column: str | None) -> tuple[str, str] | None:
    """(reason, detail) when a required column is absent, else None."""
    have = list(columns)
    listing = ", ".join(repr(name) for name in have) or "none"
    if text_column not in have:
        return "missing_text_column", f"no column {text_column!r}; the columns are: {listing}"
    if source_column is not None and source_column not in have:
        return "missing_source_column", f"no column {source_column!r}; the columns are: {listing}"
    return None


def row_documents(
    rows: Iterable[tuple[int, Mapping[str, Any]]],
    label: str,
    *,
    text_column: str,
    source_column: str | None,
    skip: Skip,
) -> Iterator[Document]:
    """One Document per row whose text cell is text; every other row is one skip with its reason:
    `empty_row` (null or blank), `not_text` (a number, a boolean, a list, an object...) or
    `undecodable` (bytes that are not UTF-8, a lone surrogate)."""
    for index, row in rows:
        row_id = f"{label}#row{index}"
        value = row.get(text_column)
        text = _cell_text(value)
        if text is None:
            skip(SkippedInput(source=row_id, reason=_not_text_reason(value), detail=_not_text(text_column, value)))
            continue
        # `isspace` rather than `strip`: no copy of a cell that may be hundreds of megabytes.
        if not text or text.isspace():
            skip(SkippedInput(source=row_id, reason="empty_row", detail=f"column {text_column!r} is blank"))
            continue
        source = _source_text(row.get(source_column)) if source_column is not None else None
        problem = _lone_surrogate(text_column, text) or _lone_surrogate(source_column, source)
        if problem:
            skip(SkippedInput(source=row_id, reason="undecodable", detail=problem))
            continue
        # A row without its own source still needs a stable, findable one.
        yield Document(source=source if source and source.strip() else row_id, text=text)


def read_table(
    path: Path, label: str, *, text_column: str, source_column: str | None, skip: Skip
) -> Iterator[Document]:
    """Documents from one table file; `label` (the relative path) names its rows."""
    readers = {".jsonl": _jsonl_rows, ".csv": _csv_rows, ".parquet": _parquet_rows}
    reader = readers[path.suffix.lower()]
    rows = reader(path, label, text_column, source_column, skip)
    try:
        yield from row_documents(rows, label, text_column=text_column, source_column=source_column, skip=skip)
    except _TableSkipped as stop:
        skip(SkippedInput(source=label, reason=stop.reason, detail=stop.detail))
    except OSError as exc:
        skip(SkippedInput(source=label, reason="unreadable", detail=exc.strerror or str(exc)))


def _lone_surrogate(column: str | None, value: str | None) -> str:
    """Why `value` is not text (it holds a lone surrogate), or "" when it is text."""
    match = _SURROGATE.search(value) if value else None
    if match is None:
        return ""
    return f"column {column!r} holds a lone surrogate ({match.group()!r} at position {match.start()}), not text"


def _cell_text(value: object) -> str | None:
    """The cell as text, or None when it is not text (see `_not_text`)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):  # a Parquet or dataset binary column
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return None
    return None


def _not_text_reason(value: object) -> str:
    if value is None:
        return "empty_row"
    return "undecodable" if isinstance(value, bytes) else "not_text"


_PREVIEW = reprlib.Repr()
_PREVIEW.maxstring = _PREVIEW.maxother = 40
_PREVIEW.maxlist = _PREVIEW.maxdict = 3


def _not_text(column: str, value: object) -> str:
    """Why a cell that is not a string is no document: a number or a list made into a chunk would
    be drafted questions about `42` or `['a', 'b']`."""
    if value is None:
        return f"column {column!r} is null"
    if isinstance(value, bytes):
        return f"column {column!r} holds {len(value)} bytes that are not UTF-8 text"
    return f"column {column!r} holds a value of type {type(value).__name__} ({_PREVIEW.repr(value)}), not text"


def _source_text(value: object) -> str | None:
    """A source cell as text: a number (an id) or any other value is named by its `str`."""
    if value is None or isinstance(value, str):
        return value
    text = _cell_text(value)
    return text if text is not None else str(value)


def _check_columns(columns: Iterable[str], text_column: str, source_column: str | None) -> None:
    missing = missing_columns(columns, text_column, source_column)
    if missing is not None:
        raise _TableSkipped(*missing)


def _jsonl_rows(
    path: Path, label: str, text_column: str, source_column: str | None, skip: Skip
) -> Iterator[tuple[int, Mapping[str, Any]]]:
    index = -1
    line_number = 0
    checked = False
    with path.open("rb") as handle:
        # `readline` and `del`, not `enumerate(handle)`: enumerate keeps the last line alive until
        # the next, and with a huge line each copy held at once costs its whole size.
        while raw := handle.readline():
            line_number += 1
            # Blank lines hold no record (writers often leave one at the end), so nothing is lost.
            if raw.isspace():
                continue
            index += 1
            try:
                text = raw.decode("utf-8-sig" if line_number == 1 else "utf-8")
                del raw
                record = json.loads(text)
            except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError are both ValueErrors
                detail = f"line {line_number}: {exc}"
                skip(SkippedInput(source=f"{label}#row{index}", reason="bad_json_line", detail=detail))
                continue
            except RecursionError:  # the json module recurses once per level of nesting
                detail = f"line {line_number}: the JSON is nested too deeply to read"
                skip(SkippedInput(source=f"{label}#row{index}", reason="bad_json_line", detail=detail))
                continue
            del text
            if not isinstance(record, dict):
                detail = f"line {line_number}: a JSON {type(record).__name__}, not an object"
                skip(SkippedInput(source=f"{label}#row{index}", reason="bad_json_line", detail=detail))
                continue
            # JSON lines have no header: the first record stands for the file's columns.
            if not checked:
                _check_columns(record, text_column, source_column)
                checked = True
            yield index, record


def _csv_rows(
    path: Path, label: str, text_column: str, source_column: str | None, skip: Skip
) -> Iterator[tuple[int, Mapping[str, Any]]]:
    # `CsvRecords` rather than `csv.DictReader`: the same records, without copies of a huge cell.
    with path.open("rb") as handle:
        records = CsvRecords(handle, encoding="utf-8-sig")
        try:
            # As DictReader: blank lines are no rows, the first record is the header, a short row
            # has None for its missing cells and the cells beyond the header are ignored.
            rows = (record for record in records if record)
            header = next(rows, None)
            if header is None:
                raise _TableSkipped("empty", "the CSV file has no header row")
            _check_columns(header, text_column, source_column)
            for index, record in enumerate(rows):
                yield index, dict(itertools.zip_longest(header, record[: len(header)]))
        except UnicodeDecodeError as exc:
            raise _TableSkipped("table_error", f"line {records.line}: {exc}") from exc


def _parquet_rows(
    path: Path, label: str, text_column: str, source_column: str | None, skip: Skip
) -> Iterator[tuple[int, Mapping[str, Any]]]:
    # Imported here: pyarrow costs 0.2 s of start-up that corpora without Parquet files never use.
    import pyarrow as pa
    import pyarrow.parquet as pq

    # Opened here so a permission problem is `unreadable`; pyarrow reports everything else.
    with path.open("rb") as handle:
        try:
            table = pq.ParquetFile(handle)
            _check_columns(table.schema_arrow.names, text_column, source_column)
            wanted = list(dict.fromkeys(c for c in (text_column, source_column) if c is not None))
            index = 0
            for batch in table.iter_batches(batch_size=BATCH_ROWS, columns=wanted):
                for row in batch.to_pylist():
                    yield index, row
                    index += 1
        except (pa.ArrowException, ValueError, OSError) as exc:
            raise _TableSkipped("table_error", f"not a readable Parquet file: {exc}") from exc


def open_dataset(name: str, split: str, text_column: str, source_column: str | None) -> tuple[datasets.Dataset, str]:
    """The dataset (a folder saved with `save_to_disk`, or a Hub id) and the label naming its rows."""
    # Imported here: `datasets` takes a second to import and most corpora are folders.
    import datasets
    from datasets.exceptions import DatasetNotFoundError

    try:
        if Path(name).exists():
            loaded = datasets.load_from_disk(name)
            if isinstance(loaded, datasets.DatasetDict):
                if split not in loaded:
                    splits = ", ".join(loaded) or "none"
                    raise CorpusError(f"Dataset {name} has no split {split!r}; it has: {splits}.")
                dataset, label = loaded[split], f"{name}:{split}"
            else:
                dataset, label = loaded, name
        else:
            dataset, label = datasets.load_dataset(name, split=split), f"{name}:{split}"
    except (FileNotFoundError, DatasetNotFoundError, ValueError, ConnectionError, OSError) as exc:
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0].rstrip(".")
        raise CorpusError(f"Could not load dataset {name}: {reason}.") from exc
    if not isinstance(dataset, datasets.Dataset):
        raise CorpusError(f"Dataset {name} did not load as a table of rows.")
    missing = missing_columns(dataset.column_names, text_column, source_column)
    if missing is not None:
        raise CorpusError(f"Dataset {name} has {missing[1]}.")
    return dataset, label


def dataset_documents(
    dataset: datasets.Dataset,
    label: str,
    *,
    text_column: str,
    source_column: str | None,
    skip: Skip,
) -> Iterator[Document]:
    """One Document per row, read in batches of only the columns needed."""
    wanted = list(dict.fromkeys(c for c in (text_column, source_column) if c is not None))
    return row_documents(
        _dataset_rows(dataset.select_columns(wanted)),
        label,
        text_column=text_column,
        source_column=source_column,
        skip=skip,
    )


def _dataset_rows(dataset: datasets.Dataset) -> Iterator[tuple[int, dict[str, Any]]]:
    index = 0
    for batch in dataset.iter(batch_size=BATCH_ROWS):
        columns = list(batch)
        for values in zip(*(batch[column] for column in columns), strict=True):
            yield index, dict(zip(columns, values, strict=True))
            index += 1
