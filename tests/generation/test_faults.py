"""Faults of the LLM server: transient ones are retried away, hard ones stop the run in one sentence.

Every build goes through the real CLI and the real OpenAI client against the stand-in server,
which injects the faults (429 with Retry-After, 500, dropped connections, timeouts; and with
`fault_attempts`, faults that outlast every retry).
"""

from __future__ import annotations

import socket
import time
from collections import Counter
from pathlib import Path
from typing import Any

import openai
import pytest
from click.testing import CliRunner, Result
from datasets import load_from_disk

from qagen.cli.app import main
from standins.llm.server import FAULT_KINDS, StandInLLM

KEY = "sk-test-PLANTED-faults-5e1d9a77c2"
PERSISTENT = 1_000_000  # `fault_attempts` beyond any retry count: the fault never clears by itself


def build(url: str, corpus: Path, out: Path, *extra: str, n: int = 30) -> Result:
    args = ["build", str(corpus), "--out", str(out), "--generator-model", "openai:stand-in", "--base-url", url]
    args += ["--n-generations", str(n), "--seed", "7", "--chunk-size", "400", "--chunk-overlap", "40", "-q"]
    return CliRunner().invoke(main, [*args, *extra])


def rows(run: Path) -> list[dict[str, Any]]:
    return list(load_from_disk(str(run / "candidates")))


def one_sentence(result: Result) -> str:
    """The run failed with exit code 1 and exactly one line on stderr, an `error:` sentence."""
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ") and lines[0].rstrip().endswith((".", "?")), lines[0]
    assert "Traceback" not in result.output
    return lines[0]


@pytest.fixture()
def clean(llm: StandInLLM, corpus: Path, tmp_path: Path) -> list[dict[str, Any]]:
    """The candidates of a fault-free build (then the server's log and counters are reset)."""
    result = build(llm.base_url, corpus, tmp_path / "clean")
    assert result.exit_code == 0, result.output
    llm.reset()
    return rows(tmp_path / "clean")


# --------------------------------------------------------------------------- transient faults


def test_fifteen_percent_transient_faults_give_the_fault_free_dataset(
    llm: StandInLLM, corpus: Path, tmp_path: Path, clean: list[dict[str, Any]]
) -> None:
    # A small Retry-After is honoured by the client; the others back off by themselves. The
    # client's --timeout is shorter than the stand-in's held-back reply, so timeouts are retried.
    llm.configure(fault_rate=0.15, fault_kinds=FAULT_KINDS, retry_after=0.05, timeout_sleep=2.0)
    result = build(llm.base_url, corpus, tmp_path / "faulty", "--timeout", "0.5", "--max-retries", "4")
    assert result.exit_code == 0, result.output
    faulty = rows(tmp_path / "faulty")
    assert not any("api_error" in row["reason"] for row in faulty)
    assert faulty == clean
    faults = Counter(entry["fault"] for entry in llm.log if entry["kind"] == "fault")
    assert set(faults) == set(FAULT_KINDS), faults  # every kind of fault really happened
    assert sum(faults.values()) >= 10


def _fail_then_recover(llm: StandInLLM, corpus: Path, out: Path) -> tuple[list[dict[str, Any]], Counter[str]]:
    """A build where a fifth of the calls fail on every attempt, then the same build after recovery."""
    llm.configure(fault_rate=0.2, fault_kinds=["500", "429"], fault_attempts=PERSISTENT, retry_after=0.01)
    result = build(llm.base_url, corpus, out, "--max-retries", "1")
    assert result.exit_code == 0, result.output  # a fifth is within the default budget of a half
    first = rows(out)
    answered = Counter(e["body_sha256"] for e in llm.log if e["status_code"] == 200)
    llm.configure(fault_rate=0.0)  # the provider recovers; the same command finishes the run
    result = build(llm.base_url, corpus, out, "--max-retries", "1")
    assert result.exit_code == 0, result.output
    return first, answered


def test_faults_outlasting_the_retries_are_failed_rows_then_redone_after_recovery(
    llm: StandInLLM, corpus: Path, tmp_path: Path, clean: list[dict[str, Any]]
) -> None:
    out = tmp_path / "run"
    first, answered = _fail_then_recover(llm, corpus, out)
    failed = [row for row in first if row["status"] == "failed"]
    assert failed and all(":api_error:" in row["reason"] for row in failed), [r["reason"] for r in failed]
    assert {row["reason"].rsplit(":", 1)[1] for row in failed} <= {"server_error", "rate_limited"}
    assert all(row["generation_raw"] or row["reason"].startswith("critique:") for row in failed)

    assert list(load_from_disk(str(out / "dataset"))) == list(load_from_disk(str(out.parent / "clean" / "dataset")))
    final = rows(out)
    assert [(r["id"], r["status"], r["question"]) for r in final] == [
        (r["id"], r["status"], r["question"]) for r in clean
    ]
    answered_again = Counter(e["body_sha256"] for e in llm.log if e["status_code"] == 200)
    assert max(answered_again.values()) == 1  # no answered call was paid for twice
    assert set(answered) < set(answered_again)


def test_after_recovery_the_candidates_equal_a_fault_free_run(
    llm: StandInLLM, corpus: Path, tmp_path: Path, clean: list[dict[str, Any]]
) -> None:
    _fail_then_recover(llm, corpus, tmp_path / "run")
    assert rows(tmp_path / "run") == clean


# --------------------------------------------------------------------------- hard faults


def test_wrong_key_stops_within_one_wave_of_calls(
    llm: StandInLLM, corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    llm.configure(api_key="right-key")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    message = one_sentence(build(llm.base_url, corpus, tmp_path / "run", "--concurrency", "4"))
    assert "401" in message and "OPENAI_API_KEY" in message
    assert 1 <= len(llm.log) <= 4  # the calls in flight, not one per chunk, and none retried


def test_unknown_model_stops_within_one_wave_of_calls(llm: StandInLLM, corpus: Path, tmp_path: Path) -> None:
    llm.configure(models=["stand-in"])
    args = ["--concurrency", "4", "--generator-model", "openai:no-such-model"]
    message = one_sentence(build(llm.base_url, corpus, tmp_path / "run", *args))
    assert "no-such-model" in message and "404" in message and "--generator-model" in message
    assert 1 <= len(llm.log) <= 4


def _closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_server_that_is_down_stops_the_run_quickly(corpus: Path, tmp_path: Path) -> None:
    started = time.monotonic()
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    message = one_sentence(build(url, corpus, tmp_path / "run", "--max-retries", "2"))
    assert time.monotonic() - started < 15
    assert "Cannot reach" in message and "--base-url" in message
    # Refused, not "timed out": the user is told what actually happened.
    assert "refused" in message, message


def test_a_server_that_drops_every_connection_stops_the_run(llm: StandInLLM, corpus: Path, tmp_path: Path) -> None:
    llm.configure(fault_rate=1.0, fault_kinds=["drop"], fault_attempts=PERSISTENT)
    message = one_sentence(build(llm.base_url, corpus, tmp_path / "run", "--max-retries", "1", "--concurrency", "4"))
    assert "Cannot reach" in message and "closed the connection" in message
    assert len(llm.log) <= 4 * 2  # each call in flight, and its one retry


def test_a_server_that_never_answers_in_time_stops_the_run(llm: StandInLLM, corpus: Path, tmp_path: Path) -> None:
    llm.configure(fault_rate=1.0, fault_kinds=["timeout"], fault_attempts=PERSISTENT, timeout_sleep=1.0)
    args = ["--max-retries", "1", "--concurrency", "4", "--timeout", "0.2"]
    message = one_sentence(build(llm.base_url, corpus, tmp_path / "run", *args))
    assert "Cannot reach" in message and "--timeout" in message
    assert len(llm.log) <= 4 * 2


def test_the_error_budget_stops_a_failing_run_and_a_rerun_completes_it(
    llm: StandInLLM, corpus: Path, tmp_path: Path, clean: list[dict[str, Any]]
) -> None:
    llm.configure(fault_rate=1.0, fault_kinds=["500"], fault_attempts=PERSISTENT)
    out = tmp_path / "run"
    message = one_sentence(build(llm.base_url, corpus, out, "--max-retries", "1", "--concurrency", "4"))
    assert "--max-failure-rate" in message and "re-run" in message
    assert "mostly server_error" in message and "500" in message  # what went wrong, not only how often
    # While no call has worked, the third failure stops the run: 3 calls (plus those in flight)
    # of two attempts each, where checking from the 20th call on took about 20.
    assert 3 * 2 <= len(llm.log) <= (3 + 4) * 2
    assert not (out / "dataset").exists()

    llm.configure(fault_rate=0.0)
    result = build(llm.base_url, corpus, out, "--max-retries", "1", "--concurrency", "4")
    assert result.exit_code == 0, result.output
    assert rows(out) == clean


def test_a_lower_failure_budget_is_honoured(llm: StandInLLM, corpus: Path, tmp_path: Path) -> None:
    # A fifth of the calls fail for good: within the default budget, over a budget of 5%.
    llm.configure(fault_rate=0.2, fault_kinds=["500"], fault_attempts=PERSISTENT)
    args = ["--max-retries", "0", "--max-failure-rate", "0.05", "--concurrency", "4"]
    message = one_sentence(build(llm.base_url, corpus, tmp_path / "run", *args))
    assert "5%" in message


# --------------------------------------------------------------------------- the stand-in's knobs


def test_fault_attempts_makes_a_fault_outlast_that_many_attempts() -> None:
    with StandInLLM(fault_rate=1.0, fault_kinds=["500"], fault_attempts=3) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        outcomes = []
        for _ in range(4):
            try:
                client.chat.completions.create(model="stand-in", messages=[{"role": "user", "content": "hi"}])
                outcomes.append(200)
            except openai.InternalServerError:
                outcomes.append(500)
        assert outcomes == [500, 500, 500, 200]
    with pytest.raises(ValueError, match="fault_attempts"):
        StandInLLM(fault_attempts=0)


def test_echo_key_quotes_the_key_in_error_bodies() -> None:
    with StandInLLM(api_key="right", echo_key=True) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="wrong-PLANTED", max_retries=0)
        with pytest.raises(openai.AuthenticationError, match="wrong-PLANTED"):
            client.chat.completions.create(model="stand-in", messages=[{"role": "user", "content": "hi"}])
