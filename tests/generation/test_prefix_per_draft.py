"""One prefix per draft (issue 29, must-show 3), read from the stand-in server's request log: with the
shared prefix on (`build.shared_prefix`), for every draft of a build, every later call about it begins
with the same text as its drafting call, at least as long as its passages, which are sent once (a
multi-hop draft's composing call reads no passage: its later calls share the opening of the first of
them); the calls about one draft go out one after another; a critic meant to read less than every passage (one
passage of two, the question alone) is shown no more. Off, the default, no draft's request opens with
its passages.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from datasets import load_from_disk

from qagen.cli.app import main
from standins.llm.log import LogEntry
from standins.llm.server import StandInLLM

READ_EVERY_PASSAGE = {"supported", "reader", "groundedness", "needs_both"}
READ_LESS = {"clear", "standalone", "relevance", "first_alone", "second_alone"}


SHARED = ("--set", "build.shared_prefix=true")


def _build(corpus: Path, out: Path, *extra: str) -> tuple[list[dict[str, Any]], list[LogEntry]]:
    """The build's candidate rows and the chat requests the server answered, in the order they came."""
    with StandInLLM(log_prompts=True) as llm:
        args = ["build", str(corpus), "--out", str(out), "--generator-model", "openai:stand-in"]
        args += [
            "--base-url",
            llm.base_url,
            "--seed",
            "5",
            "--chunk-size",
            "400",
            "--chunk-overlap",
            "40",
            "-q",
            *extra,
        ]
        result = CliRunner().invoke(main, args, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        log = [entry for entry in llm.log if entry["method"] == "POST" and entry["messages"] is not None]
    return list(load_from_disk(str(out / "candidates"))), log


def _shared(one: str, other: str) -> int:
    """How many characters the two texts share at their start."""
    return next((at for at, (a, b) in enumerate(zip(one, other, strict=False)) if a != b), min(len(one), len(other)))


def _passages(row: dict[str, Any]) -> list[str]:
    """A row's passages (a build of factoids alone has the single `context` column)."""
    return list(row.get("contexts") or [row["context"]])


def _calls_about(row: dict[str, Any], log: list[LogEntry]) -> tuple[int, list[int]]:
    """The positions in the log of the row's drafting call (a multi-hop draft's: its composing call, which
    reads no passage) and of the later calls about its draft."""
    composed = row.get("question_type") == "multi_hop"
    (drafting,) = [
        at
        for at, entry in enumerate(log)
        if entry["kind"] == "generation"
        and entry["reply"] == row["generation_raw"]
        and (composed or all(passage in (entry["messages"] or "") for passage in _passages(row)))
    ]
    later = [
        at for at, entry in enumerate(log) if entry["kind"] != "generation" and entry["question"] == row["question"]
    ]
    assert all(at > drafting for at in later)
    return drafting, later


def test_every_later_call_about_a_draft_begins_with_its_drafting_calls_passage(corpus: Path, tmp_path: Path) -> None:
    # A default build, one call at a time: the server's single prompt cache sees each draft's calls in a row.
    rows, log = _build(corpus, tmp_path / "run", "-n", "12", "--concurrency", "1", *SHARED)
    asked = [row for row in rows if row["question"] is not None]
    checked = 0
    for row in asked:
        (passage,) = _passages(row)
        drafting, later = _calls_about(row, log)
        opening = log[drafting]["messages"] or ""
        assert opening.count(passage) == 1
        for at in later:
            sent = log[at]["messages"] or ""
            assert _shared(opening, sent) >= len(passage), (log[at]["criterion"], sent[:200])
            assert sent.count(passage) == 1  # sent once, not again in the prompt's own place for it
            checked += 1
        # One after another: nothing about another draft between its drafting call and its last call.
        assert later == list(range(drafting + 1, drafting + 1 + len(later)))
    assert checked >= len(asked) // 2  # most drafts reached a later call (the check `supported`)
    assert len(log) == len(asked) + checked  # every call of the build is one of those
    # Off (the default), the drafting prompt opens with its own wording, the passage in its place.
    plain_rows, plain_log = _build(corpus, tmp_path / "plain", "-n", "12", "--concurrency", "1")
    row = next(row for row in plain_rows if row["question"] is not None)
    drafting, _ = _calls_about(row, plain_log)
    sent = plain_log[drafting]["messages"] or ""
    assert not sent.startswith("<context>") and sent.count(row["context"]) == 1


@pytest.mark.parametrize("vetting", ["checks", "cookbook"])
def test_calls_that_read_every_passage_share_them_and_the_others_are_shown_no_more(
    corpus: Path, tmp_path: Path, vetting: str
) -> None:
    rows, log = _build(
        corpus, tmp_path / "run", "-n", "12", "--question-types", "factoid=50,multi_hop=50",
        "--vetting", vetting, "--all-critics", "--concurrency", "2", *SHARED,
    )  # fmt: skip
    seen: dict[str, set[bool]] = {}
    for row in rows:
        if row["question"] is None:
            continue
        drafting, later = _calls_about(row, log)
        opening = log[drafting]["messages"] or ""
        if row["question_type"] == "multi_hop":  # the composing call reads no passage; its critics open alike
            assert not any(passage in opening for passage in _passages(row))
            opening = next(
                text for at in later if all((text := log[at]["messages"] or "").count(p) == 1 for p in _passages(row))
            )
        for at in later:
            sent, criterion = log[at]["messages"] or "", str(log[at]["criterion"])
            every = all(sent.count(passage) == 1 for passage in _passages(row))
            seen.setdefault(criterion, set()).add(every)
            if every:
                assert _shared(opening, sent) >= sum(len(passage) for passage in _passages(row)), criterion
            else:
                assert criterion in READ_LESS, criterion
                assert sum(passage in sent for passage in _passages(row)) <= 1, criterion
    readers = {criterion for criterion, every in seen.items() if every == {True}}
    assert readers and readers <= READ_EVERY_PASSAGE, seen
    assert {criterion for criterion, every in seen.items() if every == {False}} <= READ_LESS, seen


def test_a_run_keeps_the_framing_it_was_made_with(corpus: Path, tmp_path: Path) -> None:
    """Record keys leave the framing out, so a resumed run would mix both framings: a changed value is
    refused, as a changed prompt is; a run made before the setting existed was made without it."""
    out = tmp_path / "run"
    (tmp_path / "qagen.toml").write_text("[build]\nshared_prefix = true\n", encoding="utf-8")
    with StandInLLM() as llm:
        args = ["build", str(corpus), "--out", str(out), "--generator-model", "openai:stand-in"]
        args += ["--base-url", llm.base_url, "--seed", "5", "--chunk-size", "400", "-n", "4", "-q"]
        assert CliRunner().invoke(main, args).exit_code == 0
        for shared in (SHARED, ("--config", str(tmp_path / "qagen.toml"))):
            refused = CliRunner().invoke(main, [*args, *shared])
            assert refused.exit_code != 0 and "shared_prefix: the run has False, this command asks for True" in (
                refused.output
            ), refused.output
        run_file = out / "run.json"
        stored = json.loads(run_file.read_text(encoding="utf-8"))
        assert stored["fingerprint"]["shared_prefix"] is False
        del stored["fingerprint"]["shared_prefix"]
        run_file.write_text(json.dumps(stored), encoding="utf-8")
        assert "shared_prefix: the run has False" in CliRunner().invoke(main, [*args, *SHARED]).output
        calls = len(llm.log)
        assert CliRunner().invoke(main, args).exit_code == 0  # resumed as it was made: nothing asked again
        assert len(llm.log) == calls
