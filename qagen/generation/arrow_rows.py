"""Rows written to a `datasets` directory a batch at a time, with pyarrow alone.

The directory is the one `Dataset.from_dict(rows, features=row_features(RowType), split="train")
.save_to_disk(path, num_shards=1)` writes (one Arrow IPC stream file, `state.json`,
`dataset_info.json`), so `datasets.load_from_disk` reads it as before; tests/generation/test_write.py
compares the two file by file. Written a batch at a time, a build never holds all its rows; written
with pyarrow alone, a build never imports `datasets` (a second of CPU, taken from the LLM calls or
added to the end).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import types
from collections.abc import Collection
from pathlib import Path
from typing import Any, BinaryIO, Literal, Union, get_args, get_origin

from pydantic import BaseModel

from qagen.runs.store import writing

DATA_FILE = "data-00000-of-00001.arrow"
_BATCH_ROWS = 1000
"""Rows converted to Arrow at a time: datasets' own default batch (`config.DEFAULT_MAX_BATCH_SIZE`)."""


def warm_up() -> None:
    """Import what writing rows needs: pyarrow, and pandas, which pyarrow imports on its first
    conversion of a list (when pandas is installed, as `datasets` has it)."""
    import pyarrow as pa

    pa.array([""], type=pa.string())


Feature = dict[str, Any]
"""A column's `datasets` feature as `Features.to_dict()` writes it (`{"dtype": "string", "_type": "Value"}`)."""


def dataset_feature(name: str, annotation: Any) -> Feature:
    """The `datasets` feature of a row field: `int` and `int | None` are int64; `str`, `str | None` and
    a Literal of strings are string (so a column that happens to be all null keeps its type); a tuple
    of records is a list of structs, one field per record field; a tuple of str or int a list of them."""
    kinds = [annotation]
    if get_origin(annotation) in (Union, types.UnionType):
        kinds = [kind for kind in get_args(annotation) if kind is not type(None)]
    if kinds == [int]:
        return _value("int64")
    if kinds == [str]:
        return _value("string")
    if len(kinds) == 1 and get_origin(kinds[0]) is Literal and all(isinstance(v, str) for v in get_args(kinds[0])):
        return _value("string")
    if len(kinds) == 1 and get_origin(kinds[0]) is tuple:
        item, *rest = get_args(kinds[0])
        if rest == [Ellipsis] and isinstance(item, type) and issubclass(item, BaseModel):
            return {"feature": column_features(item), "_type": "List"}
        if rest == [Ellipsis] and item in (str, int):
            return {"feature": dataset_feature(name, item), "_type": "List"}
    raise TypeError(f"column {name!r}: no dataset type for {annotation!r}")


def _value(dtype: str) -> Feature:
    return {"dtype": dtype, "_type": "Value"}


def column_features(row_type: type[BaseModel], omit: Collection[str] = ()) -> dict[str, Feature]:
    """Each column of a row model, in order, with its `datasets` feature (`omit`: columns left out)."""
    return {
        name: dataset_feature(name, info.annotation) for name, info in row_type.model_fields.items() if name not in omit
    }


def arrow_type(feature: Feature) -> Any:
    """The pyarrow type `datasets` stores a feature as."""
    import pyarrow as pa

    if feature["_type"] == "List":
        item = feature["feature"]
        if item.get("_type") == "Value":
            return pa.list_(arrow_type(item))
        return pa.list_(pa.struct([pa.field(name, arrow_type(part)) for name, part in item.items()]))
    return {"string": pa.string(), "int64": pa.int64()}[feature["dtype"]]


class RowWriter:
    """Writes rows to `target` as a `datasets` directory (see the module), a batch at a time.

    Everything goes to a temporary directory first, swapped in when the last row is written:
    readers never see half a dataset, and a failed write leaves the previous one in place. The
    fingerprint in `state.json` is the data file's sha256, so equal rows give equal directories.
    """

    def __init__(self, target: Path, row_type: type[BaseModel], omit: Collection[str] = ()) -> None:
        self.target = target
        self.features = column_features(row_type, omit)
        self.temporary = target.with_name(f".{target.name}.tmp")
        self._batch: dict[str, list[Any]] = {column: [] for column in self.features}
        self.rows = 0

    def __enter__(self) -> RowWriter:
        import pyarrow as pa

        # As datasets' ArrowWriter makes it: the features, as `DatasetInfo` dumps them, in the metadata.
        info = json.dumps({"info": {"features": self.features}})
        fields = [pa.field(name, arrow_type(feature)) for name, feature in self.features.items()]
        self._schema = pa.schema(fields, metadata={"huggingface": info})
        with writing(self.target):  # a full disk names the folder and what to do
            if self.temporary.exists():
                shutil.rmtree(self.temporary)
            self.temporary.mkdir(parents=True)
            self._file = _HashingFile((self.temporary / DATA_FILE).open("wb"))
            self._writer = pa.ipc.new_stream(self._file, self._schema)
        return self

    def add(self, row: dict[str, Any]) -> None:
        """One row, as `model_dump()` gives it (columns beyond this set's are ignored)."""
        for column, values in self._batch.items():
            values.append(row[column])
        self.rows += 1
        if self.rows % _BATCH_ROWS == 0:
            self._flush()

    def _flush(self) -> None:
        """Write the rows added since the last batch as one record batch (none: nothing to write;
        a set of no rows at all is a file with the schema alone, as datasets writes it)."""
        import pyarrow as pa

        if not next(iter(self._batch.values())):
            return
        arrays = [
            pa.array(values, type=field.type) for values, field in zip(self._batch.values(), self._schema, strict=True)
        ]
        with writing(self.target):
            self._writer.write_batch(pa.RecordBatch.from_arrays(arrays, schema=self._schema))
        self._batch = {column: [] for column in self.features}

    def __exit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        try:
            if exc_type is None:
                self._flush()
                with writing(self.target):
                    self._writer.close()
        finally:
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
        """`state.json` and `dataset_info.json` as `save_to_disk` writes them for a dataset made by
        `Dataset.from_dict(..., features=..., split="train")`."""
        state: dict[str, Any] = {
            "_data_files": [{"filename": DATA_FILE}],
            "_fingerprint": fingerprint,
            "_format_columns": None,
            "_format_kwargs": {},
            "_format_type": None,
            "_output_all_columns": False,
            "_split": "train",
        }
        (self.temporary / "state.json").write_text(json.dumps(state, indent=2, sort_keys=True), encoding="utf-8")
        # `DatasetInfo` as `datasets.utils.py_utils.asdict` dumps it (fields at their default left out).
        info = {"citation": "", "description": "", "features": self.features, "homepage": "", "license": ""}
        (self.temporary / "dataset_info.json").write_text(json.dumps(info, indent=2), encoding="utf-8")


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
