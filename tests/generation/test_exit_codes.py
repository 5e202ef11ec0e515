"""A run in which nothing succeeded exits non-zero with one sentence naming the commonest failure
and an example; a budget stop keeps exit code 3."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from qagen.cli.app import main
from standins.llm.server import StandInLLM


def _build(llm: StandInLLM, corpus: Path, out: Path, *extra: str) -> tuple[int, str, float]:
    args = ["build", str(corpus), "--out", str(out), "--generator-model", "openai:stand-in", "--base-url", llm.base_url]
    args += ["-n", "12", "--chunk-size", "400", "--chunk-overlap", "40", "-q", *extra]
    started = time.monotonic()
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    return result.exit_code, result.output, time.monotonic() - started


def test_a_build_against_a_server_that_fails_every_call_stops_in_seconds(
    llm: StandInLLM, corpus: Path, tmp_path: Path
) -> None:
    llm.configure(fault_rate=1.0, fault_kinds=["500"], fault_attempts=1000)
    code, output, seconds = _build(llm, corpus, tmp_path / "run", "--max-retries", "1", "--concurrency", "2")
    assert code == 1, output
    assert "error:" in output and "failed even after retries" in output and "server_error" in output
    assert "--max-failure-rate" in output  # the CLI names its flag
    assert seconds < 20
    assert len(llm.log) < 12 * 2  # it stopped instead of failing every draft


def test_a_build_in_which_no_reply_could_be_read_exits_non_zero_with_an_example(
    llm: StandInLLM, corpus: Path, tmp_path: Path
) -> None:
    llm.configure(malformed_rate=1.0)  # empty replies, refusals, cut-off and unstructured text
    code, output, _ = _build(llm, corpus, tmp_path / "run")
    assert code == 1, output
    assert "No draft could be read: all 12 generations failed (mostly generation:" in output
    assert "e.g. " in output and str(tmp_path / "run" / "candidates") in output
    assert (tmp_path / "run" / "summary.json").exists()  # written first, to look at
    # Nothing to redo on a second run, and it says the same again rather than "up to date".
    assert _build(llm, corpus, tmp_path / "run")[:2] == (code, output)


def test_a_few_failed_calls_among_successes_still_exit_zero(llm: StandInLLM, corpus: Path, tmp_path: Path) -> None:
    llm.configure(fault_rate=0.2, fault_kinds=["500"], fault_attempts=1000)
    code, output, _ = _build(llm, corpus, tmp_path / "run", "--max-retries", "0")
    assert code == 0, output


def test_an_evaluation_that_answered_nothing_exits_non_zero(llm: StandInLLM, corpus: Path, tmp_path: Path) -> None:
    assert _build(llm, corpus, tmp_path / "run")[0] == 0
    llm.configure(fault_rate=1.0, fault_kinds=["500"], fault_attempts=1000)
    args = ["evaluate", str(tmp_path / "run"), "--baseline", "bm25", "--corpus", str(corpus), "--chunk-size", "400"]
    args += ["--reader-model", "openai:stand-in", "--base-url", llm.base_url, "--out", str(tmp_path / "eval"), "-q"]
    args += ["--max-retries", "0", "--max-failure-rate", "1"]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 1, result.output
    assert "questions was answered (mostly reader_failed: server_error)" in result.output


def test_a_rejected_key_names_the_variable_it_came_from(
    llm: StandInLLM, corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    llm.configure(api_key="the-right-key")
    monkeypatch.setenv("MY_LOCAL_KEY", "a-wrong-key")
    code, output, _ = _build(llm, corpus, tmp_path / "run", "--api-key-env", "MY_LOCAL_KEY")
    assert code == 1, output
    assert "rejected the API key of 'openai:stand-in' (401); check MY_LOCAL_KEY." in output
    assert "a-wrong-key" not in output
