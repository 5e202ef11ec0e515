"""What a build says when its question-type mix changed on a run that kept questions before.

The outputs follow the mix asked for now: a type no longer asked for, or asked for fewer drafts,
has fewer questions in `dataset/`. Nothing is lost (the drafts and verdicts stay in the run, and
asking for the old mix again brings them back at no cost), but the kept questions that went are
said, by type, never dropped silently.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from qagen.config import BuildConfig
from qagen.generation.kept_quality import read_kept_types
from qagen.runs.rundir import RunDir


class MixChange(NamedTuple):
    """The mix the outputs were written with, the one asked for now, and what was kept before."""

    before: dict[str, int]
    now: dict[str, int]
    kept_before: dict[str, str]
    """The questions `dataset/` held, their types by id."""

    def left_out(self, kept_ids: Iterable[str]) -> str | None:
        """The sentence on the questions kept before that the outputs kept now (`kept_ids`) leave out;
        None when none was left out."""
        kept = set(kept_ids)
        gone = Counter(kind for item_id, kind in self.kept_before.items() if item_id not in kept)
        if not gone:
            return None
        total = sum(gone.values())
        by_type = ", ".join(f"{kind} {count}" for kind, count in sorted(gone.items()))
        return (
            f"The question types changed from {_mix(self.before)} to {_mix(self.now)}: {total} question"
            f"{'s' if total != 1 else ''} kept before {'are' if total != 1 else 'is'} left out of the dataset "
            f"({by_type}). Their drafts and verdicts stay in the run: asking for {_mix(self.before)} again brings "
            "them back, with no call paid twice."
        )


def mix_change(config: BuildConfig, run: RunDir) -> MixChange | None:
    """The change, when the run's outputs were written with another mix and kept questions; else None."""
    before = _written_mix(run)
    now = dict(config.question_types)
    if before is None or before == now:
        return None
    kept = read_kept_types(run)
    return MixChange(before, now, kept) if kept else None


def _written_mix(run: RunDir) -> dict[str, int] | None:
    """The shares `summary.json` was written with; None when there is none to read (a new run, or a
    summary that cannot be read: then nothing is known to compare, and the outputs are written anew)."""
    try:
        types = json.loads(run.summary_file.read_text(encoding="utf-8"))["question_types"]
        shares = {str(name): int(counts["share"]) for name, counts in types.items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return shares or None  # a summary of a qagen before question types: nothing to compare


def _mix(shares: Mapping[str, int]) -> str:
    return ",".join(f"{name}={share}" for name, share in shares.items())
