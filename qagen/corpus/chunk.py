"""Split documents into chunks with exact character offsets and content-hash ids."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Literal

from qagen.errors import ConfigError
from qagen.records import Chunk, Document

if TYPE_CHECKING:
    from langchain_text_splitters import TextSplitter

LengthUnit = Literal["characters", "tokens"]

ChunkSource = Callable[[], Iterable[Chunk]]
"""Every chunk of the corpus, read anew on each call (a run's chunk file is read, never held)."""

# The cookbook notebook's separators (paragraphs, lines, sentences, words, characters), plus the
# full-width sentence ends of Chinese and Japanese, which have no spaces: without them a long
# paragraph there is cut between any two characters.
SEPARATORS = ["\n\n", "\n", ".", "。", "！", "？", " ", ""]


def chunk_id(source: str, start_index: int, text: str) -> str:
    """sha256 of (source, start_index, text); stable across processes, unlike `hash()`."""
    digest = hashlib.sha256()
    for part in (source, str(start_index), text):
        digest.update(part.encode("utf-8"))
        digest.update(b"\x00")
    return digest.hexdigest()[:20]


def make_splitter(
    chunk_size: int = 2000,
    chunk_overlap: int = 200,
    length_unit: LengthUnit = "characters",
    encoding: str = "cl100k_base",
) -> TextSplitter:
    """The notebook's recursive splitter (LangChain's), measuring length in characters or tiktoken tokens.
    Imported here, when chunking: a command that reads the run's stored chunks never pays for it."""
    if chunk_size <= 0:
        raise ConfigError(f"`chunk_size` must be positive, got {chunk_size}.", settings=("chunk_size",))
    if not 0 <= chunk_overlap < chunk_size:
        raise ConfigError(
            f"`chunk_overlap` must be at least 0 and smaller than `chunk_size` ({chunk_size}), got {chunk_overlap}.",
            settings=("chunk_overlap", "chunk_size"),
        )
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    if length_unit == "characters":
        return RecursiveCharacterTextSplitter(
            chunk_size=chunk_size,
            chunk_overlap=chunk_overlap,
            add_start_index=True,
            separators=SEPARATORS,
        )
    return RecursiveCharacterTextSplitter.from_tiktoken_encoder(
        encoding_name=_checked_encoding(encoding),
        chunk_size=chunk_size,
        chunk_overlap=chunk_overlap,
        add_start_index=True,
        separators=SEPARATORS,
    )


def _checked_encoding(encoding: str) -> str:
    """Load the tiktoken table now, so a missing one is a clear error, never a fallback to characters."""
    import tiktoken

    try:
        tiktoken.get_encoding(encoding)
    except (ValueError, OSError) as exc:
        raise ConfigError(
            f"The tiktoken encoding '{encoding}' could not be loaded ({exc}); it is downloaded on first "
            "use, so install it where it can be fetched, set TIKTOKEN_CACHE_DIR to a cache that has it, "
            "or choose another `encoding`.",
            settings=("encoding",),
        ) from exc
    except Exception as exc:  # tiktoken's download failures arrive as requests' many types
        raise ConfigError(
            f"The tiktoken encoding '{encoding}' could not be loaded: {type(exc).__name__}: {exc}."
        ) from exc
    return encoding


# Long documents are split a window at a time: the splitter holds several copies of its input in
# lists of pieces, so a 300 MB file would otherwise need gigabytes. Windows end at a paragraph
# break, where the splitter would cut anyway, so chunks come out as they would without windows.
WINDOW_CHARS = 1_000_000


def _windows(text: str) -> Iterator[tuple[int, str]]:
    start = 0
    while start < len(text):
        end = min(len(text), start + WINDOW_CHARS)
        if end < len(text):
            cut = text.rfind("\n\n", start + WINDOW_CHARS // 2, end)
            if cut > start:
                end = cut + 2
        yield start, text[start:end]
        start = end


def chunk_document(document: Document, splitter: TextSplitter) -> Iterator[Chunk]:
    """Chunks of one document, in order, each with `document.text[start:end] == chunk.text`.

    The offsets index `document.text`, the text as loaded: for a text file with CRLF (or CR) line
    ends that is the newline-normalised text, so `open(path, encoding=...).read()[start:end]` (which
    normalises the same way) finds the chunk, while the raw bytes, or a read with `newline=""`, do not.
    Keeping the CRs would put them into every chunk and so into the prompts; the normalised text is
    what every Python reader of the file sees by default.
    """
    for offset, window in _windows(document.text):
        position = 0
        for piece in splitter.split_text(window):
            # Locate the piece ourselves: the splitter strips whitespace, and its own start index
            # can land on an earlier identical passage. Searching forward from the previous
            # chunk's start keeps offsets monotonic and exact.
            start = window.find(piece, position)
            if start < 0:
                start = window.find(piece)
            if start < 0:
                raise AssertionError(f"chunk not found in its document {document.source!r}")
            position = start + 1
            start += offset
            yield Chunk(
                id=chunk_id(document.source, start, piece),
                source=document.source,
                text=piece,
                start_index=start,
                end_index=start + len(piece),
            )


class ChunkStats:
    """Counts kept while chunking (for the funnel)."""

    def __init__(self) -> None:
        self.documents = 0
        self.chunks = 0
        self.duplicates = 0
        self.characters = 0


def chunk_documents(documents: Iterable[Document], splitter: TextSplitter, stats: ChunkStats) -> Iterator[Chunk]:
    """Stream chunks of all documents, dropping chunks whose text was already seen.

    Only a 16-byte digest per distinct chunk is kept, so memory grows slowly with corpus size.
    """
    seen: set[bytes] = set()
    for document in documents:
        stats.documents += 1
        stats.characters += len(document.text)
        for chunk in chunk_document(document, splitter):
            key = hashlib.blake2b(chunk.text.encode("utf-8"), digest_size=16).digest()
            if key in seen:
                stats.duplicates += 1
                continue
            seen.add(key)
            stats.chunks += 1
            yield chunk
