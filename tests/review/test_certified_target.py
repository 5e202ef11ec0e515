"""A build to a target size held to a certified threshold (issue 40, must-show 1's `--target 40 --precision 0.9`),
on the stand-in with a hidden truth: the user builds, a reviewer labels the kept sample exactly from the truth,
and the build runs again with `--target` and `--precision`. The rounds count a draft only when it passes the
threshold the labels certify; growing the run past the labelled drafts leaves the labels as they were."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from datasets import load_from_disk

from qagen.generation import finalize
from qagen.generation.vetting import certified_config
from qagen.review.kept_sample import KEPT_SAMPLE_FILE
from qagen.review.run_drafts import read_run_drafts
from qagen.runs.rundir import RunDir
from tests.review.test_certified_build import (
    DRAFTS,
    _build,
    _card,
    _invoke,
    _label_from_truth,
    _share_good,
    _summary,
)

SEED = 1


@pytest.fixture(scope="module")
def built(truth_llm: Any, truth_corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The user's first build: 200 drafts, no target, nothing labelled yet (each test labels a copy)."""
    run = tmp_path_factory.mktemp("built") / "run"
    _build(truth_llm, truth_corpus, run, SEED)
    return run


def _labelled(built: Path, tmp_path: Path, labels: int) -> Path:
    run = tmp_path / "run"
    shutil.copytree(built, run)
    _label_from_truth(run, labels)
    return run


def _to_target(llm: Any, corpus: Path, run: Path, target: int, *extra: Any) -> str:
    said = _invoke(
        "build", corpus, "--out", run, "--generator-model", "openai:stand-in", "--base-url", llm.base_url,
        "--target", target, "--chunk-size", 400, "--chunk-overlap", 40, "--seed", SEED, "--dedup-embeddings", "none",
        "-q", "--precision", "0.9", *extra,
    )  # fmt: skip
    return " ".join(said.split())


def _kept_ids(run: Path) -> set[str]:
    return {row["id"] for row in load_from_disk(str(run / "dataset"))}


def _passing(run: Path, threshold: float | None) -> set[str]:
    """The drafts of the run's sample that pass its settings' cuts, held to `threshold` too when given: decided
    by the vetting with `certified_config`, as the build holds them."""
    config = RunDir(run).stored_config()
    if threshold is not None:
        config = certified_config(config, threshold)
    return {row.id for row in read_run_drafts(run, config).rows if row.status == "kept"}


def _writes(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The dataset folders the build writes, one entry a write."""
    written: list[Path] = []
    save = finalize.save_outputs

    def counting(rows: Any, dataset_dir: Path, *args: Any, **kwargs: Any) -> Any:
        written.append(dataset_dir)
        return save(rows, dataset_dir, *args, **kwargs)

    monkeypatch.setattr(finalize, "save_outputs", counting)
    return written


def test_80_labels_then_a_target_of_40_keeps_40_that_pass_the_certified_threshold(
    truth_llm: Any, truth_corpus: Path, built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = _labelled(built, tmp_path, 80)
    calls = len(truth_llm.log)
    written = _writes(monkeypatch)
    said = _to_target(truth_llm, truth_corpus, run, 40)
    summary = _summary(run)
    certified, target = summary.certified, summary.target
    assert certified is not None and certified.status == "certified", said
    assert certified.labels == 80 and certified.threshold is not None
    assert target is not None and target.reached and summary.funnel.kept == 40
    kept = _kept_ids(run)
    assert len(kept) == 40
    # Every kept question passes the certified threshold, and it was what counted: some drafts passed the
    # checks' own cuts and not the threshold.
    at_threshold = _passing(run, certified.threshold)
    assert kept <= at_threshold
    assert len(_passing(run, None) - at_threshold) > 0
    share, _ = _share_good(run)
    print(f"target 40 at the certified threshold {certified.threshold:.3f}: {share:.2f} good")
    assert share >= 0.85
    # The 200 drafts of the first build were enough: no call, and the outputs written once.
    assert len(truth_llm.log) == calls
    assert written == [run / "dataset"]
    claim = f"threshold {certified.threshold:.3f} on supported P(yes)"
    assert f"counted at the certified threshold ({certified.threshold:.3f} on supported P(yes)))" in said
    said_certified = "certified at least 90% of kept questions are ones a reviewer keeps, with 90% confidence"
    assert f"{said_certified}, from 80 labels ({claim})." in said
    card = _card(run)
    assert f"counted at the certified threshold ({certified.threshold:.3f} on supported P(yes))" in card
    assert "the certificate covers them as draws of that same process" in card


def test_a_run_grown_past_its_labelled_drafts_keeps_its_certificate(
    truth_llm: Any, truth_corpus: Path, built: Path, tmp_path: Path
) -> None:
    run = _labelled(built, tmp_path, 80)
    kept_from = json.loads((run / KEPT_SAMPLE_FILE).read_text(encoding="utf-8"))["kept_from"]
    assert kept_from == {"drafts": {"factoid": DRAFTS}, "target": None, "threshold": None, "cut_on": "supported"}
    calls = len(truth_llm.log)
    said = _to_target(truth_llm, truth_corpus, run, 90)
    summary = _summary(run)
    certified, target = summary.certified, summary.target
    assert target is not None and target.reached and target.drafts > DRAFTS, said
    assert len(truth_llm.log) > calls  # it drafted past the labelled drafts' 200
    # The kept set changed, the labels did not go stale: they are of the first 200 drafts, filtered alike.
    assert certified is not None and certified.status == "certified" and certified.labels == 80, said
    assert _kept_ids(run) <= _passing(run, certified.threshold)
    assert _share_good(run)[0] >= 0.85
    # The estimate beside it reads the labelled questions the grown set holds.
    assert summary.kept_quality.stale is False and 0 < summary.kept_quality.labels <= certified.labels_above
    # Again: nothing to do, and the same certificate; re-filtered, the same.
    calls = len(truth_llm.log)
    again = _to_target(truth_llm, truth_corpus, run, 90)
    assert "nothing changed: dataset is up to date" in again and len(truth_llm.log) == calls
    assert _summary(run).certified == certified
    refiltered = " ".join(_invoke("stage", "filter", run, "--precision", "0.9").split())
    assert _summary(run).certified == certified and len(truth_llm.log) == calls, refiltered
    assert _summary(run).funnel.kept == 90


def test_a_certified_target_short_of_drafts_names_the_threshold(
    truth_llm: Any, truth_corpus: Path, built: Path, tmp_path: Path
) -> None:
    run = _labelled(built, tmp_path, 80)
    said = _to_target(truth_llm, truth_corpus, run, 40, "--max-drafts", 50)
    summary = _summary(run)
    certified, target = summary.certified, summary.target
    assert certified is not None and certified.threshold is not None
    assert target is not None and not target.reached
    assert (
        f"short of the target: kept {target.kept} of the 40 questions asked for that pass the certified threshold "
        f"({certified.threshold:.3f} on supported P(yes)) from 50 drafts, the draft budget (--max-drafts 50)"
    ) in said


def test_8_labels_claim_nothing_and_reach_the_target_at_the_checks_own_cuts(
    truth_llm: Any, truth_corpus: Path, built: Path, tmp_path: Path
) -> None:
    run = _labelled(built, tmp_path, 8)
    said = _to_target(truth_llm, truth_corpus, run, 40)
    summary = _summary(run)
    certified, target = summary.certified, summary.target
    assert certified is not None and (certified.status, certified.threshold, certified.labels) == ("too_few", None, 8)
    assert target is not None and target.reached and summary.funnel.kept == 40
    assert _kept_ids(run) <= _passing(run, None)
    nothing = (
        f"nothing claimed at 90% with 90% confidence: 8 labels of the kept sample are too few; "
        f"{certified.more_labels} more, if they hold no error, would suffice."
    )
    assert said.count(nothing) == 1  # said once, not once a round
    assert "counted at the checks' own cuts (nothing certified))" in said


def test_a_dry_run_sizes_the_rounds_at_the_certified_threshold(
    truth_llm: Any, truth_corpus: Path, built: Path, tmp_path: Path
) -> None:
    """At the checks' own cuts the 200 drafts made hold 90 passing ones; at the certified threshold they do not."""
    run = _labelled(built, tmp_path, 80)
    calls = len(truth_llm.log)
    plain = _invoke(
        "build", truth_corpus, "--out", run, "--generator-model", "openai:stand-in", "--base-url", truth_llm.base_url,
        "--target", 90, "--chunk-size", 400, "--chunk-overlap", 40, "--seed", SEED, "--dedup-embeddings", "none", "-q",
        "--dry-run",
    )  # fmt: skip
    certified = _to_target(truth_llm, truth_corpus, run, 90, "--dry-run")
    assert len(truth_llm.log) == calls
    assert "drafts to make 0 (already made: " in " ".join(plain.split())
    made = certified.split("drafts to make ")[1].split(" ")[0]
    assert int(made) > 0, certified


def test_a_target_certifies_on_the_check_not_the_combined_score(tmp_path: Path) -> None:
    """A build's rounds count drafts without the BM25 ranks the combined score reads: certifying a target on
    it is refused with the way forward; `auto` certifies a target on the check."""
    from qagen.config import BuildConfig
    from qagen.corpus.settings import CorpusSettings
    from qagen.errors import QagenError
    from qagen.review.certify import certify_run

    config = BuildConfig(corpus=CorpusSettings(path="x"), target=40, precision=0.9, certify_on="predicted_keep")
    with pytest.raises(QagenError, match="Set `certify_on` to supported") as raised:
        certify_run(tmp_path, config)
    assert raised.value.settings == ("certify_on", "target")
    auto = certify_run(tmp_path, config.model_copy(update={"certify_on": "auto"}))
    assert (auto.cut_on, auto.status, auto.labels) == ("supported", "too_few", 0)
