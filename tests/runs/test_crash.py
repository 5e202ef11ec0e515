"""`kill -9` at random moments of `build` and `evaluate`, and torn record files, then the same command.

After every kill the run directory must hold only complete records (a torn last line at most);
the re-run must finish with exactly the output of an uninterrupted run, and pay again only for the
calls that were in flight when the process died.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from datasets import load_from_disk

from qagen.cli.app import main
from standins.llm.server import StandInLLM

CONCURRENCY = 8
ENV = {**os.environ, "OPENAI_API_KEY": "test-key"}
RECORD_FILES = ("drafts.jsonl", "critiques.jsonl", "answers.jsonl", "judgements.jsonl")


def build_command(llm: StandInLLM, corpus: Path, out: Path, n: int = 40) -> list[str]:
    return [
        sys.executable, "-m", "qagen", "build", str(corpus), "--out", str(out), "--generator-model", "openai:stand-in",
        "--base-url", llm.base_url, "-n", str(n), "--seed", "7", "--chunk-size", "400", "--chunk-overlap", "40",
        "--concurrency", str(CONCURRENCY), "-q",
    ]  # fmt: skip


def evaluate_command(llm: StandInLLM, run: Path, corpus: Path, out: Path) -> list[str]:
    return [
        sys.executable, "-m", "qagen", "evaluate", str(run), "--baseline", "bm25", "--corpus", str(corpus),
        "--reader-model", "openai:stand-in", "--base-url", llm.base_url, "--out", str(out), "--chunk-size", "400",
        "--k", "3", "--concurrency", str(CONCURRENCY), "-q",
    ]  # fmt: skip


def records(folder: Path) -> int:
    return sum(_lines(folder / name) for name in RECORD_FILES)


def _lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def run_to_end(command: list[str]) -> Result:
    """The command run to its end, in this process (the kills need subprocesses; the rest is faster here)."""
    assert command[1:3] == ["-m", "qagen"]
    result = CliRunner().invoke(main, command[3:], env={"OPENAI_API_KEY": "test-key"})
    assert result.exit_code == 0 and result.exception is None, (result.output, result.exception)
    return result


def kill_when(command: list[str], ready: Callable[[], bool], *, timeout: float = 60) -> bool:
    """Start `command`, SIGKILL it as soon as `ready()`; False if it finished first."""
    process = subprocess.Popen(command, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + timeout
    try:
        while not ready():
            if process.poll() is not None:
                stderr = process.stderr.read().decode() if process.stderr else ""
                assert process.returncode == 0, stderr
                return False
            assert time.monotonic() < deadline, "the command neither finished nor reached the moment"
            time.sleep(0.002)
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        return True
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        if process.stderr:
            process.stderr.close()


def assert_only_whole_records(folder: Path) -> None:
    """Every line of every record file is a JSON object, except at most a torn, unterminated last line."""
    for name in RECORD_FILES:
        path = folder / name
        if not path.exists():
            continue
        data = path.read_bytes()
        lines = data.split(b"\n")
        for line in lines[:-1]:
            assert isinstance(json.loads(line), dict), (name, line[:80])
        # `lines[-1]` is empty after a final newline, else a line the kill cut short.


def repeated_calls(llm: StandInLLM) -> int:
    return sum(n - 1 for n in llm.requests_by_body().values())


def same_outputs(a: Path, b: Path) -> None:
    for name in ("dataset", "candidates"):
        assert list(load_from_disk(str(a / name))) == list(load_from_disk(str(b / name))), name
    summary_a, summary_b = (json.loads((run / "summary.json").read_text()) for run in (a, b))
    assert summary_a["funnel"] == summary_b["funnel"]


# --------------------------------------------------------------------------- build


@pytest.mark.slow
def test_build_killed_at_random_moments_finishes_like_an_uninterrupted_build(
    llm: StandInLLM, corpus: Path, tmp_path: Path
) -> None:
    llm.configure(latency=0.02)
    rng = random.Random(6)
    out = tmp_path / "killed"
    command = build_command(llm, corpus, out)
    kills = 0
    started = time.monotonic()
    # While starting up and chunking: a random moment in the first second and a half.
    moment = started + rng.uniform(0.3, 1.5)
    kills += kill_when(command, lambda: time.monotonic() >= moment)
    assert_only_whole_records(out)
    # While drafting and critiquing, with CONCURRENCY calls in flight: two random record counts.
    for low, high in ((5, 40), (60, 120)):
        target = rng.randint(low, high)
        kills += kill_when(command, lambda target=target: records(out) >= target)  # type: ignore[misc]
        assert_only_whole_records(out)
    # While writing the outputs: as soon as the first output directory appears.
    kills += kill_when(command, lambda: any(out.glob("*dataset*")) or any(out.glob(".candidates*")))
    assert_only_whole_records(out)
    assert kills >= 3

    run_to_end(command)
    assert repeated_calls(llm) <= kills * CONCURRENCY
    assert_only_whole_records(out)
    llm.reset()
    run_to_end(build_command(llm, corpus, tmp_path / "clean"))
    same_outputs(out, tmp_path / "clean")


def _tear_last_line(path: Path) -> bytes:
    """Cut the file's last record in half, as a crash in the middle of its write would."""
    data = path.read_bytes()
    start = data.rstrip(b"\n").rfind(b"\n") + 1
    last = data[start:]
    path.write_bytes(data[: start + len(last) // 2])
    return last


def test_torn_record_files_are_repaired_and_only_the_torn_calls_redone(
    llm: StandInLLM, corpus: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    command = build_command(llm, corpus, out, n=20)
    run_to_end(command)
    for name in ("dataset", "candidates"):
        (out / name).rename(tmp_path / name)
    (out / "summary.json").rename(tmp_path / "summary.json")
    torn = [_tear_last_line(out / "drafts.jsonl"), _tear_last_line(out / "critiques.jsonl")]
    calls = len(llm.log)

    result = run_to_end(command)
    assert len(llm.log) == calls + 2  # the two torn records, asked again; nothing else
    for name in ("drafts.jsonl", "critiques.jsonl"):
        lines = (out / name).read_bytes().split(b"\n")
        assert lines[-1] == b"" and all(json.loads(line) for line in lines[:-1])
    written = (out / "drafts.jsonl").read_bytes() + (out / "critiques.jsonl").read_bytes()
    assert all(record in written for record in torn)  # the torn records, written whole again
    same_outputs(out, tmp_path)
    assert "Traceback" not in result.output


def test_a_corrupt_record_in_the_middle_is_one_sentence(llm: StandInLLM, corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    command = build_command(llm, corpus, out, n=10)
    run_to_end(command)
    lines = (out / "drafts.jsonl").read_bytes().split(b"\n")
    lines[3] = lines[3][: len(lines[3]) // 2]  # an edited or damaged file, not a crash
    (out / "drafts.jsonl").write_bytes(b"\n".join(lines))
    result = CliRunner().invoke(main, command[3:], env={"OPENAI_API_KEY": "test-key"})
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    message = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(message) == 1 and "drafts.jsonl line 4" in message[0], result.stderr


# --------------------------------------------------------------------------- evaluate


@pytest.mark.slow
def test_evaluate_killed_mid_way_finishes_like_an_uninterrupted_evaluation(
    llm: StandInLLM, corpus: Path, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    args = ["build", str(corpus), "--out", str(run), "--generator-model", "openai:stand-in", "--base-url", llm.base_url]
    args += ["-n", "40", "--chunk-size", "400", "--chunk-overlap", "40", "-q"]
    args += ["--vetting", "cookbook", "--min-score", "1"]
    assert CliRunner().invoke(main, args, catch_exceptions=False).exit_code == 0
    questions = len(load_from_disk(str(run / "dataset")))
    assert questions >= 30
    llm.reset()
    llm.configure(latency=0.03)

    out = tmp_path / "eval"
    command = evaluate_command(llm, run, corpus, out)
    rng = random.Random(9)
    kills = 0
    for low, high in ((3, 20), (30, 55)):
        target = rng.randint(low, high)
        kills += kill_when(command, lambda target=target: records(out) >= target)  # type: ignore[misc]
        assert_only_whole_records(out)
    assert kills == 2
    # And a judgement torn by hand, as a kill in the middle of its write would leave it.
    _tear_last_line(out / "judgements.jsonl")
    run_to_end(command)
    # A question in flight has its answer and its judge call; the torn judgement is asked again.
    assert repeated_calls(llm) <= kills * CONCURRENCY * 2 + 1
    assert_only_whole_records(out)

    llm.reset()
    run_to_end(evaluate_command(llm, run, corpus, tmp_path / "clean"))
    killed = (out / "results.jsonl").read_text(encoding="utf-8").splitlines()
    clean = (tmp_path / "clean" / "results.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(killed) == questions
    assert [json.loads(line) for line in killed] == [json.loads(line) for line in clean]
    summary: dict[str, Any] = json.loads((out / "summary.json").read_text())
    assert summary["metrics"] == json.loads((tmp_path / "clean" / "summary.json").read_text())["metrics"]
