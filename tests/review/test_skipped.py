"""The critics the early stop skipped are asked for the sampled drafts only, announced first, once."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from qagen.errors import QagenError
from qagen.review.run_drafts import read_run_drafts
from qagen.review.sample import review_sample
from qagen.review.skipped import ask_skipped_critics
from tests.review.conftest import build_run


def _critic_requests(llm: Any) -> int:
    return sum(1 for entry in llm.log if entry["kind"] == "critique")


def test_skipped_critics_are_asked_for_the_sample_only_as_announced_and_once(
    llm: Any, corpus: Path, tmp_path: Path
) -> None:
    built_run = build_run(llm, corpus, tmp_path / "run")  # its own server: the test counts the critics' calls
    sample = review_sample(built_run, size=30, seed=0)
    before = read_run_drafts(built_run)
    missing = {draft_id: before.missing_scores(row) for draft_id in sample.ids if (row := before.get(draft_id))}
    wanted = sum(len(criteria) for criteria in missing.values())
    # The early stop left rejected drafts of the sample without some scores (and kept ones have all).
    assert wanted > 0
    assert all(before.get(i).status == "rejected" for i, criteria in missing.items() if criteria)  # type: ignore[union-attr]
    outside = sum(len(before.missing_scores(row)) for row in before.rows if row.id not in missing and row.question)
    assert outside > 0  # drafts outside the sample miss scores too: they must stay as they are

    requests = _critic_requests(llm)
    with pytest.raises(QagenError, match=rf"needs {wanted} critic calls .*`allow_calls=False`"):
        ask_skipped_critics(built_run, sample.ids, allow_calls=False)
    assert _critic_requests(llm) == requests  # refused: nothing sent

    said: list[tuple[str, int]] = []
    made = ask_skipped_critics(built_run, sample.ids, say=lambda message: said.append((message, _critic_requests(llm))))
    assert len(said) == 1
    message, requests_when_said = said[0]
    announced = int(re.match(r"asking (\d+) critic calls", message).group(1))  # type: ignore[union-attr]
    assert requests_when_said == requests  # said before the first call
    assert announced == made == wanted == _critic_requests(llm) - requests

    after = read_run_drafts(built_run)
    for draft_id in sample.ids:
        row = after.get(draft_id)
        assert row is not None and after.missing_scores(row) == [], draft_id
        assert row.status == before.get(draft_id).status  # type: ignore[union-attr]  # a rejection stays one
    assert (
        sum(len(after.missing_scores(row)) for row in after.rows if row.id not in missing and row.question) == outside
    )

    # Asked again: every score is stored, so nothing is said and nothing is sent.
    said.clear()
    assert ask_skipped_critics(built_run, sample.ids, say=lambda message: said.append((message, 0))) == 0
    assert said == [] and _critic_requests(llm) == requests + wanted
    assert ask_skipped_critics(built_run, sample.ids, allow_calls=False) == 0
