"""The share of good kept questions, estimated: a uniform random sample of the kept questions to label
(`qagen review RUN --sample kept`), and from its labels an estimate with a Wilson interval in
`summary.json`, `qagen profile RUN` and the dataset card; too few labels and none said as such; a run
resized or re-filtered after labelling says its estimate is stale."""

from __future__ import annotations

import csv
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scipy.stats import binomtest

from qagen.config import BuildConfig
from qagen.corpus.settings import CorpusSettings
from qagen.generation.finalize import write_outputs
from qagen.generation.kept_quality import kept_fingerprint, read_kept_ids
from qagen.generation.pipeline import build, load_sample
from qagen.generation.tasks import BuildTasks
from qagen.llm.backends import ModelSettings
from qagen.publish.card import CardContent, make_card
from qagen.publish.local_run import load_run
from qagen.records import MIN_KEPT_LABELS, BuildSummary
from qagen.review.estimate import estimate_from, keep_decisions, wilson_interval
from qagen.review.kept_sample import KEPT_SAMPLE_FILE, KeptSample, kept_sample
from qagen.review.labels import Label
from qagen.review.session import ReviewSession, open_items
from qagen.runs.rundir import RunDir
from standins.corpus import write_corpus
from tests.review.conftest import invoke

KEPT = 80
"""Kept questions of the build: every draft (the cookbook's critics at threshold 1, no duplicates by meaning)."""


def _config(corpus: Path, base_url: str, **changes: Any) -> BuildConfig:
    model = ModelSettings(spec="openai:stand-in", base_url=base_url, max_retries=0)
    settings: dict[str, Any] = {
        "corpus": CorpusSettings(path=str(corpus)), "chunking": {"chunk_size": 400, "chunk_overlap": 40},
        "n_generations": KEPT, "seed": 7, "generator": model, "critic": model, "min_score": 1, "vetting": "cookbook",
        "dedup_embeddings": None,
    }  # fmt: skip
    return BuildConfig.model_validate({**settings, **changes})


@pytest.fixture(scope="module")
def kept_run(tmp_path_factory: pytest.TempPathFactory, shared_llm: Any) -> tuple[Path, Path]:
    """A run that kept all its 80 drafts, and its corpus."""
    folder = tmp_path_factory.mktemp("kept")
    corpus = write_corpus(folder / "corpus")
    result = build(_config(corpus, shared_llm.base_url), folder / "run", progress=False)
    assert result.summary.funnel.kept == KEPT
    return folder / "run", corpus


@pytest.fixture()
def run(kept_run: tuple[Path, Path], tmp_path: Path) -> Iterator[Path]:
    copy = tmp_path / "run"
    shutil.copytree(kept_run[0], copy)
    yield copy


def _label_sheet(run: Path, sheet: Path, labels: int, *, size: int = 60, seed: int = 0) -> list[bool]:
    """Export the kept sample, say keep yes/no on its first `labels` rows (a fixed irregular pattern),
    import it; the decisions given, in order."""
    exported = invoke("review", run, "--sample", "kept", "--export", sheet, "--size", size, "--seed", seed)
    assert exported.exit_code == 0, exported.output
    with sheet.open(encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.DictReader(handle))
    decisions = [number % 7 not in (2, 5) for number in range(labels)]
    for row, keep in zip(rows, decisions, strict=False):
        row["keep"] = "yes" if keep else "no"
    with sheet.open("w", encoding="utf-8-sig", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    imported = invoke("review", run, "--import", sheet, "--reviewer", "ana")
    assert imported.exit_code == 0, imported.output
    return decisions


def _summary(run: Path) -> dict[str, Any]:
    summary: dict[str, Any] = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    return summary


def _card(run: Path) -> str:
    local = load_run(run)
    content = CardContent(
        repo_id="me/set", summary=local.summary, kept_rows=local.kept.num_rows,
        candidate_rows=local.candidates.num_rows, languages=[], license="unknown", prompts=[],
    )  # fmt: skip
    return str(make_card(content))


@pytest.mark.parametrize("confidence", [0.95, 0.9])
@pytest.mark.parametrize(("successes", "n"), [(0, 1), (1, 1), (0, 20), (20, 20), (13, 20), (30, 40), (1, 150)])
def test_the_wilson_interval_is_scipys(successes: int, n: int, confidence: float) -> None:
    expected = binomtest(successes, n).proportion_ci(confidence_level=confidence, method="wilson")
    low, high = wilson_interval(successes, n, confidence)
    assert low == pytest.approx(expected.low, abs=1e-12) and high == pytest.approx(expected.high, abs=1e-12)
    assert 0 <= low <= successes / n <= high <= 1


def test_forty_imported_labels_put_the_estimate_in_the_summary_report_and_card(run: Path, tmp_path: Path) -> None:
    assert _summary(run)["kept_quality"]["status"] == "not_estimated"  # a build without labels

    decisions = _label_sheet(run, tmp_path / "kept.csv", 40)
    kept_by_people = sum(decisions)
    assert 0 < kept_by_people < 40
    independent = binomtest(kept_by_people, 40).proportion_ci(confidence_level=0.95, method="wilson")

    quality = _summary(run)["kept_quality"]
    assert quality["status"] == "estimated" and quality["method"] == "wilson" and quality["confidence"] == 0.95
    assert (quality["labels"], quality["kept_by_reviewers"], quality["kept"]) == (40, kept_by_people, KEPT)
    assert quality["share"] == pytest.approx(kept_by_people / 40)
    assert quality["low"] == pytest.approx(independent.low, abs=1e-12)
    assert quality["high"] == pytest.approx(independent.high, abs=1e-12)
    assert quality["kept_fingerprint"] == kept_fingerprint(read_kept_ids(RunDir(run))) and not quality["stale"]
    BuildSummary.model_validate(_summary(run))  # the typed schema reads it back

    said = (
        f"{kept_by_people / 40:.2f} [{independent.low:.2f}, {independent.high:.2f}] (95%), "
        f"from 40 labels of {KEPT} kept questions (Wilson score interval)"
    )
    card = _card(run)
    assert "## Share of good questions" in card
    assert f"Estimated share of kept questions a reviewer keeps: {said}." in card
    assert "Wilson score interval (95%)" in card and "uniform random sample of the kept questions" in card
    report = invoke("profile", run)
    assert report.exit_code == 0 and f"Estimated share of kept questions a reviewer keeps: {said}" in report.output
    assert said in (run / "profile.md").read_text(encoding="utf-8")


def test_ten_labels_are_too_few_and_none_is_not_estimated(run: Path, tmp_path: Path) -> None:
    assert "Estimated share of kept questions a reviewer keeps: not estimated" in _card(run)
    assert f"label a sample of the kept questions: qagen review {run} --sample kept" in invoke("profile", run).output

    _label_sheet(run, tmp_path / "kept.csv", 10)
    quality = _summary(run)["kept_quality"]
    assert quality["status"] == "too_few" and quality["labels"] == 10 and quality["min_labels"] == MIN_KEPT_LABELS
    assert quality["share"] is None and quality["low"] is None and quality["high"] is None
    expected = f"too few labels to estimate it (10 of {KEPT} kept questions; at least 20 are needed)"
    assert expected in _card(run) and expected in invoke("profile", run).output


def test_a_resized_or_refiltered_run_says_its_estimate_is_stale_until_the_sample_is_drawn_again(
    run: Path, tmp_path: Path, kept_run: tuple[Path, Path], shared_llm: Any
) -> None:
    _label_sheet(run, tmp_path / "kept.csv", 40)
    before = _summary(run)["kept_quality"]
    corpus = kept_run[1]

    build(_config(corpus, shared_llm.base_url, min_score=4), run, progress=False)  # re-filtered: fewer kept
    after = _summary(run)["kept_quality"]
    assert _summary(run)["funnel"]["kept"] < KEPT
    assert after["stale"] and {**after, "stale": False} == before  # the estimate as it was, marked stale
    report = invoke("profile", run).output
    assert "stale: the kept questions changed since the sample was drawn" in report
    assert f"(the labels given stay): qagen review {run} --sample kept" in report
    assert "stale" in _card(run)

    build(_config(corpus, shared_llm.base_url), run, progress=False)  # the same kept questions again: fresh
    assert _summary(run)["kept_quality"] == before

    build(_config(corpus, shared_llm.base_url, n_generations=KEPT + 20), run, progress=False)  # resized
    resized = _summary(run)["funnel"]["kept"]
    assert resized > KEPT and _summary(run)["kept_quality"]["stale"]

    # Drawn again from the 100 kept: the labels given stay; they count as far as the new order's labelled start.
    redrawn = invoke("review", run, "--sample", "kept", "--export", tmp_path / "again.csv", "--size", "60")
    assert redrawn.exit_code == 0
    sample = KeptSample.model_validate_json((run / KEPT_SAMPLE_FILE).read_bytes())
    assert sample.kept == resized
    assert "stale" not in invoke("profile", run).output
    quality = _summary(run)["kept_quality"]
    assert not quality["stale"] and quality["kept"] == resized
    labelled = set(json.loads(line)["item_id"] for line in (run / "labels.jsonl").read_text().splitlines())
    first_gap = next(index for index, item_id in enumerate(sample.ids) if item_id not in labelled)
    assert quality["labels"] == first_gap
    assert quality["labels_not_counted"] == len(labelled & set(sample.ids[first_gap:]))


def test_the_kept_sample_is_uniform_over_the_kept_questions_reproducible_and_grows_by_adding(run: Path) -> None:
    kept = read_kept_ids(RunDir(run))
    assert len(kept) == KEPT
    sample = kept_sample(run, size=30, seed=1)
    assert len(set(sample.ids)) == 30 and set(sample.ids) <= set(kept)
    assert sample.ids != sorted(sample.ids) and sample.ids != kept[:30]  # a random order, not the run's
    assert json.loads((run / KEPT_SAMPLE_FILE).read_text())["ids"] == sample.ids
    assert kept_sample(run, size=30, seed=1) == sample
    assert kept_sample(run, size=50, seed=1).ids[:30] == sample.ids  # a larger sample adds to the smaller
    assert kept_sample(run, size=30, seed=2).ids != sample.ids
    assert kept_sample(run, size=500, seed=1).ids != kept and sorted(kept_sample(run, 500, 1).ids) == sorted(kept)
    # Each kept question is about as likely to be drawn: over 200 seeds, a 10-of-80 sample holds each
    # question 25 times on average; with independent draws, every count stays within 5 sigma of that.
    counts = dict.fromkeys(kept, 0)
    for seed in range(200):
        for item_id in kept_sample(run, size=10, seed=seed).ids:
            counts[item_id] += 1
    assert all(5 < count < 45 for count in counts.values()), counts


def test_labels_count_in_the_sample_order_up_to_the_first_unlabelled_and_once_per_question() -> None:
    ids = [f"q{number}" for number in range(30)]
    sample = KeptSample(size=30, seed=0, ids=ids, kept=100, kept_fingerprint="f" * 64)

    def label(item_id: str, keep: bool, reviewer: str = "ana") -> Label:
        return Label(kind="draft", item_id=item_id, reviewer=reviewer, keep=keep, via="csv")

    labels = [label(item_id, True) for item_id in ids[:24] if item_id != "q21"]
    labels += [label("q0", False, "bo"), label("q1", False, "bo"), label("q1", False, "cy")]  # q0: a tie; q1: 1 of 3
    labels += [label("q2", True, "bo"), Label(kind="draft", item_id="q25", reviewer="ana", via="page")]  # no decision
    decisions = keep_decisions(labels)
    assert decisions["q0"] is False and decisions["q1"] is False and decisions["q2"] is True and "q25" not in decisions

    quality = estimate_from(sample, decisions, kept_ids=[])
    assert (quality.labels, quality.kept_by_reviewers, quality.labels_not_counted) == (21, 19, 2)
    assert quality.status == "estimated" and quality.share == pytest.approx(19 / 21)
    assert quality.stale  # no kept question now is not the set the sample came from
    fewer = estimate_from(sample, {item_id: True for item_id in ids[:19]}, kept_ids=[])
    assert fewer.status == "too_few" and fewer.share is None and fewer.labels == 19
    assert estimate_from(sample, {}, kept_ids=[]).status == "not_estimated"


def test_the_review_page_labels_the_kept_sample_and_keeps_the_estimate_current(run: Path) -> None:
    items, _ = open_items(run, size=40, seed=0, sample="kept")
    sample = KeptSample.model_validate_json((run / KEPT_SAMPLE_FILE).read_bytes())
    assert [item.id for item in items] == sample.ids
    session = ReviewSession(run, items, reviewer="ana")
    for index in range(MIN_KEPT_LABELS):
        session.save({"index": index, "item_id": items[index].id, "keep": index % 4 != 0})
        status = _summary(run)["kept_quality"]["status"]
        assert status == ("estimated" if index + 1 >= MIN_KEPT_LABELS else "too_few")
    session.close()
    assert _summary(run)["kept_quality"]["kept_by_reviewers"] == 15
    resumed = ReviewSession(run, open_items(run, size=40, seed=0, sample="kept")[0], reviewer="ana")
    assert resumed.state(None)["position"] == MIN_KEPT_LABELS and resumed.state(None)["labelled"] == MIN_KEPT_LABELS
    resumed.close()


def test_labelling_leaves_the_outputs_standing(
    run: Path, tmp_path: Path, kept_run: tuple[Path, Path], shared_llm: Any
) -> None:
    _label_sheet(run, tmp_path / "kept.csv", 20)
    config = _config(kept_run[1], shared_llm.base_url)
    written = write_outputs(config, RunDir(run), BuildTasks.for_config(config), load_sample(config, RunDir(run)))
    assert written.up_to_date and written.summary.kept_quality.status == "estimated"


def test_an_evaluation_or_a_run_without_kept_questions_has_no_kept_sample(run: Path, tmp_path: Path) -> None:
    evaluation = tmp_path / "eval"
    evaluation.mkdir()
    (evaluation / "results.jsonl").write_text("", encoding="utf-8")
    result = invoke("review", evaluation, "--sample", "kept", "--export", tmp_path / "x.csv")
    assert result.exit_code == 1 and "is an evaluation: it has answers, not kept questions" in result.output
    shutil.rmtree(run / "dataset")
    result = invoke("review", run, "--sample", "kept", "--export", tmp_path / "x.csv")
    assert result.exit_code == 1 and "has no kept question to sample" in result.output


def test_a_kept_set_smaller_than_an_estimate_takes_is_counted_whole_once_every_question_is_labelled(
    shared_llm: Any, tmp_path: Path
) -> None:
    corpus = write_corpus(tmp_path / "corpus")
    run = tmp_path / "run"
    assert build(_config(corpus, shared_llm.base_url, n_generations=8), run, progress=False).summary.funnel.kept == 8
    sheet = tmp_path / "kept.csv"
    exported = invoke("review", run, "--sample", "kept", "--export", sheet)
    assert exported.exit_code == 0, exported.output
    assert "the run keeps 8 questions, fewer than the 20 labels an estimate takes" in exported.output
    with sheet.open(encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.DictReader(handle))
    for number, row in enumerate(rows):
        row["keep"] = "no" if number in (1, 4) else "yes"
    with sheet.open("w", encoding="utf-8-sig", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    imported = invoke("review", run, "--import", sheet, "--reviewer", "ana")
    assert imported.exit_code == 0, imported.output
    assert "6 of all 8 (0.75), counted: every kept question is labelled" in imported.output
    assert "label more of the sample" not in imported.output  # there is no more to label
    profiled = invoke("profile", run)
    assert "6 of all 8 (0.75), counted" in profiled.output and "label more" not in profiled.output
