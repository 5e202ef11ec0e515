"""Whether a test-set spec that names nothing on disk is a local path (a typo) or a Hub dataset id.

`looks_local` is the rule (documented at it, and in docs/evaluating.md);
`did_you_mean` finds the existing path a typo was probably meant to be.
"""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path

__all__ = ["did_you_mean", "looks_local"]

# A Hub dataset id: `name` or `owner/name`, of letters, digits, `-`, `_` and `.` (the Hub's rule).
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?")
# File types a test set is read from (or a user may have meant): never the name of a Hub dataset.
_FILE_SUFFIXES = (".jsonl", ".csv", ".json", ".parquet", ".arrow", ".txt")


def looks_local(spec: str) -> bool:
    """Whether `spec`, which names nothing on disk, is meant as a local path rather than a Hub id.

    The rule: it starts with `./`, `../`, `/` or `~` (or is `.`/`..`), has a drive letter or a
    backslash, has more than one `/` (a Hub id is `name` or `owner/name`), ends in a data-file
    suffix (`.jsonl`, `.csv`...), is no valid Hub id at all (a space, a colon), its first part
    is a folder that exists here (`runs/datset` when `runs/` exists), or it is a bare name close to
    the name of something here (`bse` beside `base/`: `did_you_mean` finds it). Anything else
    (`owner/name`, `name`) goes to the Hub; to read a Hub dataset whose owner, or bare name, is also
    (nearly) the name of something in the current directory, run from another directory.
    """
    text = spec.strip()
    if text.startswith(("~", "/")) or "\\" in text or (os.sep != "/" and os.sep in text):
        return True
    # `.`, `./x`, `../x`, `C:/x`, a space...: no Hub id starts with a dot or has a colon or a space.
    if not _HUB_ID.fullmatch(text) or text.count("/") > 1 or text.lower().endswith(_FILE_SUFFIXES):
        return True
    if "/" in text:
        return Path(text.split("/", 1)[0]).is_dir()
    return did_you_mean(text) != ""


def did_you_mean(spec: str) -> str:
    """A hint naming an existing path that one part of `spec` is a typo of, or "" when there is none."""
    parts = Path(spec).expanduser().parts
    for position in range(len(parts)):
        here = Path(*parts[: position + 1])
        if here.exists():
            continue
        parent = Path(*parts[:position]) if position else Path(".")
        try:
            siblings = [entry.name for entry in parent.iterdir()] if parent.is_dir() else []
        except OSError:
            return ""
        for name in difflib.get_close_matches(parts[position], siblings, n=3, cutoff=0.75):
            candidate = Path(*parts[:position], name, *parts[position + 1 :])
            if candidate.exists():
                shown = str(candidate)
                if spec.startswith("./") and not shown.startswith("."):
                    shown = f"./{shown}"
                return f" (did you mean {shown}?)"
        return ""
    return ""
