"""Several question/answer pairs per drafting call (`per_chunk`, issue 40): against the stand-in, which
answers a prompt of several pairs with that many (numbered in every way it knows, or fewer with
`max_pairs`), through the real client. Each pair is a draft of its own; the reply is one record, read
again into its drafts on resume, never asked twice; the estimate and a build to a target count drafts.

The expected counts are read from the stand-in's request log and the run's records, not from the product."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from datasets import load_from_disk

from qagen.cli.app import main
from qagen.config import BuildConfig
from qagen.generation.compose import ComposeTask
from qagen.generation.draft import DraftTask
from qagen.generation.tasks import BuildTasks
from standins.llm.server import StandInLLM

CHAT = "/chat/completions"


def _build(llm: StandInLLM, corpus: Path, out: Path, *extra: str, n: int | None = 12) -> Result:
    args = ["build", str(corpus), "--out", str(out), "--generator-model", "openai:stand-in", "--base-url", llm.base_url]
    args += [*(["-n", str(n)] if n is not None else []), "--chunk-size", "400", "--chunk-overlap", "40", "--seed", "3"]
    return CliRunner().invoke(main, [*args, "-q", *extra], catch_exceptions=False)


def _drafts(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "drafts.jsonl").read_text(encoding="utf-8").splitlines()]


def _calls(llm: StandInLLM, prompt: str | None = None) -> list[dict[str, Any]]:
    """The chat requests the stand-in answered (of one prompt kind)."""
    return [e for e in llm.log if e["path"].endswith(CHAT) and (prompt is None or e["prompt"] == prompt)]


def _rows(run: Path) -> dict[str, dict[str, Any]]:
    return {row["id"]: row for row in load_from_disk(str(run / "candidates"))}


@pytest.fixture(scope="module")
def module_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from standins.corpus import write_corpus

    return write_corpus(tmp_path_factory.mktemp("corpus") / "corpus")


@pytest.fixture(scope="module")
def three_a_call(tmp_path_factory: pytest.TempPathFactory, module_corpus: Path) -> tuple[Path, list[dict[str, Any]]]:
    """A build of 12 drafts at 3 pairs a call, the replies numbered in every way the stand-in knows; and the
    stand-in's log of it."""
    out = tmp_path_factory.mktemp("three") / "run"
    with StandInLLM(generation_format_variety=0.8) as llm:
        result = _build(llm, module_corpus, out, "--per-chunk", "3")
        assert result.exit_code == 0, result.output
        return out, llm.log


def test_three_pairs_a_call_make_three_drafts_of_each_call(three_a_call: tuple[Path, list[dict[str, Any]]]) -> None:
    run, log = three_a_call
    drafting = [e for e in log if e["path"].endswith(CHAT) and e["prompt"] == "generation"]
    assert len(drafting) == 4 and len({e["body_sha256"] for e in drafting}) == 4  # 12 drafts / 3, each asked once
    assert len({e["format"] for e in drafting}) > 1  # numbered in more than one way
    records = _drafts(run)
    replies = {r["id"]: r for r in records if r["pairs"] is not None}
    pairs = [r for r in records if r["reply_id"] is not None]
    assert len(replies) == 4 and all(r["pairs"] == 3 and r["question"] is None for r in replies.values())
    assert len(pairs) == 12 and len({r["id"] for r in pairs}) == 12
    assert {r["reply_id"] for r in pairs} == set(replies)
    assert Counter(r["pair"] for r in pairs) == {1: 4, 2: 4, 3: 4}
    # The usage is the reply's, counted once; the pairs' drafts carry none.
    assert all(r["usage"]["input_tokens"] == 0 for r in pairs)
    assert all(r["usage"]["input_tokens"] > 0 for r in replies.values())
    # Every pair is a candidate of its own, vetted as any draft: each was asked its critic.
    rows = _rows(run)
    assert set(rows) == {r["id"] for r in pairs}
    assert all(row["status"] in ("kept", "rejected") for row in rows.values())
    vetted = {e["question"] for e in log if e["path"].endswith(CHAT) and e["prompt"] == "check"}
    assert vetted == {r["question"] for r in pairs}
    summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    assert summary["funnel"]["sampled"] == 12
    generation = summary["usage"]["generation"]
    assert generation["calls"] == 4
    assert generation["input_tokens"] == sum(r["usage"]["input_tokens"] for r in replies.values())


def test_resumed_after_its_replies_were_stored_it_asks_nothing(
    three_a_call: tuple[Path, list[dict[str, Any]]], module_corpus: Path, tmp_path: Path
) -> None:
    """Stopped after the replies came and before their pairs were stored: the replies are read again into
    the same drafts, and the critics' verdicts stored for them stand."""
    import shutil

    run = tmp_path / "run"
    shutil.copytree(three_a_call[0], run)
    before = _rows(run)
    kept = [line for line in (run / "drafts.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)]
    (run / "drafts.jsonl").write_text("".join(line for line in kept if '"reply_id":null' in line.replace(" ", "")))
    assert len(_drafts(run)) == 4
    with StandInLLM() as llm:
        result = _build(llm, module_corpus, run, "--per-chunk", "3")
        assert result.exit_code == 0, result.output
        assert _calls(llm) == []
    assert _rows(run) == before
    assert len(_drafts(run)) == 16
    # Another number of pairs a call is another build: the run refuses it, asking nothing.
    with StandInLLM() as llm:
        other = _build(llm, module_corpus, run, "--per-chunk", "2")
        assert _calls(llm) == []
    assert other.exit_code == 1 and "per_chunk: the run has 3, this command asks for 2" in other.output


def test_a_build_stopped_by_its_cap_asks_no_call_twice(module_corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    with StandInLLM() as llm:
        first = _build(llm, module_corpus, out, "--per-chunk", "3", "--max-tokens", "1000", "--concurrency", "1")
        assert first.exit_code == 3, first.output  # stopped by the cap, part of the way
        asked_first = Counter(e["body_sha256"] for e in _calls(llm, "generation"))
        assert 0 < len(asked_first) < 4
        llm.reset()
        second = _build(llm, module_corpus, out, "--per-chunk", "3")
        assert second.exit_code == 0, second.output
        asked_second = Counter(e["body_sha256"] for e in _calls(llm, "generation"))
    assert not set(asked_first) & set(asked_second)
    assert max((asked_first + asked_second).values()) == 1 and len(asked_first + asked_second) == 4
    assert len(_rows(out)) == 12


def test_a_reply_short_of_pairs_gives_a_failed_draft_for_each_missing_one(module_corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    with StandInLLM() as llm:
        llm.configure(max_pairs=2)
        result = _build(llm, module_corpus, out, "--per-chunk", "3")
        assert result.exit_code == 0, result.output
    pairs = {r["id"]: r for r in _drafts(out) if r["reply_id"] is not None}
    rows = _rows(out)
    missing = [row for row in rows.values() if row["status"] == "failed"]
    assert len(rows) == 12 and len(missing) == 4
    assert {row["reason"] for row in missing} == {"generation:missing_pair"}
    assert {pairs[row["id"]]["pair"] for row in missing} == {3}
    assert all(pairs[row["id"]]["failure"]["detail"] == "the reply holds 2 of the 3 pairs asked for" for row in missing)
    assert "missing_pair" in result.output  # the table says it, and what the sample counts
    assert "sampled chunks       12 drafts (3 question/answer pairs a call of a chunk" in result.output


def test_the_estimate_counts_calls_and_their_output_by_pairs(module_corpus: Path, tmp_path: Path) -> None:
    with StandInLLM() as llm:
        one = _build(llm, module_corpus, tmp_path / "one", "--dry-run")
        three = _build(llm, module_corpus, tmp_path / "three", "--dry-run", "--per-chunk", "3")
        assert _calls(llm) == []
    assert one.exit_code == three.exit_code == 0
    figures = {name: _figures(result.output) for name, result in (("one", one), ("three", three))}
    assert figures["one"]["drafts to make"] == figures["three"]["drafts to make"] == 12
    assert figures["one"]["drafting calls"] == 12 and figures["three"]["drafting calls"] == 4
    assert "3 question/answer pairs a call" in three.output
    # A call writes 60 tokens a pair: the drafts' output is the same, the critics' too (one check a draft).
    assert figures["three"]["output tokens (approx.)"] == figures["one"]["output tokens (approx.)"]
    assert figures["three"]["input tokens (approx.)"] < figures["one"]["input tokens (approx.)"]


def test_the_estimate_of_a_stopped_build_pays_for_no_stored_reply(
    three_a_call: tuple[Path, list[dict[str, Any]]], module_corpus: Path, tmp_path: Path
) -> None:
    import shutil

    run = tmp_path / "run"
    shutil.copytree(three_a_call[0], run)
    lines = (run / "drafts.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (run / "drafts.jsonl").write_text("".join(line for line in lines if '"reply_id":null' in line.replace(" ", "")))
    with StandInLLM() as llm:
        result = _build(llm, module_corpus, run, "--dry-run", "--per-chunk", "3")
    assert result.exit_code == 0, result.output
    figures = _figures(result.output)
    assert figures["drafts to make"] == 12 and figures["drafting calls"] == 0


def _figures(output: str) -> dict[str, int]:
    """The estimate's numbers by their label (`drafting calls`: 4)."""
    return {
        found.group("label"): int(found.group("number").replace(",", ""))
        for found in re.finditer(r"^[ \t]+(?P<label>[a-z][a-z .()]*?)[ \t]+(?P<number>[\d,]+)\b", output, re.MULTILINE)
    }


def test_a_build_to_a_target_counts_drafts_not_calls(module_corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    with StandInLLM() as llm:
        result = _build(llm, module_corpus, out, "--per-chunk", "3", "--target", "5", n=None)
        assert result.exit_code == 0, result.output
        calls = len(_calls(llm, "generation"))
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    rounds = json.loads((out / "rounds.json").read_text(encoding="utf-8"))
    assert summary["funnel"]["kept"] == 5
    # The first round asks for twice the target in drafts (10): 4 calls of 3 pairs, 12 drafts.
    assert rounds["drafts"] == {"factoid": 10} and calls == 4
    assert summary["target"]["drafts"] == summary["funnel"]["sampled"] == 12


def test_online_and_batch_ask_each_reply_once_and_keep_the_same(module_corpus: Path, tmp_path: Path) -> None:
    with StandInLLM() as online:
        assert _build(online, module_corpus, tmp_path / "online", "--per-chunk", "3").exit_code == 0
        online_bodies = online.requests_by_body()
    with StandInLLM(batch_polls=1) as batch:
        result = _build(batch, module_corpus, tmp_path / "batch", "--per-chunk", "3", "--batch", "--batch-poll", "0.01")
        assert result.exit_code == 0, result.output
        batched = [entry["body_sha256"] for entry in batch.log if entry["method"] == "BATCH"]
    assert sorted(batched) == sorted(online_bodies) and len(set(batched)) == len(batched)
    assert _rows(tmp_path / "batch") == _rows(tmp_path / "online")


def test_only_the_types_with_a_prompt_of_several_pairs_draft_so(tmp_path: Path) -> None:
    corpus = {"path": str(tmp_path)}
    tasks = BuildTasks.for_config(
        BuildConfig(corpus=corpus, per_chunk=3, question_types={"factoid": 50, "multi_hop": 50})
    )
    factoid, multi_hop = tasks.types["factoid"].draft, tasks.types["multi_hop"].draft
    assert isinstance(factoid, DraftTask) and factoid.per_chunk == 3 and factoid.prompt.name == "qa_generation_pairs"
    assert isinstance(multi_hop, ComposeTask) and multi_hop.part.per_chunk == 1


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--per-chunk", "3", "--question-types", "multi_hop"], "none of the --question-types of this build"),
        (["--per-chunk", "11"], "must be from 1 to 10"),
    ],
)
def test_per_chunk_where_it_cannot_apply_is_refused(
    module_corpus: Path, tmp_path: Path, flags: list[str], said: str
) -> None:
    with StandInLLM() as llm:
        result = CliRunner().invoke(
            main,
            [
                "build",
                str(module_corpus),
                "--out",
                str(tmp_path / "run"),
                "--base-url",
                llm.base_url,
                "-n",
                "3",
                *flags,
            ],
        )
        assert _calls(llm) == []
    assert result.exit_code == 1 and said in result.output and "--per-chunk" in result.output
