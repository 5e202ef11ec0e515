"""`--target N`: N final questions, drafted in rounds sized by the pass rate, resumable, shortfalls said."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from datasets import load_from_disk

from qagen.cli.app import main
from qagen.config import BuildConfig
from qagen.corpus.settings import CorpusSettings
from qagen.errors import ConfigError
from qagen.generation.pipeline import NO_TOKEN_PROBABILITIES
from qagen.generation.target import Passed, Plan, Recorded, choose, first_plan, next_plan, replan, start_plan
from qagen.records import TypeFunnel
from standins.corpus import write_corpus
from standins.llm.server import StandInLLM

MIX = "factoid=60,unanswerable=40"


def _build(llm: Any, corpus: Path, out: Path, *extra: str) -> Result:
    args = ["build", str(corpus), "--out", str(out), "--generator-model", "openai:stand-in", "--base-url", llm.base_url]
    # The cookbook's three critics pass about half the stand-in's drafts: a target takes several rounds.
    args += ["--seed", "7", "--chunk-size", "400", "--chunk-overlap", "40", "-q", "--vetting", "cookbook", *extra]
    return CliRunner().invoke(main, args, catch_exceptions=False, env={"OPENAI_API_KEY": "test-key"})


def _rows(path: Path) -> list[dict[str, Any]]:
    return list(load_from_disk(str(path)))


def _summary(run: Path) -> dict[str, Any]:
    summary: dict[str, Any] = json.loads((run / "summary.json").read_text())
    return summary


@pytest.fixture(scope="module")
def shared_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The corpus of `finished_runs`: a test that builds on one of those runs builds from this corpus."""
    return write_corpus(tmp_path_factory.mktemp("target_corpus") / "corpus")


@pytest.fixture(scope="module")
def finished_runs(shared_corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[int, Path]]:
    """A finished build to each target, 20 and 10, made once for the module against a server of its own;
    a test gets a copy (`finished_run`) and resumes it against its own `llm`, whose log it reads."""
    runs = {}
    with StandInLLM() as server:
        for target in (20, 10):
            runs[target] = tmp_path_factory.mktemp(f"target_{target}") / "run"
            result = _build(server, shared_corpus, runs[target], "--target", str(target))
            assert result.exit_code == 0, result.output
        calls = len(server.log)
        yield runs
    # The copies' builds name their own server: none may have reached this one through the saved settings.
    assert len(server.log) == calls


@pytest.fixture()
def finished_run(finished_runs: dict[int, Path], tmp_path: Path) -> Callable[[int], Path]:
    """A copy, at `tmp_path / "run"`, of the module's finished build to a target of 20 or 10."""

    def copy(target: int) -> Path:
        return Path(shutil.copytree(finished_runs[target], tmp_path / "run"))

    return copy


# --- must-show 1 ---------------------------------------------------------------------------------------
def test_a_target_of_20_keeps_exactly_20_over_several_rounds_and_a_rerun_makes_no_call(
    llm: Any, corpus: Path, tmp_path: Path
) -> None:
    # Three critics passing 80% each: about half the drafts pass, so the first round (twice the
    # target) falls a little short and a second round makes up the difference.
    result = _build(llm, corpus, tmp_path / "run", "--target", "20")
    assert result.exit_code == 0, result.output
    assert "short of the target" not in result.output
    assert result.output.count(NO_TOKEN_PROBABILITIES) == 1  # said once, not once per round
    kept = _rows(tmp_path / "run" / "dataset")
    assert len(kept) == 20
    summary = _summary(tmp_path / "run")
    target = summary["target"]
    assert target["rounds"] > 1 and target["kept"] == 20 and target["drafts"] < target["max_drafts"] == 80
    candidates = _rows(tmp_path / "run" / "candidates")
    assert len(candidates) == target["drafts"] == summary["funnel"]["sampled"]
    over = [row for row in candidates if row["reason"] == "over_target"]
    assert all(row["status"] == "rejected" for row in over) and len(over) == summary["funnel"]["over_target"]
    table = " ".join(result.output.split())
    rounds = f"in {target['rounds']} rounds"
    assert f"over the target {len(over)} kept 20 target 20 ({target['drafts']} drafts of at most 80, {rounds})" in table
    # Every draft was asked once, however many rounds it took.
    assert max(llm.requests_by_body().values()) == 1

    calls = len(llm.log)
    again = _build(llm, corpus, tmp_path / "run", "--target", "20")
    assert again.exit_code == 0 and "nothing changed: dataset is up to date" in again.output
    assert len(llm.log) == calls
    assert _rows(tmp_path / "run" / "dataset") == kept


def test_per_type_shares_of_the_target_hold_within_one_question(llm: Any, corpus: Path, tmp_path: Path) -> None:
    result = _build(llm, corpus, tmp_path / "run", "--target", "25", "--question-types", MIX)
    assert result.exit_code == 0, result.output
    kept = Counter(row["question_type"] for row in _rows(tmp_path / "run" / "dataset"))
    assert sum(kept.values()) == 25
    for name, share in {"factoid": 60, "unanswerable": 40}.items():
        assert abs(kept[name] - 25 * share / 100) <= 1, kept
    summary = _summary(tmp_path / "run")
    assert summary["target"]["by_type"] == dict(kept)
    assert {name: counts["kept"] for name, counts in summary["question_types"].items()} == dict(kept)


def test_a_shortfall_exits_0_with_one_sentence_naming_kept_drafts_and_reasons_per_type(
    llm: Any, corpus: Path, tmp_path: Path
) -> None:
    llm.configure(pass_rate=0.4)  # about one draft in sixteen passes all three critics
    result = _build(llm, corpus, tmp_path / "run", "--target", "20", "--question-types", MIX)
    assert result.exit_code == 0, result.output
    summary = _summary(tmp_path / "run")
    kept, types = summary["funnel"]["kept"], summary["question_types"]
    assert kept < 20 and summary["target"]["drafts"] == 80
    sentences = [line for line in result.output.splitlines() if line.startswith("short of the target:")]
    assert len(sentences) == 1
    sentence = sentences[0]
    assert f"kept {kept} of the 20 questions asked for" in sentence
    assert f"factoid {types['factoid']['kept']} of 12, unanswerable {types['unanswerable']['kept']} of 8" in sentence
    assert "from 80 drafts, the draft budget (--max-drafts 80)" in sentence
    for name, counts in types.items():
        commonest = max(counts["rejected_by"], key=counts["rejected_by"].get)
        assert f"{name}: {commonest} {counts['rejected_by'][commonest]}" in sentence
    assert sentence.endswith(".") and sentence.count(". ") == 0
    assert len(_rows(tmp_path / "run" / "dataset")) == kept


def test_a_shortfall_says_the_failed_drafts_apart_from_the_rejections_and_that_they_spent_the_budget(
    llm: Any, corpus: Path, tmp_path: Path
) -> None:
    llm.configure(pass_rate=0.4, malformed_rate=0.3)  # refusals, empty and cut replies besides the rejections
    result = _build(llm, corpus, tmp_path / "run", "--target", "20", "--max-retries", "0")
    assert result.exit_code == 0, result.output
    funnel = _summary(tmp_path / "run")["funnel"]
    failed = {**funnel["generation_failed"]}
    for reason, n in funnel["critique_failed"].items():
        failed[reason] = failed.get(reason, 0) + n
    assert sum(failed.values()) > 0
    [sentence] = [line for line in result.output.splitlines() if line.startswith("short of the target:")]
    rejected, _, failures = sentence.partition("; ")
    assert "failed" not in rejected  # a failed draft is no rejection
    commonest = min(failed, key=lambda reason: (-failed[reason], reason))
    assert failures.startswith(f"{sum(failed.values())} drafts failed (")
    assert f"{commonest} {failed[commonest]}" in failures and "each counted in the draft budget" in failures


def test_a_corpus_with_too_few_passages_ends_with_the_shortfall_and_exit_0(llm: Any, tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "small", documents=3, paragraphs=2)
    result = _build(llm, corpus, tmp_path / "run", "--target", "20")
    assert result.exit_code == 0, result.output
    summary = _summary(tmp_path / "run")
    chunks = summary["corpus"]["chunks"]
    assert summary["target"]["drafts"] == chunks < 20
    assert f"from {chunks} drafts, all the corpus had passages for" in " ".join(result.output.split())
    # One round: the first asked for more than the corpus holds, so there is nothing left to ask.
    assert summary["target"]["rounds"] == 1


def test_a_build_stopped_mid_round_resumes_that_round_and_pays_no_call_twice(
    llm: Any, shared_corpus: Path, finished_runs: dict[int, Path], tmp_path: Path
) -> None:
    corpus = shared_corpus
    capped = _build(llm, corpus, tmp_path / "run", "--target", "20", "--max-tokens", "30000", "--concurrency", "4")
    assert capped.exit_code == 3, capped.output
    assert 0 < _summary(tmp_path / "run")["target"]["drafts"] < 40  # stopped inside the first round
    finished = _build(llm, corpus, tmp_path / "run", "--target", "20")
    assert finished.exit_code == 0, finished.output
    assert max(llm.requests_by_body().values()) == 1  # nothing paid twice across the two sessions
    # The same as an uninterrupted build (the module's, at the same settings).
    for name in ("dataset", "candidates"):
        assert _rows(tmp_path / "run" / name) == _rows(finished_runs[20] / name)


def test_filter_on_a_target_run_refilters_the_drafted_sample_to_the_target(
    finished_run: Callable[[int], Path],
) -> None:
    run = finished_run(20)
    drafts = _summary(run)["target"]["drafts"]
    refiltered = CliRunner().invoke(main, ["stage", "filter", str(run), "--min-score", "3"])
    assert refiltered.exit_code == 0, refiltered.output
    summary = _summary(run)
    assert summary["funnel"]["sampled"] == drafts and summary["funnel"]["kept"] == 20
    assert summary["funnel"]["over_target"] > 0  # a lower threshold passes more: the surplus is over the target
    # No call: the run names the module's server, whose log `finished_runs` checks at the end.


def test_filter_that_leaves_a_target_run_short_says_so(finished_run: Callable[[int], Path]) -> None:
    run = finished_run(20)
    refiltered = CliRunner().invoke(main, ["stage", "filter", str(run), "--min-score", "5"])
    assert refiltered.exit_code == 0, refiltered.output
    kept = _summary(run)["funnel"]["kept"]
    assert kept < 20
    assert f"short of the target: kept {kept} of the 20 questions asked for" in refiltered.output


def test_a_type_whose_share_of_a_small_target_rounds_to_no_question_is_said(
    llm: Any, corpus: Path, tmp_path: Path
) -> None:
    result = _build(llm, corpus, tmp_path / "run", "--target", "4", "--question-types", "factoid=90,unanswerable=10")
    assert result.exit_code == 0, result.output
    assert _summary(tmp_path / "run")["target"]["by_type"] == {"factoid": 4, "unanswerable": 0}
    said = " ".join(result.output.split())
    assert (
        "A target of 4 gives no question to unanswerable (10%): split by the shares, it rounds to 0 for it; "
        "a target of 10 or more gives each type one at least."
    ) in said


def test_a_dry_run_of_a_target_estimates_the_first_round_and_names_the_draft_budget(
    llm: Any, corpus: Path, tmp_path: Path
) -> None:
    result = _build(llm, corpus, tmp_path / "run", "--target", "20", "--dry-run")
    assert result.exit_code == 0, result.output
    assert "drafts to make          40 (already made: 0)" in result.output
    assert "with --target 20: the round the build starts with; the rounds after it make at most 80 drafts" in (
        result.output
    )
    assert llm.log == []


def test_a_spoilt_rounds_file_is_named_with_the_way_forward(
    llm: Any, shared_corpus: Path, finished_run: Callable[[int], Path], tmp_path: Path
) -> None:
    corpus = shared_corpus
    finished_run(10)
    (tmp_path / "run" / "rounds.json").write_text('{"round": 2}', encoding="utf-8")
    result = _build(llm, corpus, tmp_path / "run", "--target", "12")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "rounds.json (KeyError: 'drafts'); delete it and run the same command again" in result.output


# --- the two sizes cannot be given together -------------------------------------------------------------
def test_n_generations_and_target_together_are_refused(llm: Any, corpus: Path, tmp_path: Path) -> None:
    result = _build(llm, corpus, tmp_path / "run", "--target", "20", "--n-generations", "40")
    assert result.exit_code == 1
    assert "--n-generations (40) and --target (20) cannot be given together" in result.output
    assert "Traceback" not in result.output and llm.log == [] and not (tmp_path / "run").exists()
    with pytest.raises(ConfigError, match=r"`n_generations` \(40\) and `target` \(20\) cannot be given together"):
        BuildConfig(corpus=CorpusSettings(path="docs"), target=20, n_generations=40)


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"max_drafts": 50}, "`max_drafts` (50) bounds a build to a `target` size"),
        ({"target": 20, "max_drafts": 10}, "`max_drafts` (10) is below `target` (20)"),
    ],
)
def test_a_draft_budget_needs_a_target_it_can_reach(fields: dict[str, int], said: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(said)):
        BuildConfig(corpus=CorpusSettings(path="docs"), **fields)


# --- the rounds and the choice, as rules -----------------------------------------------------------------
def _config(**fields: Any) -> BuildConfig:
    return BuildConfig(corpus=CorpusSettings(path="docs"), **fields)


def _counts(sampled: int, kept: int, undecided: int = 0) -> TypeFunnel:
    return TypeFunnel(
        share=100, requested=sampled, sampled=sampled, short=0, drafted=sampled, generation_failed=0,
        critique_failed=0, undecided=undecided, rejected=sampled - kept - undecided, rejected_by={}, kept=kept,
        kept_copied_share=None,
    )  # fmt: skip


def test_the_first_round_asks_twice_each_types_part_within_the_budget() -> None:
    assert first_plan(_config(target=20, question_types={"factoid": 60, "unanswerable": 40})) == Plan(
        {"factoid": 24, "unanswerable": 16}, 1
    )
    # A budget below twice the target is shared out in proportion.
    assert first_plan(_config(target=20, max_drafts=30, question_types={"factoid": 60, "unanswerable": 40})) == Plan(
        {"factoid": 18, "unanswerable": 12}, 1
    )


def test_later_rounds_are_sized_from_the_pass_rate_seen_and_stop_when_nothing_is_left_to_ask() -> None:
    config = _config(target=20, question_types={"factoid": 50, "multi_hop": 50})
    plan = Plan({"factoid": 20, "multi_hop": 20}, 1)
    # factoid is 5 short at a pass rate of (5 + 1) / (20 + 2): ceil(5 * 22 / 6) = 19 more; multi_hop has its 10.
    following = next_plan(config, plan, {"factoid": _counts(20, 5), "multi_hop": _counts(20, 12)})
    assert following == Plan({"factoid": 39, "multi_hop": 20}, 2)
    # The budget (4 x 20 = 80) bounds a round: 40 made, 40 left however many are wanted.
    starved = next_plan(config, plan, {"factoid": _counts(20, 0), "multi_hop": _counts(20, 0)})
    assert starved is not None and sum(starved.drafts.values()) == 80
    # Every part reached, the budget spent, or the corpus out of passages for the types short: no round.
    assert next_plan(config, plan, {"factoid": _counts(20, 10), "multi_hop": _counts(20, 11)}) is None
    spent = Plan({"factoid": 40, "multi_hop": 40}, 3)
    assert next_plan(config, spent, {"factoid": _counts(40, 2), "multi_hop": _counts(40, 3)}) is None
    assert next_plan(config, plan, {"factoid": _counts(17, 2), "multi_hop": _counts(20, 10)}) is None


def test_the_choice_is_each_types_part_spread_over_documents_and_fixed_by_the_seed() -> None:
    config = _config(target=6, question_types={"factoid": 50, "unanswerable": 50})
    passed = [Passed(f"f{doc}-{k}", "factoid", f"doc{doc}") for doc in range(3) for k in range(4)]
    passed += [Passed(f"u{k}", "unanswerable", "doc0") for k in range(2)]
    chosen = choose(passed, config)
    factoids = Counter(draft.source_doc for draft in passed if draft.id in chosen and draft.question_type == "factoid")
    assert factoids == {"doc0": 1, "doc1": 1, "doc2": 1}  # three of twelve, one per document
    assert {"u0", "u1"} <= chosen and len(chosen) == 5  # unanswerable is short: both it has, no more
    assert choose(list(reversed(passed)), config) == chosen  # the order they came in does not matter
    others = {choose(passed, _config(target=6, seed=seed, question_types=config.question_types)) for seed in range(8)}
    assert len(others) > 1  # the seed decides which


def test_a_target_in_batch_mode_gives_the_online_dataset(corpus: Path, tmp_path: Path) -> None:
    from standins.llm.server import StandInLLM

    with StandInLLM() as online:
        assert _build(online, corpus, tmp_path / "online", "--target", "20").exit_code == 0
    with StandInLLM(batch_polls=1) as batch:
        result = _build(batch, corpus, tmp_path / "batch", "--target", "20", "--batch", "--batch-poll", "0.01")
        assert result.exit_code == 0, result.output
        online_calls = [e for e in batch.log if e["path"].endswith("/chat/completions") and e["method"] == "POST"]
        assert not online_calls and any(entry["method"] == "BATCH" for entry in batch.log)
    assert _summary(tmp_path / "batch")["target"]["rounds"] > 1
    for name in ("dataset", "candidates"):
        assert _rows(tmp_path / "batch" / name) == _rows(tmp_path / "online" / name)


@pytest.mark.slow
def test_killed_in_each_round_then_rerun_equals_an_uninterrupted_build(llm: Any, corpus: Path, tmp_path: Path) -> None:
    llm.configure(latency=0.03)
    concurrency = 8
    env = {**os.environ, "OPENAI_API_KEY": "test-key"}

    def command(out: Path) -> list[str]:
        return [
            sys.executable, "-m", "qagen", "build", str(corpus), "--out", str(out), "--generator-model",
            "openai:stand-in",
            "--base-url", llm.base_url, "--target", "20", "--seed", "7", "--chunk-size", "400", "--chunk-overlap",
            "40", "--concurrency", str(concurrency), "-q",
            "--vetting", "cookbook",  # the cookbook's three critics pass about half: the target takes rounds
        ]  # fmt: skip

    def in_round(out: Path, number: int) -> bool:
        rounds = out / "rounds.json"
        return rounds.exists() and json.loads(rounds.read_text())["round"] == number

    def lines(path: Path) -> int:
        return path.read_bytes().count(b"\n") if path.exists() else 0

    out = tmp_path / "killed"
    # Killed twice: while the first round drafts, and as soon as the second round is under way.
    for under_way in (lambda: lines(out / "critiques.jsonl") >= 15, lambda: in_round(out, 2)):
        process = subprocess.Popen(command(out), env=env, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while not under_way():
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            assert time.monotonic() < deadline
            time.sleep(0.002)
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
    finished = subprocess.run(command(out), env=env, capture_output=True, text=True, timeout=120)
    assert finished.returncode == 0, finished.stderr
    repeats = {body: n for body, n in llm.requests_by_body().items() if n > 1}
    assert sum(n - 1 for n in repeats.values()) <= 2 * concurrency  # only calls in flight at each kill
    llm.reset()
    clean = subprocess.run(command(tmp_path / "clean"), env=env, capture_output=True, text=True, timeout=120)
    assert clean.returncode == 0, clean.stderr
    assert _summary(out)["target"]["rounds"] == _summary(tmp_path / "clean")["target"]["rounds"] > 1
    for name in ("dataset", "candidates"):
        assert _rows(out / name) == _rows(tmp_path / "clean" / name)


# --- issue 42: a changed target or budget on a run that drafted already -----------------------------------
def _calls_estimated(output: str) -> int:
    found = re.search(r"LLM calls \(expected\)\s+([\d,]+)", output)
    assert found is not None, output
    return int(found.group(1).replace(",", ""))


def test_a_dry_run_with_a_larger_target_on_a_finished_run_prices_the_round_the_build_starts(
    llm: Any, shared_corpus: Path, finished_run: Callable[[int], Path], tmp_path: Path
) -> None:
    corpus = shared_corpus
    finished_run(10)
    dry = _build(llm, corpus, tmp_path / "run", "--target", "20", "--dry-run")
    assert dry.exit_code == 0, dry.output
    drafts = re.search(r"drafts to make\s+([\d,]+) \(already made: ([\d,]+)\)", dry.output)
    assert drafts is not None, dry.output
    to_make, made = int(drafts.group(1)), int(drafts.group(2))
    assert to_make > 0 and _calls_estimated(dry.output) >= to_make
    # The build's first round is the round the dry run priced: its sample is the drafts made and those to make.
    args = ["build", str(corpus), "--out", str(tmp_path / "run"), "--generator-model", "openai:stand-in"]
    args += ["--base-url", llm.base_url, "--seed", "7", "--chunk-size", "400", "--chunk-overlap", "40"]
    args += ["--vetting", "cookbook", "--target", "20"]
    result = CliRunner().invoke(main, args, catch_exceptions=False, env={"OPENAI_API_KEY": "test-key"})
    assert result.exit_code == 0, result.output
    rounds = re.findall(r"^round \d+: (\d+) drafts for a target of 20", result.output, re.MULTILINE)
    assert rounds and int(rounds[0]) == to_make + made, (rounds, to_make, made)


def _stop_in_round_2(run: Path, drafts: int) -> None:
    """The run directory as a build killed as its second round started leaves it: the round written, sized
    for the target of 10 and its budget, before any of its calls."""
    stored = json.loads((run / "rounds.json").read_text())
    assert stored["round"] == 1 and stored["drafts"]["factoid"] < drafts
    (run / "rounds.json").write_text(json.dumps({**stored, "round": 2, "drafts": {"factoid": drafts}}))


def test_a_round_resumed_with_a_lower_target_stops_where_the_drafts_made_reach_it(
    llm: Any, shared_corpus: Path, finished_run: Callable[[int], Path], tmp_path: Path
) -> None:
    corpus = shared_corpus
    finished_run(10)
    first = _summary(tmp_path / "run")["target"]
    _stop_in_round_2(tmp_path / "run", 60)
    calls = len(llm.log)
    result = _build(llm, corpus, tmp_path / "run", "--target", "5")
    assert result.exit_code == 0, result.output
    assert len(llm.log) == calls  # the first round passed more than 5: nothing more is drafted
    target = _summary(tmp_path / "run")["target"]
    assert target["kept"] == 5 and target["drafts"] <= first["drafts"] and target["max_drafts"] == 20
    assert len(_rows(tmp_path / "run" / "dataset")) == 5


def test_a_round_resumed_with_a_lower_draft_budget_makes_no_more_drafts_than_it(
    llm: Any, shared_corpus: Path, finished_run: Callable[[int], Path], tmp_path: Path
) -> None:
    corpus = shared_corpus
    finished_run(10)
    _stop_in_round_2(tmp_path / "run", 60)
    result = _build(llm, corpus, tmp_path / "run", "--target", "10", "--max-drafts", "15")
    assert result.exit_code == 0, result.output
    target = _summary(tmp_path / "run")["target"]
    assert target["drafts"] <= target["max_drafts"] == 15
    table = " ".join(result.output.split())
    assert f"({target['drafts']} drafts of at most 15," in table


def test_a_rounds_file_edited_to_100000_drafts_is_held_to_the_draft_budget(
    llm: Any, shared_corpus: Path, finished_run: Callable[[int], Path], tmp_path: Path
) -> None:
    corpus = shared_corpus
    finished_run(10)
    made = _summary(tmp_path / "run")["target"]["drafts"]
    # As an older qagen wrote it: without the parts and budget it was sized for.
    (tmp_path / "run" / "rounds.json").write_text('{"round": 2, "drafts": {"factoid": 100000}}')
    calls = len(llm.log)
    result = _build(llm, corpus, tmp_path / "run", "--target", "10")
    assert result.exit_code == 0, result.output
    summary = _summary(tmp_path / "run")
    assert summary["target"]["drafts"] <= 40 and summary["funnel"]["sampled"] <= 40
    # A call to draft and three critics for each draft the budget has left, at most (the corpus has 234 passages).
    assert len(llm.log) - calls <= 4 * (40 - made)


def test_a_round_sized_anew_keeps_what_holds_each_part_and_asks_the_rest_at_the_pass_rate_seen() -> None:
    config = _config(target=4, question_types={"factoid": 50, "unanswerable": 50})
    plan = Plan({"factoid": 10, "unanswerable": 10}, 2)
    statuses = {
        # Its two passed by the fifth draft: the round keeps those five, the rest of it is not drafted.
        "factoid": ["rejected", "kept", "failed", "rejected", "kept", "kept", "undecided", "rejected"],
        # One of four decided passed (the fifth was in flight): one short at (1 + 1) / (4 + 2) asks 3 more.
        "unanswerable": ["rejected", "kept", "rejected", "rejected", "undecided", "kept"],
    }
    assert replan(config, plan, statuses) == Plan({"factoid": 5, "unanswerable": 7}, 3)
    # A budget below what is made already: held to it, in proportion.
    tight = _config(target=4, max_drafts=6, question_types=config.question_types)
    assert replan(tight, plan, {"factoid": ["rejected"] * 6, "unanswerable": ["rejected"] * 6}) == Plan(
        {"factoid": 3, "unanswerable": 3}, 3
    )
    # A type the corpus gave fewer passages than asked, all decided, asks as before (its shortfall is said the
    # same); nothing changed: the same round.
    exhausted = {"factoid": ["kept", "kept", "rejected"], "unanswerable": ["kept", "rejected", "rejected"]}
    assert replan(config, Plan({"factoid": 3, "unanswerable": 5}, 2), exhausted) == Plan(
        {"factoid": 2, "unanswerable": 5}, 3
    )
    assert replan(config, Plan({"factoid": 2, "unanswerable": 5}, 2), exhausted) == Plan(
        {"factoid": 2, "unanswerable": 5}, 2
    )


def test_status_of_a_target_run_says_its_target_rounds_and_the_tables_counts(
    llm: Any, corpus: Path, tmp_path: Path
) -> None:
    llm.configure(malformed_rate=0.2)  # failures, counted as calls in the records and as drafts in the table
    run = tmp_path / "run"
    result = _build(
        llm, corpus, run, "--target", "12", "--question-types", "factoid=50,multi_hop=50", "--max-retries", "0"
    )
    assert result.exit_code == 0, result.output
    summary = _summary(run)
    funnel, target = summary["funnel"], summary["target"]
    status = CliRunner().invoke(main, ["status", str(run)])
    assert status.exit_code == 0, status.output
    generation = sum(funnel["generation_failed"].values())
    assert (
        f"drafts, as the build's table counts them: {funnel['sampled']} sampled, {funnel['drafted']} drafted, "
        f"{generation} generation failed, {sum(funnel['critique_failed'].values())} critique failed"
    ) in status.output
    table = " ".join(result.output.split())
    assert f"generation failed {generation}" in table  # the same number as the table's
    rounds = f"{target['rounds']} round{'s' if target['rounds'] != 1 else ''}"
    assert (
        f"target: kept {target['kept']} of 12 ({target['drafts']} drafts of at most {target['max_drafts']}, "
        f"in {rounds}; parts: factoid 6, multi_hop 6)"
    ) in status.output
    assert "records, one per call:" in status.output and "under way" not in status.output
    # Stopped as its next round started: the round is said to be under way.
    stored = json.loads((run / "rounds.json").read_text())
    (run / "rounds.json").write_text(json.dumps({**stored, "round": target["rounds"] + 1}))
    status = CliRunner().invoke(main, ["status", str(run)])
    assert f"round {target['rounds'] + 1} of a build to a target under way" in status.output


def test_one_question_is_said_in_the_singular_and_the_next_steps_say_what_profile_shows(
    llm: Any, corpus: Path, tmp_path: Path
) -> None:
    result = _build(llm, corpus, tmp_path / "run", "--target", "1")
    assert result.exit_code == 0, result.output
    assert f"kept 1 question: {tmp_path / 'run' / 'dataset'}" in result.output
    assert "the funnel, the profile, examples" not in result.output  # profile prints neither funnel nor examples
    assert "its profile: types, coverage, easiness, lengths, scores" in result.output


def test_a_larger_target_starts_from_the_pass_rate_measured_not_twice_its_part_again() -> None:
    config = _config(target=20)
    recorded = Recorded(Plan({"factoid": 20}, 1), {"factoid": 10}, 40)
    # Round 1 of the target of 10 passed 15 of its 20 drafts: 5 more at (15 + 1) / (20 + 2) ask 7, not 40 - 20.
    fates = ["kept"] * 15 + ["rejected"] * 5
    assert start_plan(config, recorded, 20, lambda: {"factoid": fates}) == Plan({"factoid": 27}, 2)
    # The same target and budget: the round goes on as it was (a build stopped in it), its fates not read.
    same = Recorded(Plan({"factoid": 20}, 1), {"factoid": 20}, 80)
    assert start_plan(config, same, 20, lambda: pytest.fail("read the records")) == Plan({"factoid": 20}, 1)
