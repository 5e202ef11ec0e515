"""What a corpus was when it was chunked: each input's path, size and content hash.

A run directory keeps this beside its chunks (`corpus.json`), so that resuming a build on a corpus
that has changed since (a file edited, added or removed) is noticed and refused, instead of drafting
from chunks of text that is no longer there and ignoring the new text.

A file of a readable type is hashed as the walk reaches it, just before its reader reads it, so the reader's bytes
come from the page cache: one walk over the corpus, not a second pass. A Hugging Face dataset is
known by its location, split, row count and `datasets`' own fingerprint of its data.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from qagen.corpus.load.file_text import HTML_SUFFIXES, TEXT_SUFFIXES
from qagen.corpus.load.tables import TABLE_SUFFIXES
from qagen.corpus.load.walk import corpus_files

if TYPE_CHECKING:
    import datasets

    from qagen.corpus.settings import CorpusSettings

# Files of other types yield no text whatever they hold, so they are neither read nor hashed (a
# folder of docs may hold images and videos); one renamed to a readable type counts as added.
READABLE_SUFFIXES = TEXT_SUFFIXES | HTML_SUFFIXES | TABLE_SUFFIXES | {".pdf"}
_BLOCK = 1 << 20
_LISTED = 10  # names shown per kind of change; the rest are counted


class InputDigest(BaseModel):
    """One input file as it was read."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    size: int = Field(description="Size in bytes.")
    sha256: str = Field(description="SHA-256 of the file's bytes.")


class DatasetIdentity(BaseModel):
    """A Hugging Face dataset corpus as it was read."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    split: str = Field(description="The split that was read.")
    rows: int = Field(description="How many rows it had.")
    fingerprint: str | None = Field(description="`datasets`' fingerprint of the data (changes with the data).")


class CorpusFingerprint(BaseModel):
    """The corpus a run directory's chunks were made from (`corpus.json`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    location: str = Field(description="The corpus path, resolved; or the dataset's resolved path or Hub id.")
    files: dict[str, InputDigest] = Field(
        default_factory=dict, description="Each file of a path corpus, by its path relative to the corpus."
    )
    dataset: DatasetIdentity | None = Field(default=None, description="A dataset corpus's identity.")


class CorpusChanges(NamedTuple):
    """What differs between two fingerprints, by relative path (or `the dataset`)."""

    added: tuple[str, ...]
    removed: tuple[str, ...]
    changed: tuple[str, ...]

    def any(self) -> bool:
        return bool(self.added or self.removed or self.changed)

    def describe(self) -> str:
        """E.g. "added: c.txt; removed: a.txt; changed: b.txt, d.txt and 3 more"."""
        parts = []
        for kind, names in (("added", self.added), ("removed", self.removed), ("changed", self.changed)):
            if names:
                shown = ", ".join(names[:_LISTED])
                more = f" and {len(names) - _LISTED} more" if len(names) > _LISTED else ""
                parts.append(f"{kind}: {shown}{more}")
        return "; ".join(parts)


def compare(old: CorpusFingerprint, new: CorpusFingerprint) -> CorpusChanges:
    """The changes from `old` to `new`, by what they hold (a corpus moved as it was has none)."""
    added = tuple(sorted(new.files.keys() - old.files.keys()))
    removed = tuple(sorted(old.files.keys() - new.files.keys()))
    changed = tuple(sorted(name for name in old.files.keys() & new.files.keys() if old.files[name] != new.files[name]))
    if old.dataset != new.dataset:
        changed += (f"the dataset ({_dataset_difference(old.dataset, new.dataset)})",)
    return CorpusChanges(added, removed, changed)


def _dataset_difference(old: DatasetIdentity | None, new: DatasetIdentity | None) -> str:
    if old is None or new is None:
        return "a dataset in place of files" if old is None else "files in place of a dataset"
    return ", ".join(
        f"{name} {getattr(old, name)} -> {getattr(new, name)}"
        for name in ("split", "rows", "fingerprint")
        if getattr(old, name) != getattr(new, name)
    )


def corpus_location(corpus: CorpusSettings) -> str:
    """Where the corpus is: a path resolved (`ex`, `./ex` and `/abs/ex` are one), or a Hub id.

    Only shown to say where a changed corpus was read from; what decides is what the corpus holds.
    """
    location = corpus.path if corpus.path is not None else str(corpus.hf_dataset)
    # A dataset saved on disk is a path; anything else a Hub id (the rule `open_dataset` follows).
    return str(Path(location).resolve()) if corpus.path is not None or Path(location).exists() else location


class FingerprintRecorder:
    """Collects the fingerprint while the corpus is read for chunking."""

    def __init__(self, location: str) -> None:
        self._location = location
        self._files: dict[str, InputDigest] = {}
        self._dataset: DatasetIdentity | None = None

    def add_file(self, file: Path, rel: str) -> None:
        """Hash `file` if it is of a readable type; one that cannot be read is recorded as such."""
        if file.suffix.lower() in READABLE_SUFFIXES:
            self._files[rel] = file_digest(file)

    def add_dataset(self, dataset: datasets.Dataset, split: str) -> None:
        self._dataset = dataset_identity(dataset, split)

    def result(self) -> CorpusFingerprint:
        return CorpusFingerprint(location=self._location, files=self._files, dataset=self._dataset)


def file_digest(file: Path) -> InputDigest:
    digest = hashlib.sha256()
    size = 0
    try:
        with file.open("rb") as handle:
            while block := handle.read(_BLOCK):
                digest.update(block)
                size += len(block)
    except OSError as exc:
        # Not a hash of anything: compares unequal to any file that can be read later.
        return InputDigest(size=-1, sha256=f"unreadable: {exc.strerror or exc}")
    return InputDigest(size=size, sha256=digest.hexdigest())


def dataset_identity(dataset: datasets.Dataset, split: str) -> DatasetIdentity:
    # `_fingerprint` is how `datasets` itself tells versions of a dataset apart (for its caches).
    fingerprint = getattr(dataset, "_fingerprint", None)
    return DatasetIdentity(split=split, rows=dataset.num_rows, fingerprint=fingerprint)


def current_fingerprint(corpus: CorpusSettings) -> CorpusFingerprint:
    """The corpus's fingerprint now, read without parsing (to check a resumed run against)."""
    from qagen.corpus.load.tables import open_dataset
    from qagen.errors import CorpusError

    if corpus.hf_dataset is not None:
        recorder = FingerprintRecorder(corpus_location(corpus))
        dataset, _ = open_dataset(corpus.hf_dataset, corpus.split, corpus.text_column, corpus.source_column)
        recorder.add_dataset(dataset, corpus.split)
        return recorder.result()
    root = Path(str(corpus.path))
    if not root.exists():
        raise CorpusError(f"Corpus path not found: {root}")
    recorder = FingerprintRecorder(corpus_location(corpus))
    for file, rel in _files(root):
        recorder.add_file(file, rel)
    return recorder.result()


def _files(root: Path) -> Iterator[tuple[Path, str]]:
    # Inputs the walk skips (links to files seen before, devices) were reported when chunking.
    return corpus_files(root, lambda skipped: None)
