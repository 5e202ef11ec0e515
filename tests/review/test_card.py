"""The dataset card shows the critics' agreement with the run's reviewers: counts and kappas only."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from qagen.publish.card import CardContent, make_card
from qagen.publish.local_run import load_run
from tests.review.conftest import invoke

NOTE = "PRIVATE-NOTE-7c1e"
REVIEWER = "reviewer-name-4f2a"


def _card(run: Path) -> str:
    local = load_run(run)
    content = CardContent(
        repo_id="me/set", summary=local.summary, kept_rows=local.kept.num_rows,
        candidate_rows=local.candidates.num_rows, languages=[], license="unknown", prompts=[],
        agreement=local.agreement,
    )  # fmt: skip
    return str(make_card(content))


def test_the_card_has_the_agreement_table_when_labels_exist_and_never_their_text(
    built_run: Path, tmp_path: Path
) -> None:
    assert "Agreement with human reviewers" not in _card(built_run)  # no labels yet: no section

    sheet = tmp_path / "labels.csv"
    assert invoke("review", built_run, "--export", sheet, "--size", "10").exit_code == 0
    with sheet.open(encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.DictReader(handle))
    for number, row in enumerate(rows):
        row.update(relevance="pass" if number % 3 else "fail", keep="yes" if number % 2 else "no")
        row.update(note=f"{NOTE} {row['question']}", reviewer=REVIEWER)
    with sheet.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    assert invoke("review", built_run, "--import", sheet).exit_code == 0

    card = _card(built_run)
    report = json.loads(invoke("agreement", built_run, "--json").output)
    assert "## Agreement with human reviewers" in card and "1 reviewer labelled 10 drafts" in card
    for name, shown in (("relevance", "relevance"), ("keep", "keep decision")):
        measure = report["measures"][name]
        kappa = "-" if measure["kappa"] is None else f"{measure['kappa']:.2f}"
        assert f"| {shown} | {measure['n']} | {measure['agreement']:.2f} | {kappa}" in card
    assert NOTE not in card and REVIEWER not in card
    assert not any(row["question"] in card for row in rows)
