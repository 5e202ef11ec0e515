"""A retriever's index saved in a folder of its own: written atomically, read back only under its
key, and deleted once a newer state of the same corpus replaces it.

A folder holds the retriever's own files, `contexts.jsonl` (the chunks, in index order) and
`qagen_index.json` (the key, the number of chunks, and the settings the index depends on besides the
corpus files' contents). BM25 (`bm25_index`) and dense (`dense_index`) indexes are saved alike.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from qagen.corpus.index_cache import cache_unusable
from qagen.records import RetrievedContext

__all__ = ["load_folder", "save_folder"]

T = TypeVar("T")
_META = "qagen_index.json"


def save_folder(
    folder: Path,
    key: str,
    settings: dict[str, object] | None,
    contexts: list[RetrievedContext],
    write: Callable[[Path], None],
    logger: logging.Logger,
    what: str,
) -> bool:
    """Write an index to `folder` atomically (a complete folder appears, or none): `write` puts the
    retriever's files in the folder it is given; the chunks and the key go beside them. False when
    the cache cannot be written (said once, `index_cache.cache_unusable`): the index in memory is
    complete, only later runs lose the saved copy.

    An index saved beside it with the same `settings` under another key was built from an earlier
    state of the same corpus, can never be used again, and is deleted.
    """
    staging = folder.with_name(f"{folder.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    try:
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        write(staging)
        with (staging / "contexts.jsonl").open("w", encoding="utf-8") as out:
            for context in contexts:
                out.write(context.model_dump_json() + "\n")
        (staging / _META).write_text(json.dumps({"key": key, "chunks": len(contexts), "settings": settings}))
    except OSError as error:
        shutil.rmtree(staging, ignore_errors=True)
        cache_unusable(folder.parent, error)
        return False
    try:
        _move_into_place(staging, folder)
    except OSError as error:
        shutil.rmtree(staging, ignore_errors=True)
        cache_unusable(folder.parent, error)
        return False
    if settings is not None:
        _delete_superseded(folder, key, settings, logger, what)
    return True


def _move_into_place(staging: Path, folder: Path) -> None:
    """Rename `staging` to `folder`. A folder already there is one its loader rejected (damaged, or
    incomplete): an index is built, then saved, only after that, holding the index's lock
    (`index_cache.building`). It is moved aside, then deleted, so `folder` is never half-written."""
    try:
        staging.rename(folder)
        return
    except OSError:
        if not folder.exists() and not folder.is_symlink():
            raise  # nothing in the way: the cache cannot be written
    aside = folder.with_name(f"{folder.name}.tmp-rejected-{os.getpid()}-{threading.get_ident()}")
    folder.rename(aside)
    staging.rename(folder)
    if aside.is_dir() and not aside.is_symlink():
        shutil.rmtree(aside, ignore_errors=True)
    else:
        aside.unlink(missing_ok=True)


def load_folder(
    folder: Path, key: str, read: Callable[[Path], T], logger: logging.Logger, what: str
) -> tuple[T, list[RetrievedContext]] | None:
    """What `read` makes of the index saved in `folder` under `key`, and its chunks; None when there
    is none, or it is unreadable or incomplete (said in a warning: it is rebuilt, never trusted)."""
    try:
        meta = json.loads((folder / _META).read_text())
        if meta.get("key") != key:
            return None
        index = read(folder)
        with (folder / "contexts.jsonl").open(encoding="utf-8") as lines:
            contexts = [RetrievedContext.model_validate_json(line) for line in lines]
    except (FileNotFoundError, NotADirectoryError):  # nothing saved there (the cache may be a file)
        return None
    except (OSError, ValueError, RuntimeError) as exc:  # RuntimeError: FAISS's reader on a damaged file
        logger.warning("Ignoring the unreadable %s in %s (%s); rebuilding it.", what, folder, exc)
        return None
    if len(contexts) != meta.get("chunks"):
        logger.warning("Ignoring the incomplete %s in %s; rebuilding it.", what, folder)
        return None
    return index, contexts


def _delete_superseded(folder: Path, key: str, settings: dict[str, object], logger: logging.Logger, what: str) -> None:
    """Delete the indexes beside `folder` (of its kind: `bm25-*`, `dense-*`) saved with the same
    `settings` under another key."""
    kind = folder.name.split("-", 1)[0]
    for sibling in folder.parent.glob(f"{kind}-*"):
        if sibling == folder or not sibling.is_dir() or ".tmp-" in sibling.name:
            continue  # itself, or one being written (by `save_folder`, maybe in another process)
        try:
            meta = json.loads((sibling / _META).read_text())
        except (OSError, ValueError):
            continue  # not a finished index (another process may be writing it): not ours to judge
        if meta.get("settings") == settings and meta.get("key") != key:
            logger.info("Deleting the %s of an earlier state of the corpus, %s.", what, sibling)
            shutil.rmtree(sibling, ignore_errors=True)
