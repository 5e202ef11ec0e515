"""Load a corpus (a file, a folder, or a Hugging Face dataset) as a stream of `Document` records.

Nothing is dropped silently: every input that cannot be used becomes a `SkippedInput` with a short
reason, appended to the `CorpusReport` and passed to `on_skip` as it happens.
"""

from __future__ import annotations

import codecs
import errno
import os
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pypdf import PasswordType, PdfReader
from pypdf.errors import DependencyError, PyPdfError

from qagen.errors import CorpusError
from qagen.html_text import html_to_text
from qagen.tables import TABLE_SUFFIXES, Skip, dataset_documents, open_dataset, read_table
from qagen.types import Document, SkippedInput

TEXT_SUFFIXES = frozenset({".txt", ".md", ".rst"})
HTML_SUFFIXES = frozenset({".html", ".htm"})
SNIFF_BYTES = 8192

# pypdf raises these on malformed files besides its own errors; the try blocks hold only pypdf calls.
_PDF_ERRORS = (
    PyPdfError,
    DependencyError,
    ValueError,
    KeyError,
    TypeError,
    IndexError,
    AttributeError,
    AssertionError,
    RecursionError,
)


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


class _Unusable(Exception):
    """A file that yields no document; becomes a SkippedInput."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


def iter_documents(
    path: Path | None,
    *,
    report: CorpusReport,
    hf_dataset: str | None = None,
    split: str = "train",
    text_column: str = "text",
    source_column: str | None = None,
    on_skip: Callable[[SkippedInput], None] | None = None,
) -> Iterator[Document]:
    """Stream the corpus's documents in a deterministic order.

    Errors about the corpus as a whole (missing path, unloadable dataset, missing column in a
    dataset) raise `CorpusError` here, at call time; problems with single files or rows are
    reported as skips while iterating.
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
        docs = dataset_documents(dataset, label, text_column=text_column, source_column=source_column, skip=skip)
    else:
        root = Path(str(path))
        if not root.exists():
            raise CorpusError(f"Corpus path not found: {root}")
        docs = _path_documents(root, text_column, source_column, skip)
    return _counted(docs, report)


def _counted(docs: Iterator[Document], report: CorpusReport) -> Iterator[Document]:
    for doc in docs:
        report.documents += 1
        yield doc


def _path_documents(root: Path, text_column: str, source_column: str | None, skip: Skip) -> Iterator[Document]:
    if root.is_dir():
        files = _walk(root, skip)
    elif stat.S_ISREG(root.stat().st_mode):
        files = iter([(root, _label(root.name))])
    else:
        skip(_not_regular(_label(root.name)))
        return
    for file, rel in files:
        if file.suffix.lower() in TABLE_SUFFIXES:
            yield from read_table(file, rel, text_column=text_column, source_column=source_column, skip=skip)
            continue
        try:
            text = _file_text(file, rel, skip)
        except _Unusable as unusable:
            skip(SkippedInput(source=rel, reason=unusable.reason, detail=unusable.detail))
            continue
        except OSError as exc:
            skip(SkippedInput(source=rel, reason="unreadable", detail=exc.strerror or str(exc)))
            continue
        yield Document(source=rel, text=text)


def _walk(root: Path, skip: Skip) -> Iterator[tuple[Path, str]]:
    """(file, POSIX path relative to root) for each regular file, depth-first in name order.

    Symlinks are followed; a real path seen before is not walked again, so a cycle ends.
    An explicit stack, not recursion, so any nesting depth works.
    """
    root_real = os.path.realpath(root)
    seen: dict[str, str] = {root_real: "."}
    stack: list[tuple[Iterator[os.DirEntry[str]], str, str]] = []
    listing = _list_dir(root, ".", skip)
    if listing is not None:
        stack.append((iter(listing), "", root_real))
    while stack:
        entries, prefix, _ = stack[-1]
        entry = next(entries, None)
        if entry is None:
            stack.pop()
            continue
        # Hidden files and folders (.git, .DS_Store, editor swap files) belong to tools, not to
        # the corpus: the one exception to reporting every skip, which would otherwise flood.
        if entry.name.startswith("."):
            continue
        rel = prefix + _label(entry.name)
        try:
            info = os.stat(entry.path)  # follows symlinks
        except OSError as exc:
            skip(_stat_failure(entry, rel, exc))
            continue
        real = os.path.realpath(entry.path)
        if stat.S_ISDIR(info.st_mode):
            if any(real == frame[2] for frame in stack):
                detail = f"links back to the enclosing folder {seen[real]}"
                skip(SkippedInput(source=rel, reason="symlink_loop", detail=detail))
            elif real in seen:
                detail = f"the same folder as {seen[real]}, already loaded"
                skip(SkippedInput(source=rel, reason="duplicate", detail=detail))
            else:
                seen[real] = rel
                listing = _list_dir(Path(entry.path), rel, skip)
                if listing is not None:
                    stack.append((iter(listing), rel + "/", real))
        elif not stat.S_ISREG(info.st_mode):
            skip(_not_regular(rel))
        elif real in seen:
            detail = f"the same file as {seen[real]}, already loaded"
            skip(SkippedInput(source=rel, reason="duplicate", detail=detail))
        else:
            seen[real] = rel
            yield Path(entry.path), rel


def _label(name: str) -> str:
    """A file name as text: bytes that are not UTF-8 are written as `\\xe9` escapes.

    Linux names are bytes; Python hands over the undecodable ones as lone surrogates, which are
    not text: they cannot be hashed into a chunk id, written to JSON or printed. The label only
    names the file (it is opened by its real path), so a readable, stable escape is enough.
    """
    return os.fsencode(name).decode("utf-8", errors="backslashreplace")


def _list_dir(folder: Path, rel: str, skip: Skip) -> list[os.DirEntry[str]] | None:
    try:
        with os.scandir(folder) as entries:
            return sorted(entries, key=lambda entry: entry.name)
    except OSError as exc:
        detail = f"cannot list the folder: {exc.strerror or exc}"
        skip(SkippedInput(source=rel, reason="unreadable", detail=detail))
        return None


def _stat_failure(entry: os.DirEntry[str], rel: str, exc: OSError) -> SkippedInput:
    if exc.errno == errno.ELOOP:
        return SkippedInput(source=rel, reason="symlink_loop", detail="the symlink points to itself")
    if isinstance(exc, FileNotFoundError) and entry.is_symlink():
        target = _label(os.readlink(entry.path))
        detail = f"the symlink points to {target}, which does not exist"
        return SkippedInput(source=rel, reason="dangling_symlink", detail=detail)
    return SkippedInput(source=rel, reason="unreadable", detail=exc.strerror or str(exc))


def _not_regular(rel: str) -> SkippedInput:
    # Opening a FIFO would block forever, and devices are not documents.
    detail = "not a regular file (a FIFO, socket or device)"
    return SkippedInput(source=rel, reason="unreadable", detail=detail)


def _file_text(file: Path, rel: str, skip: Skip) -> str:
    suffix = file.suffix.lower()  # "notes.rst.txt" counts as .txt
    if suffix == ".pdf":
        text = _pdf_text(file, rel, skip)
        nothing = "no extractable text (a scanned PDF has only images)"
    elif suffix in HTML_SUFFIXES:
        markup = _decode(_read_text_bytes(file))
        try:
            text = html_to_text(markup)
        except RecursionError as exc:
            # BeautifulSoup walks nested elements recursively; no real page nests this deep.
            raise _Unusable("html_error", "the HTML is nested too deeply to read") from exc
        nothing = "no readable text once the markup is removed"
    elif suffix in TEXT_SUFFIXES:
        # Bytes are decoded by hand, so newlines are normalised by hand too.
        text = _decode(_read_text_bytes(file)).replace("\r\n", "\n").replace("\r", "\n")
        nothing = "the file holds only whitespace"
    else:
        raise _Unusable("unsupported_type", f"{suffix or 'no extension'} is not a supported type")
    if not text.strip():
        raise _Unusable("empty", nothing)
    return text


def _read_text_bytes(file: Path) -> bytes:
    """The file's bytes, unless its first bytes already show it is binary.

    A disk image or database dump named `.txt` can be gigabytes; reading it whole only to find
    NUL bytes at its start would cost that much memory.
    """
    with file.open("rb") as handle:
        head = handle.read(SNIFF_BYTES)
        if not head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) and b"\x00" in head:
            raise _Unusable("binary", f"NUL bytes in the first {SNIFF_BYTES} bytes")
        handle.seek(0)
        return handle.read()


def _decode(data: bytes) -> str:
    """UTF-8 (or UTF-16 with a BOM); failing that, legacy Windows-1252/Latin-1 text."""
    if not data:
        raise _Unusable("empty", "the file is empty (0 bytes)")
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise _Unusable("undecodable", f"invalid UTF-16: {exc.reason}") from exc
    # Text never holds NUL bytes; checked before UTF-8, which NULs would pass.
    if b"\x00" in data[:SNIFF_BYTES]:
        raise _Unusable("binary", f"NUL bytes in the first {SNIFF_BYTES} bytes")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        not_utf8 = f"not UTF-8 ({exc.reason} at byte {exc.start})"
    high = sum(byte >= 0x80 for byte in data[:SNIFF_BYTES])
    if high > 0.3 * min(len(data), SNIFF_BYTES):
        # Western 8-bit text is mostly ASCII with a few accented letters; a file of mostly high
        # bytes is a multi-byte legacy encoding (GBK, Big5, Shift-JIS, EUC-KR), which Windows-1252
        # would turn into mojibake without complaint.
        return _decode_cjk_legacy(data, not_utf8)
    try:
        text = data.decode("cp1252")  # a superset of Latin-1's printable characters
    except UnicodeDecodeError as exc:
        raise _Unusable("undecodable", f"{not_utf8} nor Windows-1252/Latin-1") from exc
    # Any byte string decodes as an 8-bit code page; accept it only if it reads as text.
    printable = sum(ch.isprintable() or ch in "\t\n\r\f\xa0\xad" for ch in text)
    if printable < 0.95 * len(text):
        raise _Unusable("undecodable", f"{not_utf8}, and too many control characters for text")
    return text


_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uff00-\uffef]")


def _decode_cjk_legacy(data: bytes, not_utf8: str) -> str:
    """The first legacy CJK encoding that decodes `data` strictly into mostly CJK text."""
    for encoding in ("gb18030", "big5", "shift_jis", "euc_kr"):
        try:
            text = data.decode(encoding)
        except UnicodeDecodeError:
            continue
        letters = [ch for ch in text if not ch.isspace() and not ch.isascii()]
        if letters and sum(bool(_CJK.match(ch)) for ch in letters) >= 0.9 * len(letters):
            return text
    raise _Unusable("undecodable", f"{not_utf8}, and not text in Windows-1252, GBK, Big5, Shift-JIS or EUC-KR")


def _pdf_text(file: Path, rel: str, skip: Skip) -> str:
    """Pages' text joined by blank lines; a page that fails is reported, the rest are kept."""
    try:
        reader = PdfReader(file)
        if reader.is_encrypted and reader.decrypt("") == PasswordType.NOT_DECRYPTED:
            raise _Unusable("pdf_error", "the PDF is encrypted with a password")
        pages = list(reader.pages)
    except _PDF_ERRORS as exc:
        raise _Unusable("pdf_error", f"not a readable PDF: {exc}") from exc
    texts: list[str] = []
    for number, page in enumerate(pages, start=1):
        try:
            texts.append(page.extract_text().strip())
        except _PDF_ERRORS as exc:
            source = f"{rel}#page{number}"
            skip(SkippedInput(source=source, reason="pdf_error", detail=f"page {number}: {exc}"))
    return "\n\n".join(text for text in texts if text)
