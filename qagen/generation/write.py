"""Write a run's outputs: the kept set and every candidate as `datasets` datasets, and the summary."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import types
from collections.abc import Iterable
from pathlib import Path
from typing import Any, BinaryIO, Literal, Union, get_args, get_origin

from pydantic import BaseModel

from qagen.records import CandidateRow, DatasetRow
from qagen.runs.store import writing


def row_features(row_type: type[BaseModel]) -> Any:
    """The `datasets.Features` of a row model: its fields in order, typed from their annotations.

    Explicit types, so a column that happens to be all null (say, no failures) keeps its type;
    read from the model, so the columns and their types have one source.
    """
    from datasets import Features, Value

    return Features({name: Value(_dtype(name, info.annotation)) for name, info in row_type.model_fields.items()})


def _dtype(name: str, annotation: Any) -> str:
    """`int` and `int | None` are int64; `str`, `str | None` and a Literal of strings are string."""
    kinds = [annotation]
    if get_origin(annotation) in (Union, types.UnionType):
        kinds = [kind for kind in get_args(annotation) if kind is not type(None)]
    if kinds == [int]:
        return "int64"
    if kinds == [str]:
        return "string"
    if len(kinds) == 1 and get_origin(kinds[0]) is Literal and all(isinstance(v, str) for v in get_args(kinds[0])):
        return "string"
    raise TypeError(f"column {name!r}: no dataset type for {annotation!r}")


def save_rows(rows: Iterable[DatasetRow], target: Path, *, candidates: bool) -> None:
    """Write rows as a `datasets` directory at `target` (see `RowWriter`)."""
    with RowWriter(target, CandidateRow if candidates else DatasetRow) as writer:
        for row in rows:
            writer.add(row.model_dump())


_BATCH_ROWS = 1000
"""Rows converted to Arrow at a time: datasets' own default batch (`config.DEFAULT_MAX_BATCH_SIZE`)."""
DATA_FILE = "data-00000-of-00001.arrow"


class RowWriter:
    """Writes rows to a directory in the format of `Dataset.save_to_disk(..., num_shards=1)`, a batch
    at a time, so a build never holds all its rows (`datasets.load_from_disk` reads the directory).

    The data file is written by datasets' own `ArrowWriter` with the row model's features, as
    `save_to_disk` writes it; `state.json` and `dataset_info.json` are written as `save_to_disk`
    writes them (tests/generation/test_write.py compares the two directories). The fingerprint in
    `state.json` is the sha256 of the data file, so equal rows give equal directories. Everything
    goes to a temporary directory first, swapped in when the last row is written: readers never see
    half a dataset, and a failed write leaves the previous one in place.
    """

    def __init__(self, target: Path, row_type: type[DatasetRow]) -> None:
        self.target = target
        self.columns = list(row_type.model_fields)
        self.features = row_features(row_type)
        self.temporary = target.with_name(f".{target.name}.tmp")
        self._batch: dict[str, list[Any]] = {column: [] for column in self.columns}
        self.rows = 0

    def __enter__(self) -> RowWriter:
        from datasets.arrow_writer import ArrowWriter

        with writing(self.target):  # a full disk names the folder and what to do
            if self.temporary.exists():
                shutil.rmtree(self.temporary)
            self.temporary.mkdir(parents=True)
            self._file = _HashingFile((self.temporary / DATA_FILE).open("wb"))
        self._writer = ArrowWriter(features=self.features, stream=self._file, embed_local_files=True)
        return self

    def add(self, row: dict[str, Any]) -> None:
        """One row, as `model_dump()` gives it (columns beyond this set's are ignored)."""
        for column in self.columns:
            self._batch[column].append(row[column])
        self.rows += 1
        if self.rows % _BATCH_ROWS == 0:
            self._flush()

    def _flush(self) -> None:
        if self._batch[self.columns[0]]:
            with writing(self.target):
                self._writer.write_batch(self._batch)
            self._batch = {column: [] for column in self.columns}

    def __exit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        try:
            if exc_type is None:
                self._flush()
                with writing(self.target):
                    self._writer.finalize(close_stream=False)
        finally:
            self._writer.close()
            self._file.close()
        if exc_type is not None:
            shutil.rmtree(self.temporary, ignore_errors=True)
            return
        with writing(self.target):
            self._write_metadata(self._file.sha256.hexdigest()[:16])
            if self.target.exists():
                shutil.rmtree(self.target)
            os.replace(self.temporary, self.target)

    def _write_metadata(self, fingerprint: str) -> None:
        """`state.json` and `dataset_info.json` exactly as `Dataset.save_to_disk` writes them for a
        dataset made by `Dataset.from_dict(..., features=..., split="train")`."""
        from datasets import DatasetInfo, config
        from datasets.utils.py_utils import asdict

        state: dict[str, Any] = {
            "_fingerprint": fingerprint,
            "_format_columns": None,
            "_format_kwargs": {},
            "_format_type": None,
            "_output_all_columns": False,
            "_split": "train",
            "_data_files": [{"filename": DATA_FILE}],
        }
        with (self.temporary / config.DATASET_STATE_JSON_FILENAME).open("w", encoding="utf-8") as handle:
            json.dump(state, handle, indent=2, sort_keys=True)
        info = asdict(DatasetInfo(features=self.features))
        with (self.temporary / config.DATASET_INFO_FILENAME).open("w", encoding="utf-8") as handle:
            json.dump({key: info[key] for key in sorted(info)}, handle, indent=2)


class _HashingFile:
    """A binary file that also hashes what is written to it (the data file's fingerprint)."""

    def __init__(self, handle: BinaryIO) -> None:
        self._handle = handle
        self.sha256 = hashlib.sha256()

    def write(self, data: bytes | memoryview) -> int:
        self.sha256.update(data)
        return self._handle.write(data)

    def flush(self) -> None:
        self._handle.flush()

    def tell(self) -> int:
        return self._handle.tell()

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def readable(self) -> bool:
        return False

    @property
    def closed(self) -> bool:
        return self._handle.closed

    def close(self) -> None:
        self._handle.close()


def funnel_table(summary: dict[str, Any]) -> str:
    """The funnel as a readable table (printed at the end of a build, and by `qagen filter`)."""
    funnel = summary["funnel"]
    corpus = summary["corpus"]
    lines: list[tuple[str, str]] = [
        ("documents", str(corpus["documents"])),
        ("inputs skipped", _with_reasons(corpus["skipped"], corpus["skipped_by_reason"])),
        ("chunks", f"{corpus['chunks']} (identical chunks dropped: {corpus['duplicate_chunks']})"),
        ("sampled chunks", _sampled(funnel)),
        ("drafted", str(funnel["drafted"])),
        (
            "generation failed",
            _with_reasons(sum(funnel["generation_failed"].values()), funnel["generation_failed"]),
        ),
        (
            "critique failed",
            _with_reasons(sum(funnel["critique_failed"].values()), funnel["critique_failed"]),
        ),
        ("undecided", _with_reasons(sum(funnel.get("undecided", {}).values()), funnel.get("undecided", {}))),
        ("rejected by critics", _with_reasons(funnel["rejected"], funnel["rejected_by"])),
        ("too long", str(funnel.get("too_long", 0))),
        ("near-duplicates", str(funnel["duplicates"])),
        ("kept", str(funnel["kept"])),
    ]
    usage = summary.get("usage", {})
    for stage, numbers in usage.items():
        cost = f", ${numbers['cost_usd']:.4f}" if numbers.get("cost_usd") is not None else ""
        tokens = f"{numbers['input_tokens']:,} in / {numbers['output_tokens']:,} out tokens{cost}"
        lines.append((f"{stage} calls", f"{numbers['calls']} ({tokens})"))
    width = max(len(label) for label, _ in lines)
    table = [f"  {label:<{width}}  {value}" for label, value in lines]
    # The commonest failure of each stage, with its first case: what there is to fix.
    examples = funnel.get("failure_examples", {})
    for stage, failed in (("generation", funnel["generation_failed"]), ("critique", funnel["critique_failed"])):
        if failed:
            commonest = max(failed, key=failed.__getitem__)
            if commonest in examples:
                table.append(f"  {stage} failed mostly with {commonest}, e.g. {examples[commonest]}")
    return "\n".join(table)


def _sampled(funnel: dict[str, Any]) -> str:
    """The sample size, and the size asked for when the corpus had fewer chunks."""
    sampled, requested = funnel["sampled"], funnel.get("requested")
    if requested is not None and requested > sampled:
        return f"{sampled} (all of them: {requested} were asked for)"
    return str(sampled)


def _with_reasons(total: int, reasons: dict[str, int]) -> str:
    parts = [f"{name} {count}" for name, count in reasons.items() if count]
    return f"{total}" + (f" ({', '.join(parts)})" if parts else "")
