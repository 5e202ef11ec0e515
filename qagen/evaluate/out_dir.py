"""Where an evaluation writes: a folder that is new, empty, or an evaluation of the same kind.

As `build` writes only into its own run directory, an evaluation never writes among a corpus's
documents (the next build would find the corpus changed) nor over a build run's `summary.json`.
"""

from __future__ import annotations

from pathlib import Path

from qagen.errors import QagenError
from qagen.runs.rundir import RunDir

__all__ = ["EVAL_FILE", "require_evaluation_dir", "require_grid_dir"]

EVAL_FILE = "eval.json"
"""The file that makes a folder an evaluation: its settings, written before any other file of it."""
_ANOTHER = "(a new or empty folder, or an earlier one of this kind to resume)"


def _entries(folder: Path) -> list[Path]:
    """What a folder holds, hidden files left out (`.DS_Store`, `.gitkeep` make no folder foreign)."""
    return [entry for entry in folder.iterdir() if not entry.name.startswith(".")]


def _is_evaluation(folder: Path) -> bool:
    return (folder / EVAL_FILE).is_file()


def _refuse_file_or_build(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise QagenError(f"{out} is a file; `out` must be a folder.", settings=("out",))
    if RunDir(out).exists():
        raise QagenError(
            f"{out} is a qagen build run (run.json), not an evaluation; choose another `out` {_ANOTHER}.",
            settings=("out",),
        )


def require_evaluation_dir(out: Path) -> None:
    """Raise `QagenError` unless `out` is missing, empty, or an evaluation (to resume)."""
    _refuse_file_or_build(out)
    if out.is_dir() and not _is_evaluation(out) and _entries(out):
        raise QagenError(
            f"{out} holds files of its own and is no qagen evaluation (no {EVAL_FILE}); choose another `out` "
            f"{_ANOTHER}.",
            settings=("out",),
        )


def require_grid_dir(out: Path) -> None:
    """Raise `QagenError` unless `out` is missing, empty, or a grid's folder: folders only, at least
    one of them an evaluation (index folders that older versions kept there are folders too)."""
    _refuse_file_or_build(out)
    if not out.is_dir():
        return
    if _is_evaluation(out):
        raise QagenError(
            f"{out} is one evaluation ({EVAL_FILE}), not a folder of them; give the grid another `out` {_ANOTHER}.",
            settings=("out",),
        )
    entries = _entries(out)
    if entries and not (all(entry.is_dir() for entry in entries) and any(map(_is_evaluation, entries))):
        raise QagenError(
            f"{out} holds files of its own and is no folder of qagen evaluations; choose another `out` {_ANOTHER}.",
            settings=("out",),
        )
