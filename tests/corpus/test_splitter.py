"""The characters splitter is LangChain's `RecursiveCharacterTextSplitter` as the notebook configures it:
the same chunks from the same text (the build's chunk ids, samples and resume keys rest on them)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qagen.corpus.chunk import SEPARATORS, make_splitter
from qagen.corpus.splitter import RecursiveSplitter

langchain_text_splitters = pytest.importorskip("langchain_text_splitters")

PYTHON_DOCS = Path("/usr/share/doc/python3.11/html/_sources")


def langchain_splitter(size: int, overlap: int) -> object:
    return langchain_text_splitters.RecursiveCharacterTextSplitter(
        chunk_size=size, chunk_overlap=overlap, add_start_index=True, separators=SEPARATORS
    )


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from(list("ab c.\n\n\n éü长城。！？ \t")), min_size=0, max_size=2500),
    size=st.integers(min_value=1, max_value=300),
    overlap_fraction=st.floats(min_value=0, max_value=0.99),
)
def test_the_same_chunks_as_langchain(text: str, size: int, overlap_fraction: float) -> None:
    overlap = min(int(size * overlap_fraction), size - 1)
    expected = langchain_splitter(size, overlap).split_text(text)  # type: ignore[attr-defined]
    assert RecursiveSplitter(size, overlap, SEPARATORS).split_text(text) == expected


def test_make_splitter_splits_characters_with_its_own_copy() -> None:
    splitter = make_splitter(chunk_size=300, chunk_overlap=30)
    assert isinstance(splitter, RecursiveSplitter)
    text = ("A sentence of prose. " * 40 + "\n\n") * 5 + "x" * 700
    assert splitter.split_text(text) == langchain_splitter(300, 30).split_text(text)  # type: ignore[attr-defined]


@pytest.mark.skipif(not PYTHON_DOCS.is_dir(), reason="the Python docs (Debian's python3.11-doc) are not installed")
def test_the_same_chunks_as_langchain_on_the_python_docs() -> None:
    """The benchmarks' corpus, at the default size and a small one."""
    texts = [path.read_text(encoding="utf-8") for path in sorted(PYTHON_DOCS.rglob("*.txt"))[:150]]
    for size, overlap in ((2000, 200), (300, 60)):
        ours, theirs = RecursiveSplitter(size, overlap, SEPARATORS), langchain_splitter(size, overlap)
        for text in texts:
            assert ours.split_text(text) == theirs.split_text(text)  # type: ignore[attr-defined]
