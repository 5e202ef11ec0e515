"""Walking a corpus folder: every regular file once, in a deterministic order, every problem a skip.

Symlinks are followed, but a folder or file reached twice is reported (`duplicate`, `symlink_loop`)
instead of being loaded again; hidden files and folders are passed over; FIFOs, sockets and devices
are never opened.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from qagen.corpus.load.tables import Skip
from qagen.records import SkippedInput


def corpus_files(root: Path, skip: Skip) -> Iterator[tuple[Path, str]]:
    """(file, label) for each input of a corpus path: the files of a folder, or the file itself."""
    if root.is_dir():
        yield from walk_files(root, skip)
    elif stat.S_ISREG(root.stat().st_mode):
        yield root, file_label(root.name)
    else:
        skip(not_regular(file_label(root.name)))


def walk_files(root: Path, skip: Skip) -> Iterator[tuple[Path, str]]:
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
        rel = prefix + file_label(entry.name)
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
            skip(not_regular(rel))
        elif real in seen:
            detail = f"the same file as {seen[real]}, already loaded"
            skip(SkippedInput(source=rel, reason="duplicate", detail=detail))
        else:
            seen[real] = rel
            yield Path(entry.path), rel


def file_label(name: str) -> str:
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
        target = file_label(os.readlink(entry.path))
        detail = f"the symlink points to {target}, which does not exist"
        return SkippedInput(source=rel, reason="dangling_symlink", detail=detail)
    return SkippedInput(source=rel, reason="unreadable", detail=exc.strerror or str(exc))


def not_regular(rel: str) -> SkippedInput:
    """The skip of a path that is not a regular file or folder."""
    # Opening a FIFO would block forever, and devices are not documents.
    detail = "not a regular file (a FIFO, socket or device)"
    return SkippedInput(source=rel, reason="unreadable", detail=detail)
