"""The review sample: stratified over kept drafts and each criterion's rejections, reproducible."""

from __future__ import annotations

import json
from pathlib import Path

from qagen.review.run_drafts import read_run_drafts
from qagen.review.sample import KEPT, SAMPLE_FILE, allocate, rejected_stratum, review_sample


def test_the_sample_holds_kept_drafts_and_the_rejections_of_every_criterion(built_run: Path) -> None:
    drafts = read_run_drafts(built_run)
    rejecting = {
        drafts.rejected_by(row)[0] for row in drafts.rows if row.status == "rejected" and drafts.rejected_by(row)
    }
    assert rejecting == {"groundedness", "relevance", "standalone"}  # the run has rejections of each

    sample = review_sample(built_run, size=24, seed=3)
    assert len(sample.ids) == len(set(sample.ids)) == 24
    assert set(sample.strata) == {KEPT, *(rejected_stratum(c) for c in rejecting)}
    for name, ids in sample.strata.items():
        assert ids, name
        for draft_id in ids:
            row = drafts.get(draft_id)
            assert row is not None
            if name == KEPT:
                assert row.status == "kept"
            else:
                assert row.status == "rejected" and rejected_stratum(drafts.rejected_by(row)[0]) == name
    # Half kept, half rejected, shared equally among the three criteria (each had at least 4).
    assert len(sample.strata[KEPT]) == 12
    assert sorted(len(ids) for name, ids in sample.strata.items() if name != KEPT) == [4, 4, 4]
    assert sorted(sample.ids) == sorted(i for ids in sample.strata.values() for i in ids)


def test_the_sample_is_reproducible_and_read_back(built_run: Path) -> None:
    first = review_sample(built_run, size=20, seed=1)
    stored = json.loads((built_run / SAMPLE_FILE).read_text())
    assert stored["ids"] == first.ids and stored["seed"] == 1 and stored["size"] == 20
    # Read back: an edited order in the file is what comes back (nothing is drawn again).
    stored["ids"] = list(reversed(stored["ids"]))
    (built_run / SAMPLE_FILE).write_text(json.dumps(stored))
    assert review_sample(built_run, size=20, seed=1).ids == stored["ids"]
    # Drawn again (same seed, same draw), and another seed draws another sample.
    (built_run / SAMPLE_FILE).unlink()
    assert review_sample(built_run, size=20, seed=1).ids == first.ids
    assert review_sample(built_run, size=20, seed=2).ids != first.ids


def test_allocation_respects_capacities_and_gives_every_stratum_a_seat() -> None:
    assert allocate({"kept": 100, "a": 100, "b": 100}, 8) == {"kept": 4, "a": 2, "b": 2}
    # A small stratum gives its share to the others; the total is what was asked.
    assert allocate({"kept": 100, "a": 1, "b": 100}, 10) == {"kept": 5, "a": 1, "b": 4}
    # Fewer seats than strata: the first strata in order get one each.
    assert allocate({"kept": 5, "a": 5, "b": 5}, 2) == {"kept": 1, "a": 1, "b": 0}
    # Rejected strata used up: the rest go to kept.
    assert allocate({"kept": 100, "a": 1, "b": 2}, 10) == {"kept": 7, "a": 1, "b": 2}
    # More seats than drafts: all of them.
    assert allocate({"kept": 2, "a": 1, "b": 0}, 50) == {"kept": 2, "a": 1, "b": 0}
