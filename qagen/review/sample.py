"""Which drafts people label: a sample that measures both errors of the critics.

False keeps hide among the kept drafts and false rejects among the rejected ones, so the sample is
stratified: half of it from the kept drafts, half from the rejected ones, and that half shared
equally among the criteria that rejected something (a draft two critics rejected counts for the
first one asked). Every stratum that has a draft gets at least one seat, so every criterion that
rejected anything is in the sample (given as many seats as strata); a stratum with fewer drafts
than its share gives the rest to the others (`allocate`). Drafts the critics did not decide (failed
calls, undecided, too long or duplicate questions) are not sampled: they say nothing about the
critics' agreement with people.

The sample is `RUN_DIR/review_sample.json` (ids in review order), made once per size and seed and
read back after, so every reviewer and every session labels the same drafts in the same order
(another size or seed draws a new sample; labels given already stay, kept by draft id).
The order is shuffled across strata, so a reviewer cannot tell kept from rejected by position.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from qagen.errors import ConfigError, QagenError
from qagen.review.run_drafts import RunDrafts, read_run_drafts
from qagen.runs.store import write_json_atomic

SAMPLE_FILE = "review_sample.json"
DEFAULT_SIZE = 150
"""Items to label by default: the minimum ARES asks for a statistically useful correction."""
KEPT = "kept"
_HALF = 0.5

SampleKind = Literal["drafts", "kept"]
"""Which sample of a run to label: `drafts`, this module's (kept and rejected drafts, to measure the
critics), or `kept`, a uniform random sample of the kept questions (`qagen.review.kept_sample`, to
estimate the share of them a reviewer keeps)."""


def rejected_stratum(criterion: str) -> str:
    """The stratum of the drafts a criterion rejected: `rejected:<criterion>`."""
    return f"rejected:{criterion}"


class ReviewSample(BaseModel):
    """`review_sample.json`: the drafts to label, in review order, and the strata they came from."""

    model_config = ConfigDict(frozen=True, extra="forbid", validate_by_name=True, serialize_by_alias=True)

    schema_version: Literal[1] = Field(default=1, alias="schema", description="The file format's version.")
    size: int = Field(description="The sample size asked for (fewer ids when the run has fewer drafts to review).")
    seed: int = Field(description="The seed the sample was drawn with.")
    ids: list[str] = Field(description="The draft ids to label, in review order.")
    strata: dict[str, list[str]] = Field(
        description="The sampled ids of each stratum (`kept`, `rejected:<criterion>`)."
    )
    available: dict[str, int] = Field(description="How many drafts of the run each stratum had to sample from.")

    def stratum_of(self, draft_id: str) -> str | None:
        return next((name for name, ids in self.strata.items() if draft_id in ids), None)


def review_sample(run_dir: Path, size: int = DEFAULT_SIZE, seed: int = 0) -> ReviewSample:
    """The drafts of `run_dir` to label (see the module), written to `RUN_DIR/review_sample.json`,
    or read from it when it was made with the same `size` and `seed`. Makes no call."""
    return stored_or_drawn(run_dir, size, seed, lambda: draw_sample(read_run_drafts(run_dir), size, seed))


def stored_or_drawn(directory: Path, size: int, seed: int, draw_new: Callable[[], ReviewSample]) -> ReviewSample:
    """`DIRECTORY/review_sample.json` when it was drawn with `size` and `seed`; else `draw_new()`, stored there."""
    if size < 1:
        raise ConfigError(f"`size` must be at least 1, got {size}.", settings=("size",))
    path = directory / SAMPLE_FILE
    stored = _stored(path)
    if stored is not None and stored.size == size and stored.seed == seed:
        return stored
    sample = draw_new()
    write_json_atomic(path, sample.model_dump(mode="json"))
    return sample


def draw_sample(drafts: RunDrafts, size: int, seed: int) -> ReviewSample:
    """The stratified sample of `drafts` (see the module), reproducible with `seed`."""
    pools = strata(drafts)
    if not pools:
        raise QagenError(
            f"{drafts.run.root} has no draft the critics kept or rejected yet, so there is nothing to review; "
            "finish the build first (`qagen build` with the same settings goes on where it stopped)."
        )
    return draw(pools, size, seed, half=KEPT)


def draw(pools: dict[str, list[str]], size: int, seed: int, *, half: str) -> ReviewSample:
    """`size` ids from the strata `pools` (`allocate` decides how many from each, `half` the stratum
    given half the seats), each stratum drawn with a generator of its own, in a shuffled order."""
    seats = allocate({name: len(ids) for name, ids in pools.items()}, size, half=half)
    chosen: dict[str, list[str]] = {}
    for name, ids in pools.items():
        # A generator of its own per stratum: one stratum's draw does not move another's.
        chosen[name] = random.Random(f"{seed}:{name}").sample(sorted(ids), seats[name])
    order = [item_id for ids in chosen.values() for item_id in ids]
    random.Random(seed).shuffle(order)
    position = {item_id: index for index, item_id in enumerate(order)}
    return ReviewSample(
        size=size,
        seed=seed,
        ids=order,
        strata={name: sorted(ids, key=position.__getitem__) for name, ids in chosen.items()},
        available={name: len(ids) for name, ids in pools.items()},
    )


def strata(drafts: RunDrafts) -> dict[str, list[str]]:
    """The reviewable drafts' ids by stratum (`kept` first, then the criteria in the order they are
    asked); strata with no draft are left out."""
    pools: dict[str, list[str]] = {KEPT: [], **{rejected_stratum(c): [] for c in drafts.asked()}}
    for row in drafts.rows:
        if row.status == "kept":
            pools[KEPT].append(row.id)
        elif row.status == "rejected" and (rejected := drafts.rejected_by(row)):
            pools[rejected_stratum(rejected[0])].append(row.id)
    return {name: ids for name, ids in pools.items() if ids}


def allocate(available: dict[str, int], size: int, *, half: str = KEPT) -> dict[str, int]:
    """Seats per stratum (`kept` and the rejected ones): one each first, in order; then one at a
    time to the stratum furthest below its share (highest `share / (seats + 1)`, the first on ties),
    never more than it has. The shares: half for the stratum `half` (`kept`), half shared equally
    among the others (the rejected ones) that still have items, so a criterion with few rejections
    leaves its seats to the other criteria, and to `kept` only once every rejected stratum is used up."""
    seats = dict.fromkeys(available, 0)
    left = min(size, sum(available.values()))
    for name in available:
        if left and available[name]:
            seats[name], left = 1, left - 1
    while left:
        open_ = [name for name in available if seats[name] < available[name]]
        others = [name for name in open_ if name != half]
        shares = {name: (_HALF if name == half else (1 - _HALF) / len(others)) for name in open_}
        best = max(open_, key=lambda name: shares[name] / (seats[name] + 1))
        seats[best] += 1
        left -= 1
    return seats


def stored_sample(directory: Path) -> ReviewSample | None:
    """The stratified review sample stored in `directory`; None when there is none."""
    return _stored(directory / SAMPLE_FILE)


def _stored(path: Path) -> ReviewSample | None:
    """The stored sample; None when there is none. One that cannot be read is made again (it is
    derived from the run alone, and the labels are kept by draft id, not by position)."""
    try:
        return ReviewSample.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, ValidationError):
        return None
