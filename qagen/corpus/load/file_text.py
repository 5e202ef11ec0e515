"""The text of one corpus file: plain text (.txt, .md, .rst), HTML or PDF.

Bytes are decoded as UTF-8 (or UTF-16 with a BOM), else as legacy Windows-1252/Latin-1 or CJK text
when they read as text in it; a file that yields no text raises `Unusable` with a short reason.
"""

from __future__ import annotations

import codecs
import re
from pathlib import Path

from qagen.corpus.load.html_text import html_to_text
from qagen.corpus.load.tables import Skip
from qagen.records import SkippedInput

TEXT_SUFFIXES = frozenset({".txt", ".md", ".rst"})
HTML_SUFFIXES = frozenset({".html", ".htm"})
SNIFF_BYTES = 8192

# pypdf raises these on malformed files besides its own errors; the try blocks hold only pypdf calls.
_PDF_ERRORS = (ValueError, KeyError, TypeError, IndexError, AttributeError, AssertionError, RecursionError)


class Unusable(Exception):
    """A file that yields no document; becomes a SkippedInput."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


def file_text(file: Path, rel: str, skip: Skip) -> str:
    """The text of `file` (named `rel` in skips of single PDF pages); raises `Unusable` if it has none."""
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
            raise Unusable("html_error", "the HTML is nested too deeply to read") from exc
        nothing = "no readable text once the markup is removed"
    elif suffix in TEXT_SUFFIXES:
        # Bytes are decoded by hand, so newlines are normalised by hand too.
        text = _decode(_read_text_bytes(file)).replace("\r\n", "\n").replace("\r", "\n")
        nothing = "the file holds only whitespace"
    else:
        raise Unusable("unsupported_type", f"{suffix or 'no extension'} is not a supported type")
    if not text.strip():
        raise Unusable("empty", nothing)
    return text


def _read_text_bytes(file: Path) -> bytes:
    """The file's bytes, unless its first bytes already show it is binary.

    A disk image or database dump named `.txt` can be gigabytes; reading it whole only to find
    NUL bytes at its start would cost that much memory.
    """
    with file.open("rb") as handle:
        head = handle.read(SNIFF_BYTES)
        if not head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) and b"\x00" in head:
            raise Unusable("binary", f"NUL bytes in the first {SNIFF_BYTES} bytes")
        handle.seek(0)
        return handle.read()


def _decode(data: bytes) -> str:
    """UTF-8 (or UTF-16 with a BOM); failing that, legacy Windows-1252/Latin-1 text."""
    if not data:
        raise Unusable("empty", "the file is empty (0 bytes)")
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise Unusable("undecodable", f"invalid UTF-16: {exc.reason}") from exc
    # Text never holds NUL bytes; checked before UTF-8, which NULs would pass.
    if b"\x00" in data[:SNIFF_BYTES]:
        raise Unusable("binary", f"NUL bytes in the first {SNIFF_BYTES} bytes")
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
        raise Unusable("undecodable", f"{not_utf8} nor Windows-1252/Latin-1") from exc
    # Any byte string decodes as an 8-bit code page; accept it only if it reads as text.
    printable = sum(ch.isprintable() or ch in "\t\n\r\f\xa0\xad" for ch in text)
    if printable < 0.95 * len(text):
        raise Unusable("undecodable", f"{not_utf8}, and too many control characters for text")
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
    raise Unusable("undecodable", f"{not_utf8}, and not text in Windows-1252, GBK, Big5, Shift-JIS or EUC-KR")


def _pdf_text(file: Path, rel: str, skip: Skip) -> str:
    """Pages' text joined by blank lines; a page that fails is reported, the rest are kept."""
    # Imported here: a third of a second of every build's start-up, for corpora without a PDF too.
    from pypdf import PasswordType, PdfReader
    from pypdf.errors import DependencyError, PyPdfError

    errors = (PyPdfError, DependencyError, *_PDF_ERRORS)
    try:
        reader = PdfReader(file)
        if reader.is_encrypted and reader.decrypt("") == PasswordType.NOT_DECRYPTED:
            raise Unusable("pdf_error", "the PDF is encrypted with a password")
        pages = list(reader.pages)
    except errors as exc:
        raise Unusable("pdf_error", f"not a readable PDF: {exc}") from exc
    texts: list[str] = []
    for number, page in enumerate(pages, start=1):
        try:
            texts.append(page.extract_text().strip())
        except errors as exc:
            source = f"{rel}#page{number}"
            skip(SkippedInput(source=source, reason="pdf_error", detail=f"page {number}: {exc}"))
    return "\n\n".join(text for text in texts if text)
