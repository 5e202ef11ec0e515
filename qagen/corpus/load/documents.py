"""Load a corpus (a file, a folder, or a Hugging Face dataset) as a stream of `Document` records.

Nothing is dropped silently: every input that cannot be used becomes a `SkippedInput` with a short
reason, appended to the `CorpusReport` and passed to `on_skip` as it happens.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from qagen.corpus.load.file_text import Unusable, file_text
from qagen.corpus.load.fingerprint import FingerprintRecorder
from qagen.corpus.load.tables import TABLE_SUFFIXES, Skip, dataset_documents, open_dataset, read_table
from qagen.corpus.load.walk import corpus_files
from qagen.errors import CorpusError
from qagen.records import Document, SkippedInput


@dataclass
class CorpusReport:
    """What came out of the corpus: the number of documents and every input skipped."""

    documents: int = 0
    skipped: list[SkippedInput] = field(default_factory=list)

    def skipped_by_reason(self) -> dict[str, int]:
        """How many inputs were skipped for each reason, sorted by reason."""
        counts: dict[str, int] = {}
        for item in self.skipped:
            counts[item.reason] = counts.get(item.reason, 0) + 1
        return dict(sorted(counts.items()))


def iter_documents(
    path: Path | None,
    *,
    report: CorpusReport,
    hf_dataset: str | None = None,
    split: str = "train",
    text_column: str = "text",
    source_column: str | None = None,
    on_skip: Callable[[SkippedInput], None] | None = None,
    recorder: FingerprintRecorder | None = None,
) -> Iterator[Document]:
    """Stream the corpus's documents in a deterministic order.

    Errors about the corpus as a whole (missing path, unloadable dataset, missing column in a
    dataset) raise `CorpusError` here, at call time; problems with single files or rows are
    reported as skips while iterating. A `recorder` is given every input as it is read.
    """

    def skip(item: SkippedInput) -> None:
        report.skipped.append(item)
        if on_skip is not None:
            on_skip(item)

    if path is None and hf_dataset is None:
        raise CorpusError("No corpus given: pass a corpus path or a Hugging Face dataset.")
    if path is not None and hf_dataset is not None:
        raise CorpusError("Give either a corpus path or a Hugging Face dataset, not both.")
    if hf_dataset is not None:
        dataset, label = open_dataset(hf_dataset, split, text_column, source_column)
        if recorder is not None:
            recorder.add_dataset(dataset, split)
        docs = dataset_documents(dataset, label, text_column=text_column, source_column=source_column, skip=skip)
    else:
        root = Path(str(path))
        if not root.exists():
            raise CorpusError(f"Corpus path not found: {root}")
        docs = _path_documents(root, text_column, source_column, skip, recorder)
    return _counted(docs, report)


def _counted(docs: Iterator[Document], report: CorpusReport) -> Iterator[Document]:
    for doc in docs:
        report.documents += 1
        yield doc


def _path_documents(
    root: Path, text_column: str, source_column: str | None, skip: Skip, recorder: FingerprintRecorder | None
) -> Iterator[Document]:
    for file, rel in corpus_files(root, skip):
        if recorder is not None:
            recorder.add_file(file, rel)
        if file.suffix.lower() in TABLE_SUFFIXES:
            yield from read_table(file, rel, text_column=text_column, source_column=source_column, skip=skip)
            continue
        try:
            text = file_text(file, rel, skip)
        except Unusable as unusable:
            skip(SkippedInput(source=rel, reason=unusable.reason, detail=unusable.detail))
            continue
        except OSError as exc:
            skip(SkippedInput(source=rel, reason="unreadable", detail=exc.strerror or str(exc)))
            continue
        yield Document(source=rel, text=text)
