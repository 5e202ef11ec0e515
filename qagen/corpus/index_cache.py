"""Where the bundled baseline's indexes live between runs: one cache for every evaluation.

A BM25 index, and a dense index with the chunks' embeddings, depend on the corpus (its path and its
files' names, sizes and contents: a file edited with its size and time kept is a change), the
chunking and, for dense, the embeddings model, never on the evaluation's output directory: they are
kept in a cache folder of their own, under a key of exactly those (`CorpusChunks.cache_key`), so a
second evaluation of the same corpus with the same model, into any output directory, embeds nothing
and says where the index it reused lives.

The cache is found as the Hugging Face libraries find theirs: `$QAGEN_CACHE`, else
`$XDG_CACHE_HOME/qagen`, else `~/.cache/qagen`; an evaluation may name another (`index_cache_dir(cache)`).
Indexes are in its `indexes/` folder, one folder each (`bm25-KEY`, `dense-KEY`, see `saved_index`),
their lock files in `indexes/.locks/`; deleting any of them, or the whole cache, only costs the time
to build them again.

Two processes are safe: a folder appears complete or not at all (written aside, then renamed, by
`saved_index.save_folder`, which moves a damaged index it replaces aside first), and `building`
holds a file lock per index while it is loaded or built, so a second evaluation of the same corpus
at the same time waits for the first one's index and reads it instead of embedding every chunk a
second time.

A cache that cannot be written (read-only, a file where the folder should be, no space left) stops
nothing: the indexes saved in it are still read, the others are built for the run and not kept, no
lock is held, and `cache_unusable` says so once per process, naming the setting to change.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path

from filelock import FileLock

__all__ = ["CACHE_ENV", "LOCKS", "building", "cache_home", "cache_unusable", "index_cache_dir"]

_logger = logging.getLogger(__name__)

CACHE_ENV = "QAGEN_CACHE"
"""The environment variable naming qagen's cache folder."""
LOCKS = ".locks"
"""The folder of the indexes' lock files, inside the folder of the indexes."""
_INDEXES = "indexes"
_said_unusable: set[Path] = set()
"""The caches `cache_unusable` has warned about in this process."""


def cache_home() -> Path:
    """qagen's cache folder: `$QAGEN_CACHE`, else `$XDG_CACHE_HOME/qagen`, else `~/.cache/qagen`."""
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "qagen"


def index_cache_dir(cache: Path | None = None) -> Path:
    """The folder of the saved indexes in `cache` (default: `cache_home()`)."""
    return (cache if cache is not None else cache_home()) / _INDEXES


def building(folder: Path | None) -> AbstractContextManager[None]:
    """Held while the index saved in `folder` is loaded, or built and saved: one process at a time
    per index (another waits, then loads what the first saved). Nothing to hold without a folder."""
    return nullcontext() if folder is None else _locked(folder)


def cache_unusable(indexes: Path, error: OSError) -> None:
    """Say, once per process and cache, that the folder of the indexes `indexes` cannot be written."""
    if indexes in _said_unusable:
        return
    _said_unusable.add(indexes)
    _logger.warning(
        "The index cache %s cannot be written (%s): the indexes saved there are read, the others are built for "
        "this run only. To keep them, point %s at a folder you can write.",
        indexes,
        error.strerror or error,
        _setting_of(indexes),
    )


def _setting_of(indexes: Path) -> str:
    """The setting that chose `indexes`, as the user would change it."""
    if indexes != index_cache_dir():
        return "`cache_dir`"  # given by the caller (the config key; the CLI shows its flag)
    if os.environ.get(CACHE_ENV):
        return CACHE_ENV
    if os.environ.get("XDG_CACHE_HOME"):
        return f"{CACHE_ENV} (unset, so the cache is in XDG_CACHE_HOME)"
    return f"{CACHE_ENV} (unset, so the cache is ~/.cache/qagen)"


@contextmanager
def _locked(folder: Path) -> Iterator[None]:
    # In `.locks/` beside the indexes, as the Hugging Face hub cache keeps its own. flock(2): the
    # kernel releases a lock when its holder exits, even after kill -9, so none is ever left stale.
    locks = folder.parent / LOCKS
    try:
        locks.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(locks / f"{folder.name}.lock"))
        lock.acquire()
    except OSError as error:
        # Nothing can be saved there either: no other process's save to wait for.
        cache_unusable(folder.parent, error)
        yield
        return
    try:
        yield
    finally:
        lock.release()
