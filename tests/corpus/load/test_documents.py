"""Corpus loading: every supported type, every skip reason, and the corpus-level errors."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from qagen.corpus.load.documents import CorpusReport, iter_documents
from qagen.corpus.load.html_text import html_to_text
from qagen.errors import CorpusError
from qagen.records import Document, SkippedInput


def load(path: Path | None, **options: Any) -> tuple[list[Document], CorpusReport]:
    """Run the loader, checking the bookkeeping every caller relies on."""
    report = CorpusReport()
    seen: list[SkippedInput] = []
    docs = list(iter_documents(path, report=report, on_skip=seen.append, **options))
    assert seen == report.skipped
    assert report.documents == len(docs)
    return docs, report


def texts(docs: Sequence[Document]) -> dict[str, str]:
    return {doc.source: doc.text for doc in docs}


def reasons(report: CorpusReport) -> dict[str, str]:
    return {item.source: item.reason for item in report.skipped}


def write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def make_pdf(pages: Sequence[str]) -> bytes:
    """A minimal valid PDF, one Helvetica line of text per page (an empty string: a blank page)."""
    count = len(pages)
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(count))
    font = 3 + 2 * count
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", f"<< /Type /Pages /Kids [{kids}] /Count {count} >>".encode()]
    for i, text in enumerate(pages):
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {4 + 2 * i} 0 R "
            f"/Resources << /Font << /F1 {font} 0 R >> >> >>".encode()
        )
        content = f"BT /F1 12 Tf 72 712 Td ({text}) Tj ET".encode() if text else b""
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content))
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


# --- plain text and decoding -------------------------------------------------------------------


def test_text_types_are_loaded_with_relative_posix_sources(tmp_path: Path) -> None:
    write(tmp_path / "a.txt", "plain text")
    write(tmp_path / "b.md", "# Title\n\nmarkdown body")
    write(tmp_path / "c.rst", "Title\n=====\n\nrst body")
    write(tmp_path / "d.rst.txt", "counts as txt")
    write(tmp_path / "UPPER.TXT", "upper-case extension")
    docs, report = load(tmp_path)
    assert texts(docs) == {
        "UPPER.TXT": "upper-case extension",
        "a.txt": "plain text",
        "b.md": "# Title\n\nmarkdown body",
        "c.rst": "Title\n=====\n\nrst body",
        "d.rst.txt": "counts as txt",
    }
    assert report.skipped == []


def test_single_file_corpus_uses_the_file_name(tmp_path: Path) -> None:
    file = write(tmp_path / "deep" / "dir" / "only.txt", "alone")
    docs, _ = load(file)
    assert docs == [Document(source="only.txt", text="alone")]


def test_latin1_and_cp1252_text_are_decoded(tmp_path: Path) -> None:
    write(tmp_path / "short.txt", "café".encode("latin-1"))
    write(tmp_path / "long.txt", "Crème brûlée, déjà vu, naïve façade.\n".encode("latin-1"))
    write(tmp_path / "quotes.txt", "“Smart quotes” – and a euro sign: €5".encode("cp1252"))
    docs, report = load(tmp_path)
    assert texts(docs) == {
        "long.txt": "Crème brûlée, déjà vu, naïve façade.\n",
        "quotes.txt": "“Smart quotes” – and a euro sign: €5",
        "short.txt": "café",
    }
    assert report.skipped == []


def test_utf8_bom_utf16_bom_and_crlf(tmp_path: Path) -> None:
    write(tmp_path / "bom.txt", "\ufeffwith BOM".encode())
    write(tmp_path / "utf16.txt", "wide text ünïcode".encode("utf-16"))
    write(tmp_path / "crlf.txt", b"line one\r\nline two\rline three")
    docs, _ = load(tmp_path)
    assert texts(docs) == {
        "bom.txt": "with BOM",
        "crlf.txt": "line one\nline two\nline three",
        "utf16.txt": "wide text ünïcode",
    }


def test_empty_binary_and_undecodable_are_skipped_and_good_files_kept(tmp_path: Path) -> None:
    write(tmp_path / "empty.txt", b"")
    write(tmp_path / "blank.md", " \n\t\n  ")
    write(tmp_path / "image.txt", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    write(tmp_path / "nul.txt", b"valid utf-8 but \x00 inside")
    write(tmp_path / "undefined.txt", b"text with \x81\x8d bytes no code page has")
    write(tmp_path / "controls.txt", b"\x01\x02\x03\x04\x05\xff" * 50)
    write(tmp_path / "good.txt", "still here")
    docs, report = load(tmp_path)
    assert texts(docs) == {"good.txt": "still here"}
    assert reasons(report) == {
        "blank.md": "empty",
        "controls.txt": "undecodable",
        "empty.txt": "empty",
        "image.txt": "binary",
        "nul.txt": "binary",
        "undefined.txt": "undecodable",
    }
    assert report.skipped_by_reason() == {"binary": 2, "empty": 2, "undecodable": 2}
    assert list(report.skipped_by_reason()) == sorted(report.skipped_by_reason())
    assert all(item.detail for item in report.skipped)


def test_unsupported_types_are_reported_and_hidden_files_ignored(tmp_path: Path) -> None:
    write(tmp_path / "photo.png", b"\x89PNG")
    write(tmp_path / "README", "no extension")
    write(tmp_path / ".hidden.txt", "ignored")
    write(tmp_path / ".git" / "config", "[core]")
    write(tmp_path / "sub" / ".DS_Store", b"\x00\x01")
    write(tmp_path / "sub" / "kept.txt", "kept")
    docs, report = load(tmp_path)
    assert texts(docs) == {"sub/kept.txt": "kept"}
    assert reasons(report) == {"README": "unsupported_type", "photo.png": "unsupported_type"}


# --- HTML and PDF ------------------------------------------------------------------------------

PAGE = """<!DOCTYPE html>
<html><head><title>The Title</title><meta charset="utf-8"><style>body { color: red }</style>
<script>var secret = "SCRIPT CONTENT";</script><link rel="stylesheet" href="x.css"></head>
<body>
  <!-- a comment -->
  <h1>Main   heading</h1>
  <p>First paragraph with <b>bold</b> and <a href="#">a link</a>,
     wrapped over two source lines.</p>
  <noscript>NOSCRIPT CONTENT</noscript><template><p>TEMPLATE CONTENT</p></template>
  <ul><li>item one</li><li>item two</li></ul>
  <p>Line one<br>Line two</p>
  <pre>def f():
    return 1</pre>
  <div>Caf&eacute; &amp; more</div>
</body></html>
"""


def test_html_becomes_readable_text() -> None:
    text = html_to_text(PAGE)
    assert "<" not in text and ">" not in text
    for hidden in ("SCRIPT", "color: red", "NOSCRIPT", "TEMPLATE", "a comment", "x.css"):
        assert hidden not in text
    assert text == (
        "The Title\n\nMain heading\n\n"
        "First paragraph with bold and a link, wrapped over two source lines.\n\n"
        "item one\n\nitem two\n\nLine one\nLine two\n\n"
        "def f():\n    return 1\n\nCafé & more"
    )


def test_html_files_load_and_script_only_page_is_empty(tmp_path: Path) -> None:
    write(tmp_path / "page.html", PAGE)
    write(tmp_path / "old.htm", "<p>na\xefve</p>".encode("latin-1"))
    write(tmp_path / "scripts.html", "<html><script>only()</script><style>p{}</style></html>")
    docs, report = load(tmp_path)
    assert set(texts(docs)) == {"page.html", "old.htm"}
    assert texts(docs)["old.htm"] == "naïve"
    assert "SCRIPT CONTENT" not in texts(docs)["page.html"]
    assert reasons(report) == {"scripts.html": "empty"}


def test_pdf_pages_are_joined_by_blank_lines(tmp_path: Path) -> None:
    write(tmp_path / "doc.pdf", make_pdf(["Hello PDF", "Second page"]))
    docs, report = load(tmp_path)
    assert docs == [Document(source="doc.pdf", text="Hello PDF\n\nSecond page")]
    assert report.skipped == []


def test_broken_encrypted_and_textless_pdfs_are_skipped(tmp_path: Path) -> None:
    from pypdf import PdfReader, PdfWriter

    write(tmp_path / "broken.pdf", b"%PDF-1.4\nthis is not really a pdf")
    write(tmp_path / "blank.pdf", make_pdf([""]))
    source = write(tmp_path / "plain.pdf", make_pdf(["Open text"]))
    writer = PdfWriter(clone_from=PdfReader(source))
    writer.encrypt(user_password="secret", algorithm="RC4-128")
    with (tmp_path / "locked.pdf").open("wb") as handle:
        writer.write(handle)
    docs, report = load(tmp_path)
    assert texts(docs) == {"plain.pdf": "Open text"}
    assert reasons(report) == {"blank.pdf": "empty", "broken.pdf": "pdf_error", "locked.pdf": "pdf_error"}
    assert "password" in next(s.detail for s in report.skipped if s.source == "locked.pdf")


# --- the walk: nesting, names, symlinks, unreadable files -------------------------------------


def test_nesting_spaces_and_non_ascii_names(tmp_path: Path) -> None:
    deep = tmp_path.joinpath(*["d"] * 150)
    write(deep / "bottom.txt", "deep down")
    write(tmp_path / "my notes" / "résumé 日本語.md", "non-ascii name")
    docs, _ = load(tmp_path)
    assert texts(docs) == {
        "/".join(["d"] * 150) + "/bottom.txt": "deep down",
        "my notes/résumé 日本語.md": "non-ascii name",
    }


def test_order_is_deterministic_and_sorted_depth_first(tmp_path: Path) -> None:
    for name in ["b.txt", "a/z.txt", "a/b/c.txt", "c.txt", "a.txt", "B.txt"]:
        write(tmp_path / name, name)
    first, _ = load(tmp_path)
    second, _ = load(tmp_path)
    assert first == second
    assert [doc.source for doc in first] == ["B.txt", "a/b/c.txt", "a/z.txt", "a.txt", "b.txt", "c.txt"]


def test_skips_are_reported_as_they_happen(tmp_path: Path) -> None:
    write(tmp_path / "a.txt", "first")
    write(tmp_path / "b.png", b"x")
    write(tmp_path / "c.txt", "third")
    events: list[str] = []
    report = CorpusReport()
    for doc in iter_documents(tmp_path, report=report, on_skip=lambda s: events.append("skip " + s.source)):
        events.append("doc " + doc.source)
    assert events == ["doc a.txt", "skip b.png", "doc c.txt"]


def test_dangling_symlink_and_self_loop(tmp_path: Path) -> None:
    write(tmp_path / "real.txt", "real")
    (tmp_path / "dangling.txt").symlink_to(tmp_path / "gone.txt")
    (tmp_path / "self.txt").symlink_to(tmp_path / "self.txt")
    docs, report = load(tmp_path)
    assert texts(docs) == {"real.txt": "real"}
    assert reasons(report) == {"dangling.txt": "dangling_symlink", "self.txt": "symlink_loop"}


def test_directory_symlink_cycle_terminates(tmp_path: Path) -> None:
    write(tmp_path / "top.txt", "top")
    write(tmp_path / "sub" / "inner.txt", "inner")
    (tmp_path / "sub" / "back").symlink_to(tmp_path, target_is_directory=True)
    (tmp_path / "sub" / "me").symlink_to(tmp_path / "sub", target_is_directory=True)
    docs, report = load(tmp_path)
    assert texts(docs) == {"sub/inner.txt": "inner", "top.txt": "top"}
    assert reasons(report) == {"sub/back": "symlink_loop", "sub/me": "symlink_loop"}


def test_a_second_route_to_the_same_file_or_folder_is_a_duplicate(tmp_path: Path) -> None:
    write(tmp_path / "a" / "doc.txt", "once")
    (tmp_path / "b").symlink_to(tmp_path / "a", target_is_directory=True)
    (tmp_path / "link.txt").symlink_to(tmp_path / "a" / "doc.txt")
    docs, report = load(tmp_path)
    assert texts(docs) == {"a/doc.txt": "once"}
    assert reasons(report) == {"b": "duplicate", "link.txt": "duplicate"}


def test_symlinked_files_outside_the_corpus_are_followed(tmp_path: Path) -> None:
    outside = write(tmp_path / "elsewhere" / "shared.md", "shared")
    write(tmp_path / "corpus" / "own.txt", "own")
    (tmp_path / "corpus" / "linked.md").symlink_to(outside)
    docs, _ = load(tmp_path / "corpus")
    assert texts(docs) == {"linked.md": "shared", "own.txt": "own"}


@pytest.mark.skipif(not Path("/proc/self/mem").exists(), reason="needs Linux /proc")
def test_a_file_whose_read_fails_is_unreadable(tmp_path: Path) -> None:
    # Reading /proc/self/mem at offset 0 fails with EIO even for root, where chmod would not.
    (tmp_path / "mem.txt").symlink_to("/proc/self/mem")
    write(tmp_path / "ok.txt", "fine")
    docs, report = load(tmp_path)
    assert texts(docs) == {"ok.txt": "fine"}
    assert reasons(report) == {"mem.txt": "unreadable"}
    assert "Input/output error" in report.skipped[0].detail


def test_permission_denied_is_unreadable_with_the_os_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "locked.txt", "secret")
    write(tmp_path / "locked.csv", "text\nrow\n")
    write(tmp_path / "open.txt", "open")
    real_open = Path.open
    real_read_bytes = Path.read_bytes

    def deny(path: Path) -> None:
        if path.stem == "locked":
            raise PermissionError(13, "Permission denied", str(path))

    def fake_open(path: Path, *args: Any, **kwargs: Any) -> Any:
        deny(path)
        return real_open(path, *args, **kwargs)

    def fake_read_bytes(path: Path) -> bytes:
        deny(path)
        return real_read_bytes(path)

    # Tests run as root, which chmod cannot lock out; the OS error is raised where the read happens.
    monkeypatch.setattr(Path, "open", fake_open)
    monkeypatch.setattr(Path, "read_bytes", fake_read_bytes)
    docs, report = load(tmp_path)
    assert texts(docs) == {"open.txt": "open"}
    assert reasons(report) == {"locked.csv": "unreadable", "locked.txt": "unreadable"}
    assert all(item.detail == "Permission denied" for item in report.skipped)


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads files whatever their mode")
def test_chmod_000_is_unreadable(tmp_path: Path) -> None:
    locked = write(tmp_path / "locked.txt", "secret")
    write(tmp_path / "closed" / "inside.txt", "hidden")
    locked.chmod(0)
    (tmp_path / "closed").chmod(0)
    try:
        _, report = load(tmp_path)
    finally:
        (tmp_path / "closed").chmod(0o755)
    assert reasons(report) == {"closed": "unreadable", "locked.txt": "unreadable"}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_is_skipped_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.txt")
    write(tmp_path / "z.txt", "after the pipe")
    docs, report = load(tmp_path)
    assert texts(docs) == {"z.txt": "after the pipe"}
    assert reasons(report) == {"pipe.txt": "unreadable"}


# --- tables ------------------------------------------------------------------------------------


def write_jsonl(path: Path, rows: Sequence[object]) -> Path:
    return write(path, "".join(json.dumps(row) + "\n" for row in rows))


def test_jsonl_rows_with_and_without_source_column(tmp_path: Path) -> None:
    rows = [{"text": "one", "url": "https://a"}, {"text": "two", "url": None}, {"text": "three", "url": "https://c"}]
    write_jsonl(tmp_path / "rows.jsonl", rows)
    docs, _ = load(tmp_path)
    assert [(d.source, d.text) for d in docs] == [
        ("rows.jsonl#row0", "one"),
        ("rows.jsonl#row1", "two"),
        ("rows.jsonl#row2", "three"),
    ]
    docs, _ = load(tmp_path, source_column="url")
    # A row whose source is null keeps the positional source rather than being dropped.
    assert [d.source for d in docs] == ["https://a", "rows.jsonl#row1", "https://c"]


def test_jsonl_bad_lines_are_skipped_and_the_rest_kept(tmp_path: Path) -> None:
    write(
        tmp_path / "mixed.jsonl",
        '{"text": "good"}\n{not json\n\n[1, 2]\n{"text": "  "}\n{"text": null}\n{"other": 1}\n{"text": "last"}\n',
    )
    docs, report = load(tmp_path)
    assert [(d.source, d.text) for d in docs] == [("mixed.jsonl#row0", "good"), ("mixed.jsonl#row6", "last")]
    assert [(s.source, s.reason) for s in report.skipped] == [
        ("mixed.jsonl#row1", "bad_json_line"),
        ("mixed.jsonl#row2", "bad_json_line"),
        ("mixed.jsonl#row3", "empty_row"),
        ("mixed.jsonl#row4", "empty_row"),
        ("mixed.jsonl#row5", "empty_row"),
    ]
    assert report.skipped[0].detail.startswith("line 2:")
    assert report.skipped[1].detail.startswith("line 4:")


def test_csv_rows_blank_rows_and_long_cells(tmp_path: Path) -> None:
    long_text = "x" * 300_000  # beyond the csv module's default field size limit
    with (tmp_path / "t.csv").open("w", newline="", encoding="utf-8") as handle:
        handle.write('id,text\r\na,"multi\nline, with comma"\r\nb,\r\nc,   \r\nd\r\n')
        handle.write(f"e,{long_text}\r\n")
    docs, report = load(tmp_path, source_column="id")
    assert [(d.source, d.text) for d in docs] == [("a", "multi\nline, with comma"), ("e", long_text)]
    assert [(s.source, s.reason) for s in report.skipped] == [
        ("t.csv#row1", "empty_row"),
        ("t.csv#row2", "empty_row"),
        ("t.csv#row3", "empty_row"),
    ]


def test_parquet_streams_batches_in_order(tmp_path: Path) -> None:
    count = 2500  # more than one record batch
    table = pa.table({"body": [f"doc {i}" if i % 1000 else None for i in range(count)], "n": list(range(count))})
    pq.write_table(table, tmp_path / "big.parquet", row_group_size=700)
    docs, report = load(tmp_path, text_column="body")
    assert len(docs) == count - 3
    assert docs[0] == Document(source="big.parquet#row1", text="doc 1")
    assert docs[-1] == Document(source="big.parquet#row2499", text="doc 2499")
    assert reasons(report) == {f"big.parquet#row{i}": "empty_row" for i in (0, 1000, 2000)}
    docs, _ = load(tmp_path / "big.parquet", text_column="body", source_column="n")
    assert docs[0].source == "1"


def test_cells_that_are_not_text_are_skipped_rows_with_their_type(tmp_path: Path) -> None:
    # JSON values that are not strings: made into chunks, they would be drafted questions about `42`.
    values = [42, 3.5, True, ["a", "b"], {"k": "v"}, None, "a real document", "   "]
    write_jsonl(tmp_path / "values.jsonl", [{"text": value, "id": f"id{i}"} for i, value in enumerate(values)])
    docs, report = load(tmp_path, source_column="id")
    assert [(d.source, d.text) for d in docs] == [("id6", "a real document")]
    assert [(s.source, s.reason, s.detail) for s in report.skipped] == [
        ("values.jsonl#row0", "not_text", "column 'text' holds a value of type int (42), not text"),
        ("values.jsonl#row1", "not_text", "column 'text' holds a value of type float (3.5), not text"),
        ("values.jsonl#row2", "not_text", "column 'text' holds a value of type bool (True), not text"),
        ("values.jsonl#row3", "not_text", "column 'text' holds a value of type list (['a', 'b']), not text"),
        ("values.jsonl#row4", "not_text", "column 'text' holds a value of type dict ({'k': 'v'}), not text"),
        ("values.jsonl#row5", "empty_row", "column 'text' is null"),
        ("values.jsonl#row7", "empty_row", "column 'text' is blank"),
    ]
    assert report.skipped_by_reason() == {"not_text": 5, "empty_row": 2}


def test_a_long_value_that_is_not_text_is_named_briefly(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "long.jsonl", [{"text": list(range(100_000))}])
    _, report = load(tmp_path)
    assert [s.reason for s in report.skipped] == ["not_text"]
    assert len(report.skipped[0].detail) < 120, report.skipped[0].detail


def test_parquet_and_dataset_columns_of_other_types_are_not_text(tmp_path: Path) -> None:
    import datasets

    table = pa.table({"n": [1, 2], "tags": [["x"], ["y", "z"]], "raw": [b"utf-8 bytes are text", b"\xff\xfe"]})
    pq.write_table(table, tmp_path / "t.parquet")
    _, report = load(tmp_path / "t.parquet", text_column="n")
    assert reasons(report) == {"t.parquet#row0": "not_text", "t.parquet#row1": "not_text"}
    _, report = load(tmp_path / "t.parquet", text_column="tags")
    assert report.skipped_by_reason() == {"not_text": 2}
    docs, report = load(tmp_path / "t.parquet", text_column="raw")
    assert [d.text for d in docs] == ["utf-8 bytes are text"]
    assert [(s.source, s.reason) for s in report.skipped] == [("t.parquet#row1", "undecodable")]
    datasets.Dataset.from_dict({"text": [7, 8]}).save_to_disk(str(tmp_path / "numbers"))
    docs, report = load(None, hf_dataset=str(tmp_path / "numbers"))
    assert docs == [] and report.skipped_by_reason() == {"not_text": 2}


def test_csv_short_and_long_rows_read_as_dictreader_reads_them(tmp_path: Path) -> None:
    # A BOM, a short row (its missing cells are null), a long row (cells beyond the header are
    # ignored), a blank line (no row), a quoted header, and no line end after the last row.
    write(tmp_path / "t.csv", '\ufeff"id",text,url\r\nshort\r\n\r\nlong,"the text, quoted",u,extra\nlast,"no end"')
    docs, report = load(tmp_path, source_column="id")
    assert [(d.source, d.text) for d in docs] == [("long", "the text, quoted"), ("last", "no end")]
    assert [(s.source, s.reason) for s in report.skipped] == [("t.csv#row0", "empty_row")]


def test_missing_text_or_source_column_skips_the_whole_file(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "a.jsonl", [{"content": "x", "title": "t"}, {"text": "late"}])
    write(tmp_path / "b.csv", "content,title\nx,t\n")
    pq.write_table(pa.table({"content": ["x"]}), tmp_path / "c.parquet")
    write(tmp_path / "d.txt", "plain files are unaffected")
    docs, report = load(tmp_path)
    assert texts(docs) == {"d.txt": "plain files are unaffected"}
    assert reasons(report) == {
        "a.jsonl": "missing_text_column",
        "b.csv": "missing_text_column",
        "c.parquet": "missing_text_column",
    }
    assert all("'content'" in s.detail and "'text'" in s.detail for s in report.skipped)
    write(tmp_path / "b.csv", "text\nx\n")
    _, report = load(tmp_path / "b.csv", source_column="url")
    assert reasons(report) == {"b.csv": "missing_source_column"}


def test_unparseable_tables_are_table_errors(tmp_path: Path) -> None:
    write(tmp_path / "bad.parquet", b"PAR1 not really parquet")
    write(tmp_path / "latin.csv", "text\ncaf\xe9\n".encode("latin-1"))
    write(tmp_path / "empty.csv", "")
    write_jsonl(tmp_path / "good.jsonl", [{"text": "ok"}])
    docs, report = load(tmp_path)
    assert texts(docs) == {"good.jsonl#row0": "ok"}
    assert reasons(report) == {"bad.parquet": "table_error", "latin.csv": "table_error", "empty.csv": "empty"}


# --- Hugging Face datasets ---------------------------------------------------------------------


def test_saved_dataset_and_dataset_dict(tmp_path: Path) -> None:
    import datasets

    data = {"text": ["alpha", "", "gamma"], "url": ["u0", "u1", None]}
    datasets.Dataset.from_dict(data).save_to_disk(str(tmp_path / "flat"))
    docs, report = load(None, hf_dataset=str(tmp_path / "flat"), source_column="url")
    assert [(d.source, d.text) for d in docs] == [("u0", "alpha"), (f"{tmp_path / 'flat'}#row2", "gamma")]
    assert report.skipped_by_reason() == {"empty_row": 1}

    splits = datasets.DatasetDict(
        {
            "train": datasets.Dataset.from_dict({"text": ["t"]}),
            "test": datasets.Dataset.from_dict({"text": ["e1", "e2"]}),
        }
    )
    splits.save_to_disk(str(tmp_path / "dict"))
    docs, _ = load(None, hf_dataset=str(tmp_path / "dict"), split="test")
    assert [(d.source, d.text) for d in docs] == [
        (f"{tmp_path / 'dict'}:test#row0", "e1"),
        (f"{tmp_path / 'dict'}:test#row1", "e2"),
    ]
    with pytest.raises(CorpusError, match=r"no split 'validation'; it has: .*test"):
        load(None, hf_dataset=str(tmp_path / "dict"), split="validation")


def test_dataset_without_the_text_column_is_a_corpus_error(tmp_path: Path) -> None:
    import datasets

    datasets.Dataset.from_dict({"body": ["x"], "id": [1]}).save_to_disk(str(tmp_path / "ds"))
    with pytest.raises(CorpusError, match=r"no column 'text'; the columns are: 'body', 'id'"):
        iter_documents(None, report=CorpusReport(), hf_dataset=str(tmp_path / "ds"))


def test_folder_that_is_not_a_saved_dataset_is_a_corpus_error(tmp_path: Path) -> None:
    write(tmp_path / "plain" / "a.txt", "x")
    with pytest.raises(CorpusError, match="Could not load dataset") as caught:
        iter_documents(None, report=CorpusReport(), hf_dataset=str(tmp_path / "plain"))
    assert isinstance(caught.value.__cause__, FileNotFoundError)


def test_unreachable_hub_dataset_is_a_corpus_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import datasets.config
    import huggingface_hub.constants

    # Offline mode fails at once instead of retrying the (absent) test endpoint for a minute.
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(CorpusError, match=r"^Could not load dataset someone/missing: [^\n]*\.$") as caught:
        iter_documents(None, report=CorpusReport(), hf_dataset="someone/missing")
    assert isinstance(caught.value.__cause__, OSError)


def test_hub_dataset_is_loaded_with_the_split(monkeypatch: pytest.MonkeyPatch) -> None:
    import datasets

    calls: list[tuple[str, str]] = []

    def fake_load_dataset(name: str, split: str) -> datasets.Dataset:
        calls.append((name, split))
        return datasets.Dataset.from_dict({"text": ["from the hub"]})

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    docs, _ = load(None, hf_dataset="org/corpus", split="validation")
    assert calls == [("org/corpus", "validation")]
    assert docs == [Document(source="org/corpus:validation#row0", text="from the hub")]


# --- corpus-level errors -----------------------------------------------------------------------


def test_missing_path_and_bad_argument_combinations(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(CorpusError, match=f"^Corpus path not found: {missing}$"):
        iter_documents(missing, report=CorpusReport())
    with pytest.raises(CorpusError):
        iter_documents(None, report=CorpusReport())
    with pytest.raises(CorpusError):
        iter_documents(tmp_path, report=CorpusReport(), hf_dataset="org/corpus")


def test_an_empty_folder_yields_nothing_without_raising(tmp_path: Path) -> None:
    docs, report = load(tmp_path)
    assert docs == [] and report.skipped == [] and report.documents == 0


SITE_PAGE = """<html><head><title>json — JSON encoder</title></head><body>
<div class="related" role="navigation"><ul><li><a href="genindex.html">index</a></li><li>Python »</li></ul></div>
<div class="document"><div class="body" role="main"><h1>json — JSON encoder</h1>
<p>JSON is a lightweight data interchange format.</p>
<aside class="footnote" role="note"><p>[1] A footnote of the page.</p></aside></div></div>
<div class="sphinxsidebar" role="navigation"><h3>Table of Contents</h3><ul><li>Basic Usage</li></ul>
<h4>Previous topic</h4><p>email.iterators</p><h3>This Page</h3><ul><li>Report a Bug</li></ul></div>
<div class="footer">&copy; Copyright 2001-2026, Python Software Foundation.</div>
</body></html>"""

ASCIIDOC_PAGE = """<html><head><title>git-commit(1)</title></head><body>
<div id="header"><h1>git-commit(1) Manual Page</h1><div id="toc"><div id="toctitle">Table of Contents</div></div></div>
<div id="content"><h2>NAME</h2><p>git-commit - Record changes to the repository</p></div>
<nav><a href="index.html">Back to the index</a></nav>
<div id="footer"><div id="footer-text">Last updated 2026-05-12</div></div>
</body></html>"""


def test_a_sites_navigation_is_left_out_of_a_pages_text() -> None:
    # Sphinx (Python's documentation): the part marked main, its footnotes kept.
    assert html_to_text(SITE_PAGE) == (
        "json — JSON encoder\n\njson — JSON encoder\n\nJSON is a lightweight data interchange format.\n\n"
        "[1] A footnote of the page."
    )
    # AsciiDoc (git's manual pages): no main, the table of contents, navigation and footer named as such.
    text = html_to_text(ASCIIDOC_PAGE)
    assert text == (
        "git-commit(1)\n\ngit-commit(1) Manual Page\n\nNAME\n\ngit-commit - Record changes to the repository"
    )
