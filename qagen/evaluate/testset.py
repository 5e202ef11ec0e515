"""Load the questions to evaluate: a run directory, a saved dataset, a Hub dataset, or a JSONL/CSV file.

A spec that names nothing on disk is read as a Hub dataset id, unless it looks like a local path
(`qagen.evaluate.testset_paths.looks_local`): then it is "no such file or folder", said before the
Hub is asked (a typo of a run folder is not a Hub failure). A Hub id that cannot be seen without a
token is said to be possibly private, with the way to give a token (`qagen.evaluate.hub_testset`).
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qagen.errors import ConfigError
from qagen.evaluate.records import EvalItem, SkippedRow
from qagen.evaluate.testset_paths import did_you_mean, looks_local
from qagen.question_types import QUESTION_TYPES
from qagen.runs.store import record_key

# Reference-answer column names in use: qagen's and the cookbook's `answer`, the published
# cookbook CSV's `expected_answer`, the notebook's results `true_answer`, ragas' `reference`.
ANSWER_COLUMNS = ("answer", "expected_answer", "true_answer", "reference", "ground_truth")

# The default limit (128 KiB) rejects a long context stored in one cell; 2**31 - 1 is the largest
# value every platform's C long accepts. (Corpus tables have their own reader, which has no limit.)
csv.field_size_limit(2**31 - 1)


@dataclass
class TestSet:
    items: list[EvalItem]
    skipped: list[SkippedRow] = field(default_factory=list)
    origin: str = ""
    answer_column: str = "answer"


def load_testset(
    spec: str,
    *,
    split: str = "train",
    question_column: str = "question",
    answer_column: str | None = None,
    token: str | None = None,
) -> TestSet:
    """Questions and reference answers from `spec` (see the module docstring for what it can be)."""
    path = Path(spec).expanduser()
    if path.is_dir() and (path / "run.json").exists():
        return _from_rows(
            _saved_rows(path / "dataset", split), f"{spec} (run directory)", question_column, answer_column
        )
    if path.is_dir():
        return _from_rows(_saved_rows(path, split), spec, question_column, answer_column)
    if path.is_file():
        suffix = path.suffix.lower()
        if suffix == ".jsonl":
            return _from_rows(_jsonl_rows(path), spec, question_column, answer_column)
        if suffix == ".csv":
            return _from_rows(_csv_rows(path), spec, question_column, answer_column)
        raise ConfigError(f"{spec}: a test set file must be .jsonl or .csv.")
    if path.exists():
        raise ConfigError(f"{spec} is neither a file nor a folder (a test set is a folder, a .jsonl or a .csv file).")
    if looks_local(spec):
        raise ConfigError(f"no such file or folder: {spec}{did_you_mean(spec)}.")
    from qagen.evaluate.hub_testset import hub_rows

    return _from_rows(hub_rows(spec, split, token), f"{spec} (Hub)", question_column, answer_column)


def _saved_rows(path: Path, split: str) -> Iterator[tuple[int, Mapping[str, Any]]]:
    from datasets import Dataset, DatasetDict, load_from_disk

    try:
        loaded = load_from_disk(str(path))
    except FileNotFoundError as exc:
        raise ConfigError(f"{path} is not a dataset saved with save_to_disk (or a qagen run directory).") from exc
    if isinstance(loaded, DatasetDict):
        if split not in loaded:
            raise ConfigError(f"{path} has no split '{split}'; it has {sorted(loaded)}.")
        loaded = loaded[split]
    assert isinstance(loaded, Dataset)
    yield from enumerate(loaded, start=1)


def _read_text(path: Path) -> str:
    # utf-8-sig: spreadsheet programs start CSVs with a byte-order mark, which would otherwise
    # become part of the first column's name.
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path} is not UTF-8 text (byte {exc.start}); save it as UTF-8.") from None


def _jsonl_rows(path: Path) -> Iterator[tuple[int, Mapping[str, Any]]]:
    # Split on "\n" only: `str.splitlines` would also split at U+2028 inside a JSON string.
    for number, line in enumerate(_read_text(path).split("\n"), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise ConfigError(f"{path} line {number} is not valid JSON ({exc}).") from exc
        if not isinstance(row, dict):
            raise ConfigError(f"{path} line {number} is not a JSON object.")
        yield number, row


def _csv_rows(path: Path) -> Iterator[tuple[int, Mapping[str, Any]]]:
    """Rows numbered as a spreadsheet shows them: the header is row 1 (a quoted cell may span lines)."""
    reader = csv.reader(io.StringIO(_read_text(path), newline=""))
    try:
        yield from _csv_records(reader)
    except csv.Error as exc:
        raise ConfigError(f"{path} is not a readable CSV file (line {reader.line_num}: {exc}).") from None


def _csv_records(reader: Any) -> Iterator[tuple[int, Mapping[str, Any]]]:
    header = next(reader, None)
    if header is None:
        return
    for number, cells in enumerate(reader, start=2):
        row: dict[str, Any] = {}
        extra: list[str] = []
        for index, cell in enumerate(cells):
            name = header[index] if index < len(header) else ""
            if name:
                row[name] = cell
            elif cell.strip():
                extra.append(cell)
        if extra:
            # A cell under no column: the row is broken (e.g. a quote spilled a field into the
            # next line). Reported rather than guessed at.
            row["__extra_cells__"] = extra
        yield number, row


def _from_rows(
    rows: Iterable[tuple[int, Mapping[str, Any]]], origin: str, question_column: str, answer_column: str | None
) -> TestSet:
    items: list[EvalItem] = []
    skipped: list[SkippedRow] = []
    seen: dict[str, int] = {}
    chosen_answer: str | None = answer_column
    for number, row in rows:
        if chosen_answer is None:
            chosen_answer = next((c for c in ANSWER_COLUMNS if c in row), None)
            if chosen_answer is None:
                raise ConfigError(
                    f"{origin} has no reference-answer column (looked for {', '.join(ANSWER_COLUMNS)}; "
                    f"it has {', '.join(sorted(row))}); name it with `answer_column`.",
                    settings=("answer_column",),
                )
        if question_column not in row:
            raise ConfigError(f"{origin} has no '{question_column}' column; it has {', '.join(sorted(row))}.")
        if chosen_answer not in row:
            raise ConfigError(f"{origin} has no '{chosen_answer}' column; it has {', '.join(sorted(row))}.")
        content = json.dumps(
            {k: v for k, v in row.items() if isinstance(v, str | int | float | list)}, ensure_ascii=False
        )[:300]
        if row.get("__extra_cells__"):
            skipped.append(
                SkippedRow(row=number, reason="malformed_row: cells outside the header's columns", content=content)
            )
            continue
        question = str(row.get(question_column) or "").strip()
        answer = str(row.get(chosen_answer) or "").strip()
        if not question:
            skipped.append(SkippedRow(row=number, reason="empty_question", content=content))
            continue
        if not answer:
            skipped.append(SkippedRow(row=number, reason="empty_reference_answer", content=content))
            continue
        try:
            start_index, end_index = _offset(row.get("start_index")), _offset(row.get("end_index"))
            evidence_start, evidence_end = _offset(row.get("evidence_start")), _offset(row.get("evidence_end"))
        except ValueError as exc:
            skipped.append(SkippedRow(row=number, reason=f"invalid_offsets: {exc}", content=content))
            continue
        question_type = _optional_str(row.get("question_type"))
        if question_type is not None and question_type not in QUESTION_TYPES:
            reason = f"unknown_question_type: {question_type} (qagen knows {', '.join(QUESTION_TYPES.names())})"
            skipped.append(SkippedRow(row=number, reason=reason, content=content))
            continue
        try:
            source_docs = _passage_sources(row.get("source_docs"))
        except ValueError as exc:
            skipped.append(SkippedRow(row=number, reason=f"invalid_source_docs: {exc}", content=content))
            continue
        item_id = str(row.get("id") or record_key("question", question))
        if item_id in seen:
            skipped.append(SkippedRow(row=number, reason=f"duplicate_of_row_{seen[item_id]}", content=content))
            continue
        seen[item_id] = number
        items.append(
            EvalItem(
                id=item_id,
                question=question,
                true_answer=answer,
                source_doc=_optional_str(row.get("source_doc")),
                context=_optional_str(row.get("context")),
                start_index=start_index,
                end_index=end_index,
                evidence_start=evidence_start,
                evidence_end=evidence_end,
                question_type=question_type,
                source_docs=source_docs,
            )
        )
    if not items:
        raise ConfigError(f"{origin} has no usable questions ({len(skipped)} rows skipped).")
    return TestSet(items=items, skipped=skipped, origin=origin, answer_column=chosen_answer or "answer")


def _passage_sources(value: Any) -> tuple[str, ...]:
    """The documents of a question's passages, when it has several (a list cell; a JSON list in a CSV);
    ValueError when a CSV cell is no JSON list."""
    if isinstance(value, str) and value.startswith("["):
        value = json.loads(value)
    if not isinstance(value, list | tuple) or len(value) < 2:
        return ()
    return tuple(str(source) for source in value)


def _optional_str(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


def _offset(value: Any) -> int | None:
    """A character offset (None when the cell is empty); ValueError when the value is not a whole number."""
    if value is None or value == "" or (isinstance(value, float) and math.isnan(value)):  # NaN: pandas' empty cell
        return None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"{value!r} is not a character offset")
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{value!r} is not a character offset") from None
