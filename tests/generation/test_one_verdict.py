"""One verdict, decided once and shown as decided (issue 39): against a stand-in whose written yes/no and
token probabilities disagree for about two thirds of the `supported` verdicts, every view of the run (rows,
review sample, agreement, card) shows the decision the build made, never the written word beside it.

The expected values are computed here from `critiques.jsonl` and the cut, not by the product's vetting."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from datasets import load_from_disk

from qagen.cli.app import main
from qagen.publish.card import CardContent, make_card, public_summary
from qagen.review.agreement import KEEP, measure_agreement
from qagen.review.agreement_text import agreement_table, card_section
from qagen.review.kept_sample import kept_sample
from qagen.review.labels import CriterionLabel, Label, LabelStore
from qagen.review.sample import SAMPLE_FILE, review_sample

CUT = 0.7  # `supported`'s default cut on P(yes)


@pytest.fixture(scope="module")
def module_llm() -> Iterator[Any]:
    from standins.llm.server import StandInLLM

    with StandInLLM() as server:
        yield server


@pytest.fixture(scope="module")
def corpus_module(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from standins.corpus import write_corpus

    return write_corpus(tmp_path_factory.mktemp("corpus") / "corpus")


def _build(llm: Any, corpus: Path, out: Path, *extra: str) -> str:
    args = ["build", str(corpus), "--out", str(out), "--generator-model", "openai:stand-in", "--base-url", llm.base_url]
    args += ["-n", "36", "--chunk-size", "400", "--chunk-overlap", "40", "--seed", "3", *extra]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def _supported(run: Path) -> dict[str, dict[str, Any]]:
    """The `supported` critique of each draft, from the records themselves."""
    found: dict[str, dict[str, Any]] = {}
    for line in (run / "critiques.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["criterion"] == "supported" and record["failure"] is None:
            found[record["draft_id"]] = record
    return found


@pytest.fixture(scope="module")
def disagreeing_run(tmp_path_factory: pytest.TempPathFactory, corpus_module: Path, module_llm: Any) -> Path:
    """A default build whose `supported` verdicts are written Yes and No alike, two thirds of each with
    token probabilities that say the opposite."""
    module_llm.configure(logprobs=True, pass_rate={"supported": 0.5}, doubtful_yes_rate=0.67, doubtful_no_rate=0.67)
    out = tmp_path_factory.mktemp("disagree") / "run"
    _build(module_llm, corpus_module, out)
    return out


def test_every_row_carries_the_p_yes_it_was_decided_with(disagreeing_run: Path) -> None:
    critiques = _supported(disagreeing_run)
    rows = {row["id"]: row for row in load_from_disk(str(disagreeing_run / "candidates"))}
    disagreeing = 0
    for draft_id, critique in critiques.items():
        row = rows[draft_id]
        verdict = next(entry for entry in row["extra_critics"] if entry["name"] == "supported")
        p_yes = critique["probability"]
        assert (verdict["measured_as"], verdict["measurement"], verdict["cut"]) == ("p_yes", p_yes, CUT)
        assert verdict["passed"] == (p_yes >= CUT) and verdict["score"] == critique["score"]
        disagreeing += (critique["score"] == 5) != (p_yes >= CUT)
        if not verdict["passed"]:
            assert row["status"] == "rejected" and f"supported P(yes)={p_yes:.2f}<0.70" in row["reason"]
    # About two thirds of the verdicts say one thing in words and another in probabilities.
    assert 0.45 <= disagreeing / len(critiques) <= 0.85, (disagreeing, len(critiques))
    kept = load_from_disk(str(disagreeing_run / "dataset"))
    assert all(
        entry["passed"] and entry["measurement"] >= CUT
        for row in kept
        for entry in row["extra_critics"]
        if entry["name"] == "supported"
    )


def test_the_default_review_sample_holds_every_draft_supported_rejected(disagreeing_run: Path) -> None:
    critiques = _supported(disagreeing_run)
    rejected = {draft_id for draft_id, critique in critiques.items() if critique["probability"] < CUT}
    written_yes = {draft_id for draft_id in rejected if critiques[draft_id]["score"] == 5}
    assert rejected and written_yes  # rejections the written word alone would have kept
    sample = review_sample(disagreeing_run)
    assert rejected <= set(sample.ids)
    assert set(sample.strata["rejected:supported"]) == rejected


def _label(store: LabelStore, item_id: str, *, keep: bool, supported: bool | None, reviewer: str = "ann") -> None:
    criteria = {} if supported is None else {"supported": CriterionLabel(passed=supported)}
    store.append(Label(kind="draft", item_id=item_id, reviewer=reviewer, criteria=criteria, keep=keep, via="page"))


def test_labels_equal_to_the_builds_own_decisions_agree_fully(disagreeing_run: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    _copy_run(disagreeing_run, run)
    critiques = _supported(run)
    rows = {row["id"]: row for row in load_from_disk(str(run / "candidates"))}
    store = LabelStore(run)
    for draft_id in review_sample(run).ids:
        critique = critiques.get(draft_id)
        passed = None if critique is None else critique["probability"] >= CUT
        _label(store, draft_id, keep=rows[draft_id]["status"] == "kept", supported=passed)
    report = measure_agreement(run)
    for name in ("supported", KEEP):
        measure = report.measures[name]
        assert (measure.agreement, measure.kappa) == (1.0, 1.0), (name, measure)
        assert measure.confusion["false_pass"] == measure.confusion["false_fail"] == 0
    assert report.drawn == {"stratified": len(review_sample(run).ids)}


def test_kept_sample_labels_are_not_reported_as_agreement(disagreeing_run: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    _copy_run(disagreeing_run, run)
    (run / SAMPLE_FILE).unlink(missing_ok=True)  # labels of the kept sample alone
    store = LabelStore(run)
    ids = kept_sample(run, size=20, seed=0).ids
    for index, draft_id in enumerate(ids):
        _label(store, draft_id, keep=index % 3 != 0, supported=index % 4 != 0)
    report = measure_agreement(run)
    assert report.drawn == {"kept": len(ids)}
    for measure in report.measures.values():
        assert measure.kappa is None and measure.unmeasurable is not None  # one class: every draft was kept
    text = agreement_table(report)
    assert "these labels cannot measure the checks" in text and "match your reviewers" not in text
    assert card_section(run) is None


def test_the_card_names_the_p_yes_cut_and_no_critic_that_was_not_asked(disagreeing_run: Path) -> None:
    summary = json.loads((disagreeing_run / "summary.json").read_text(encoding="utf-8"))
    card = make_card(
        CardContent(
            repo_id="alice/qa",
            summary=public_summary(summary),
            kept_rows=summary["funnel"]["kept"],
            candidate_rows=summary["funnel"]["sampled"],
            languages=["en"],
            license="unknown",
            prompts=[],
        )
    )
    body = str(card).split("---", 2)[2]
    assert "P(yes) >= 0.70" in body and "**supported**" in body
    for not_asked in ("groundedness", "relevance", "standalone", "audience", "1 to 5", "thresholds ("):
        assert not_asked not in body.split("## Prompts")[0], not_asked
    profile = summary["profile"]["checks_measured"]
    assert set(profile) == {"supported"} and profile["supported"]["cut"] == CUT


@pytest.mark.parametrize("kind", ["nan", "positive"])
def test_impossible_log_probabilities_are_no_measurement_and_are_said(
    kind: str, llm: Any, corpus: Path, tmp_path: Path
) -> None:
    llm.configure(logprobs=True, pass_rate={"supported": 0.5}, impossible_logprobs=kind)
    out = tmp_path / "run"
    said = _build(llm, corpus, out)
    critiques = _supported(out)
    assert critiques and all(record["probability"] is None for record in critiques.values())
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["funnel"]["decided_as_written"] == {"supported": len(critiques)}
    assert f"supported: {len(critiques)} verdicts came with no usable token probabilities" in said
    rows = list(load_from_disk(str(out / "candidates")))
    for row in rows:
        for entry in row["extra_critics"]:
            if entry["passed"] is not None:
                # The written word decided: a yes passes, a no does not; no number stands for it.
                assert entry["measurement"] is None and entry["measured_as"] == "written"
                assert entry["passed"] == (entry["score"] == 5)


def _copy_run(source: Path, target: Path) -> None:
    """A run of its own for a test that writes labels (the module's run stays unlabelled)."""
    shutil.copytree(source, target)
