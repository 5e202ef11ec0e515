"""Which kept questions people label to estimate the share of good ones: a uniform random sample.

The kept questions (the ids in `dataset/`) are put in a random order: by the sha256 of the seed and
the id, a random permutation for each seed in which a question's place among the others does not
depend on which others are kept. The sample is the beginning of that order, so any beginning of it
is a uniform random sample of the kept questions (the labels counted are one: `qagen.review.estimate`),
a larger sample only adds to a smaller one, and a re-filtered run's new sample starts with mostly the
same questions, so the labels given already count again.

The sample is `RUN_DIR/review_kept_sample.json`, with the fingerprint of the kept set it was drawn
from and what that set was kept from (`KeptFrom`: the drafts asked of each type, the target, a certified
threshold): made once per size, seed and kept set and read back after, so every reviewer and every session
labels the same questions in the same order, and certification can filter those drafts again to check
that its labels are of the set the settings keep there, however far the run has grown since
(`qagen.review.certify`). Makes no call: kept questions have every critic's verdict.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from qagen.errors import QagenError
from qagen.generation.kept_quality import kept_fingerprint, read_kept_ids
from qagen.generation.vetting import CERTIFIED_CHECK
from qagen.records import BuildSummary
from qagen.review.eval_answers import is_eval_dir
from qagen.runs.rundir import RunDir
from qagen.runs.store import write_json_atomic

KEPT_SAMPLE_FILE = "review_kept_sample.json"


class KeptFrom(BaseModel):
    """What a kept set was filtered from, as the run's `summary.json` said when a sample was drawn from it: the
    same settings filtering these drafts again keep the same set (the run may have drafted more since)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    drafts: dict[str, int | None] = Field(
        description="The drafts asked of each question type (`TypeFunnel.requested`; None: one per chunk): each "
        "type's sample is the beginning of one fixed order, so these name the drafts whatever came after."
    )
    target: int | None = Field(description="The target the kept questions were chosen to (`over_target`), or None.")
    threshold: float | None = Field(
        description="The certified threshold the kept set was held to (`summary.json`'s `certified`), or None."
    )
    cut_on: str = Field(
        default=CERTIFIED_CHECK,
        description="The score that threshold held (`Certified.cut_on`): the check's P(yes), or the combined score.",
    )


class KeptSample(BaseModel):
    """`review_kept_sample.json`: the kept questions to label, in review order, and the set they came from."""

    model_config = ConfigDict(frozen=True, extra="forbid", validate_by_name=True, serialize_by_alias=True)

    schema_version: Literal[1] = Field(default=1, alias="schema", description="The file format's version.")
    size: int = Field(description="The sample size asked for (fewer ids when the run kept fewer questions).")
    seed: int = Field(description="The seed of the order.")
    ids: list[str] = Field(description="The kept questions' ids to label, in review order.")
    kept: int = Field(description="The kept questions the sample was drawn from.")
    kept_fingerprint: str = Field(description="Their fingerprint (`kept_fingerprint`): the estimate's staleness check.")
    kept_from: KeptFrom | None = Field(
        default=None,
        description="What they were kept from (`KeptFrom`); None: the run's summary did not say (or an older file).",
    )


def random_order(ids: list[str], seed: int) -> list[str]:
    """`ids` in the seed's random order (see the module)."""
    return sorted(ids, key=lambda item_id: hashlib.sha256(f"{seed}:{item_id}".encode()).hexdigest())


def kept_sample(run_dir: Path, size: int, seed: int) -> KeptSample:
    """The kept questions of `run_dir` to label (see the module), written to `review_kept_sample.json`,
    or read from it when it was drawn with this size and seed from the kept questions the run holds now."""
    if is_eval_dir(run_dir):
        raise QagenError(
            f"{run_dir} is an evaluation: it has answers, not kept questions; give a build's run directory to "
            "label a sample of its kept questions."
        )
    run = RunDir(run_dir)
    run.require()
    ids = read_kept_ids(run)
    if not ids:
        raise QagenError(
            f"{run_dir} has no kept question to sample: finish the build first (`qagen build` with the same settings "
            "goes on where it stopped), or keep some with lower thresholds (`qagen stage filter`, no LLM call)."
        )
    fingerprint = kept_fingerprint(ids)
    stored = stored_kept_sample(run_dir)
    if stored is not None and (stored.size, stored.seed, stored.kept_fingerprint) == (size, seed, fingerprint):
        return stored
    sample = KeptSample(
        size=size,
        seed=seed,
        ids=random_order(ids, seed)[:size],
        kept=len(ids),
        kept_fingerprint=fingerprint,
        kept_from=kept_from(run),
    )
    write_json_atomic(run_dir / KEPT_SAMPLE_FILE, sample.model_dump(mode="json"))
    return sample


def kept_from(run: RunDir) -> KeptFrom | None:
    """What the run's kept questions were filtered from, as its `summary.json` says (written with `dataset/`);
    None when it cannot be read or names no question type."""
    try:
        summary = BuildSummary.model_validate_json(run.summary_file.read_bytes())
    except (OSError, ValueError):
        return None
    if not summary.question_types:
        return None
    certified = summary.certified
    return KeptFrom(
        drafts={name: counts.requested for name, counts in summary.question_types.items()},
        target=summary.target.target if summary.target is not None else None,
        threshold=certified.threshold if certified is not None and certified.status == "certified" else None,
        cut_on=certified.cut_on if certified is not None else CERTIFIED_CHECK,
    )


def stored_kept_sample(run_dir: Path) -> KeptSample | None:
    """The stored sample; None when there is none. One that cannot be read counts as none: drawing it
    again with the same seed gives the same questions, and the labels are kept by question id."""
    try:
        return KeptSample.model_validate(json.loads((run_dir / KEPT_SAMPLE_FILE).read_text(encoding="utf-8")))
    except (OSError, ValueError, ValidationError):
        return None
