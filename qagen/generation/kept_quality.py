"""The share of good kept questions (`summary.json`'s `kept_quality`) as far as a build knows it: which
questions it kept (their fingerprint), the estimate carried over a rewrite of the outputs, marked stale
when the kept questions changed, and the sentence that states it.

The estimate itself comes from people's labels (`qagen.review.estimate`); a build that rewrites
`summary.json` (resized, re-filtered) only carries it over.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from qagen.generation.write import DATA_FILE
from qagen.question_types import DEFAULT_TYPE
from qagen.records import Certified, KeptQuality
from qagen.runs.rundir import RunDir

HEADLINE = "estimated share of kept questions a reviewer keeps"


def kept_fingerprint(ids: Iterable[str]) -> str:
    """The sha256 of the sorted ids, one a line: which questions a set holds, whatever their order."""
    return hashlib.sha256("\n".join(sorted(ids)).encode("utf-8")).hexdigest()


def read_kept_ids(run: RunDir) -> list[str]:
    """The ids of the run's kept questions, in `dataset/` order; none when it has no `dataset/` yet."""
    return list(read_kept_types(run))


def read_kept_types(run: RunDir) -> dict[str, str]:
    """The run's kept questions' types by id, in `dataset/` order (a set of factoids alone has no
    `question_type` column: each is a `DEFAULT_TYPE`); none when it has no `dataset/` yet.

    Read from the one Arrow file `dataset/` holds (memory-mapped, those two columns only), not through
    `datasets`, which cannot load back a `dataset/` of no row and writes cache files beside it.
    """
    import pyarrow as pa

    path = run.dataset_dir / DATA_FILE
    if not path.is_file():
        return {}
    with pa.memory_map(str(path)) as source:
        table = pa.ipc.open_stream(source).read_all()
    ids = [str(item_id) for item_id in table.column("id").to_pylist()]
    if "question_type" not in table.column_names:
        return dict.fromkeys(ids, DEFAULT_TYPE)
    return {item_id: str(kind) for item_id, kind in zip(ids, table.column("question_type").to_pylist(), strict=True)}


def stored_kept_quality(summary_file: Path) -> KeptQuality:
    """The estimate a run's `summary.json` holds; not estimated when it holds none it can read (the
    labels are still there: the next label saved, or `qagen profile RUN`, estimates again)."""
    try:
        summary = json.loads(summary_file.read_text(encoding="utf-8"))
        return KeptQuality.model_validate(summary.get("kept_quality") or {})
    except (OSError, ValueError, AttributeError, ValidationError):
        return KeptQuality()


def carried_over(quality: KeptQuality, kept_ids: Callable[[], Iterable[str]]) -> KeptQuality:
    """`quality` for a run whose kept questions are now those `kept_ids` gives: stale when they are no
    longer the ones its sample was drawn from, fresh again when a re-filter brought those back.

    `kept_ids` is called only when the estimate has a sample to compare with: a build of 100,000
    drafts would otherwise hold all its kept ids to compare with nothing."""
    if quality.kept_fingerprint is None:
        return quality
    return quality.model_copy(update={"stale": quality.kept_fingerprint != kept_fingerprint(kept_ids())})


def kept_quality_of(summary: Mapping[str, Any]) -> KeptQuality:
    """The estimate of a `summary.json` as read into a mapping; not estimated for a summary without one
    (written before estimates existed)."""
    return KeptQuality.model_validate(summary.get("kept_quality") or {})


def kept_quality_sentence(quality: KeptQuality) -> str:
    """What the estimate says, in one sentence (what `qagen profile RUN`, the dataset card and the review
    command print; the command line adds what to do next)."""
    if quality.status == "not_estimated":
        return f"{HEADLINE}: not estimated (no sample of the kept questions is labelled)."
    of_kept = f"of {quality.kept} kept questions"
    if quality.counted_whole:
        said = (
            f"{HEADLINE}: {quality.kept_by_reviewers} of all {quality.kept} "
            f"({quality.kept_by_reviewers / quality.labels:.2f}), counted: every kept question is labelled (fewer "
            f"than the {quality.min_labels} an estimate takes, so no interval, and none needed)"
        )
    elif quality.status == "too_few":
        said = (
            f"{HEADLINE}: too few labels to estimate it ({quality.labels} {of_kept}; "
            f"at least {quality.min_labels} are needed)"
        )
    else:
        said = (
            f"{HEADLINE}: {quality.share:.2f} [{quality.low:.2f}, {quality.high:.2f}] "
            f"({quality.confidence:.0%}), from {quality.labels} labels {of_kept} (Wilson score interval)"
        )
    if quality.labels_not_counted:
        said += (
            f"; {quality.labels_not_counted} later label{'s' if quality.labels_not_counted != 1 else ''} of the "
            "sample not counted, as they follow a question not labelled"
        )
    if quality.stale:
        said += "; stale: the kept questions changed since the sample was drawn (the run was resized or re-filtered)"
    return said + "."


def stored_certified(summary_file: Path) -> Certified | None:
    """What a run's `summary.json` says was certified; None when it says nothing it can read."""
    try:
        return certified_of(json.loads(summary_file.read_text(encoding="utf-8")))
    except (OSError, ValueError, AttributeError, ValidationError):
        return None


def certified_of(summary: Mapping[str, Any]) -> Certified | None:
    """What a `summary.json`, read into a mapping, says was certified; None when no precision was asked."""
    certified = summary.get("certified")
    return Certified.model_validate(certified) if certified else None


def certified_sentence(certified: Certified) -> str:
    """What certified acceptance (`summary.json`'s `certified`) says, in one sentence: the summary, the
    table, `qagen profile` and the card print it beside the estimate."""
    level = f"{certified.precision:.0%} with {certified.confidence:.0%} confidence"
    if certified.status == "certified":
        return (
            f"certified: at least {certified.precision:.0%} of kept questions are ones a reviewer keeps, with "
            f"{certified.confidence:.0%} confidence, from {certified.labels} labels (threshold "
            f"{certified.threshold:.3f} on {certified.score})."
        )
    if certified.status == "stale":
        return (
            f"certified: nothing claimed at {level}: the labels are stale, from a sample of other kept questions "
            "than these settings keep; label a new sample of the kept questions."
        )
    if certified.upper_bound is None:
        return (
            f"certified: nothing claimed at {level}: {certified.labels} labels of the kept sample are too few; "
            f"{certified.more_labels} more, if they hold no error, would suffice."
        )
    return (
        f"certified: nothing claimed at {level}: of the {certified.labels_above} labelled questions with the highest "
        f"{certified.score}, {certified.errors_above} are not kept by a reviewer; {certified.more_labels} more labels "
        "of the sample there, if they hold no error, would suffice."
    )
