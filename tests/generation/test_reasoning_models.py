"""Replies of reasoning models and length-limited servers, end to end through the real client: the
recorded scores and questions are the final answers', never the decoys a model wrote while
thinking; a reply cut at the output cap is never kept; an absurdly long reply never reaches the
run directory whole."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from datasets import load_from_disk

from qagen.cli.app import main
from qagen.llm.normalise import MAX_REPLY_CHARS
from qagen.records import Critique, Draft
from qagen.runs.store import RecordLog
from standins.llm.server import StandInLLM


def _build(llm: StandInLLM, corpus: Path, out: Path, *extra: str) -> None:
    args = ["build", str(corpus), "--out", str(out), "--generator-model", "openai:stand-in", "--base-url", llm.base_url]
    args += ["-n", "40", "--chunk-size", "400", "--chunk-overlap", "40", "--all-critics", "-q", *extra]
    args += ["--vetting", "cookbook"]  # the decoy ratings in the thinking are the 1-5 critics' own
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output


def _records(out: Path) -> tuple[list[Draft], list[Critique]]:
    drafts = list(RecordLog(out / "drafts.jsonl", Draft).load().values())
    return drafts, list(RecordLog(out / "critiques.jsonl", Critique).load().values())


def _sent(llm: StandInLLM) -> dict[str, dict[str, Any]]:
    """What the server sent, by the reply's content (records keep it verbatim)."""
    return {entry["reply"]: dict(entry) for entry in llm.log if entry["reply"] is not None}


@pytest.mark.parametrize("tag", ["think", "thinking"])
def test_thinking_inline_is_set_apart_and_its_decoys_never_read(
    llm: StandInLLM, corpus: Path, tmp_path: Path, tag: str
) -> None:
    llm.configure(think_rate=0.3, think_tag=tag)
    _build(llm, corpus, tmp_path / "run")
    drafts, critiques = _records(tmp_path / "run")
    sent = _sent(llm)
    thinking = 0
    for critique in critiques:
        entry = sent[critique.raw or ""]
        assert critique.ok and critique.score == entry["score"], (critique.raw, entry)
        if entry["thinking"] == "inline":
            thinking += 1
            assert entry["decoy_score"] != entry["score"] and critique.reasoning
            assert f"Total rating: {entry['decoy_score']}" in critique.reasoning  # kept, never read
    for draft in drafts:
        entry = sent[draft.raw or ""]
        assert draft.ok, draft
        if entry["thinking"] == "inline":
            thinking += 1
            assert draft.question != entry["decoy_question"] and draft.answer != entry["decoy_answer"]
            assert draft.reasoning is not None and entry["decoy_question"] in draft.reasoning
    assert thinking >= 20  # a good share of the ~160 replies really thought first


def test_reasoning_content_is_kept_beside_the_reply(llm: StandInLLM, corpus: Path, tmp_path: Path) -> None:
    llm.configure(reasoning_content_rate=0.3)
    _build(llm, corpus, tmp_path / "run")
    drafts, critiques = _records(tmp_path / "run")
    # Equal reply texts (two critiques saying the same) make a reply no key: compare the pairs.
    sent = sorted(
        (entry["reply"], entry["reasoning_content"]) for entry in llm.log if entry["thinking"] == "reasoning_content"
    )
    kept = sorted((record.raw, record.reasoning) for record in [*drafts, *critiques] if record.reasoning)
    assert len(sent) >= 15 and kept == sent
    replies = _sent(llm)
    assert all(record.ok for record in [*drafts, *critiques])
    assert all(critique.score == replies[critique.raw or ""]["score"] for critique in critiques)


def test_replies_cut_at_the_output_cap_are_never_kept(llm: StandInLLM, corpus: Path, tmp_path: Path) -> None:
    llm.configure(truncate_rate=0.25, unterminated_think_rate=0.1)
    out = tmp_path / "run"
    _build(llm, corpus, out)
    drafts, critiques = _records(out)
    sent = _sent(llm)
    cut = 0
    for record in [*drafts, *critiques]:
        entry = sent[record.raw or ""]
        if entry["finish_reason"] == "length":
            cut += 1
            assert record.reason == "truncated" and record.failure is not None, record
            assert not record.failure.retryable  # the same cap would cut it again
        else:
            assert record.reason != "truncated"
    assert cut >= 15
    kept = list(load_from_disk(str(out / "dataset")))
    cut_replies = {reply for reply, entry in sent.items() if entry["finish_reason"] == "length"}
    assert kept and all(row["question"] not in reply for row in kept for reply in cut_replies)
    funnel = json.loads((out / "summary.json").read_text())["funnel"]
    assert funnel["generation_failed"].get("truncated", 0) > 0


def test_the_default_output_cap_stops_a_runaway_reply(llm: StandInLLM, corpus: Path, tmp_path: Path) -> None:
    llm.configure(huge_reply_bytes=2_000_000, huge_rate=0.1)
    out = tmp_path / "run"
    _build(llm, corpus, out)
    runaway = [entry for entry in llm.log if entry["huge_bytes"]]
    # The server honours the default cap of 2048 tokens: a runaway reply ends there, as `truncated`.
    assert runaway and all(entry["finish_reason"] == "length" for entry in runaway)
    assert all(len(entry["reply"] or "") <= 2048 * 4 for entry in runaway)
    drafts, critiques = _records(out)
    assert sum(record.reason == "truncated" for record in [*drafts, *critiques]) == len(runaway)


def test_a_2_mb_reply_never_reaches_the_run_directory_whole(llm: StandInLLM, corpus: Path, tmp_path: Path) -> None:
    llm.configure(huge_reply_bytes=2_000_000, huge_rate=0.1)
    out = tmp_path / "run"
    _build(llm, corpus, out, "--max-output-tokens", "10000000")  # a server that lets it through
    huge = [entry for entry in llm.log if entry["huge_bytes"]]
    assert huge  # the server really sent some
    drafts, critiques = _records(out)
    assert all(len(record.raw or "") < MAX_REPLY_CHARS + 200 for record in [*drafts, *critiques])
    assert any("[qagen: reply cut here" in (record.raw or "") for record in [*drafts, *critiques])
    runs_on = 0
    for row in load_from_disk(str(out / "candidates")):
        assert len(row["generation_raw"] or "") < MAX_REPLY_CHARS + 200
        # The cut reply's last field runs on: the answer (no factoid: rejected before any critic), or
        # the quoted evidence (no sentence of the chunk: never taken for evidence; the answer's words
        # decide, as for any quote the chunk does not hold).
        if len(row["answer"] or "") > 300:
            runs_on += 1
            assert (row["status"], row["reason"], row["standalone_raw"]) == ("rejected", "answer_too_long", None)
        elif len(row["evidence_quote"] or "") > 1000:
            runs_on += 1
            assert row["evidence_match"] in ("answer_words", "not_found"), row["evidence_match"]
            if row["evidence_match"] == "not_found":
                assert (row["status"], row["reason"], row["standalone_raw"]) == ("rejected", "evidence_not_found", None)
    assert runs_on > 0
    assert all(len(row["answer"]) <= 300 for row in load_from_disk(str(out / "dataset")))
    on_disk = sum(path.stat().st_size for path in out.rglob("*") if path.is_file())
    assert on_disk < 20 * MAX_REPLY_CHARS * 4  # about what the cut replies take, nowhere near 2 MB each
