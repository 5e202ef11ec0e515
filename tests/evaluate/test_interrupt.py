"""Ctrl-C always ends an evaluation, even while a sync `--rag` function blocks and ignores it.

The function runs in a daemon thread; after Ctrl-C it gets the grace period to return, then its
question is recorded as failed (`interrupted: ...`) and the process exits 130, every file intact.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import qagen
from qagen.evaluate.api import evaluate
from qagen.evaluate.config import EvalConfig
from qagen.evaluate.records import RagOutput
from qagen.evaluate.systems.callable import CallableSystem
from qagen.evaluate.systems.protocol import AnswerInterrupted

ROOT = Path(qagen.__file__).resolve().parent.parent
QUESTIONS = [f"What is item {n}?" for n in range(6)]
FAST = {"What is item 0?", "What is item 1?"}

# The user's module: two questions answered at once, the others block for an hour and ignore
# everything (time.sleep in a thread cannot be interrupted). Each slow call leaves a marker file.
SLOW_RAG = f"""
import pathlib, time

def answer(question):
    if question in {sorted(FAST)!r}:
        return {{"answer": "Fast: " + question, "contexts": [question]}}
    pathlib.Path("started", question.replace(" ", "_").strip("?")).touch()
    time.sleep(3600)
    return "too late"
"""


def _write_inputs(folder: Path) -> Path:
    (folder / "started").mkdir()
    (folder / "slow_rag.py").write_text(SLOW_RAG)
    testset = folder / "set.jsonl"
    testset.write_text("".join(json.dumps({"question": q, "answer": f"Item {q[-2]}."}) + "\n" for q in QUESTIONS))
    return testset


# A shell starts background jobs with SIGINT ignored, and Python then installs no handler: the
# child first takes Python's usual one, as when a user runs the command at a terminal.
SIGINT_AS_AT_A_TERMINAL = "import signal; signal.signal(signal.SIGINT, signal.default_int_handler)\n"
CLI = SIGINT_AS_AT_A_TERMINAL + "from qagen.cli.app import run; run()"
# A notebook: an event loop already runs in the main thread when `evaluate` is called, so it runs
# its own loop in another thread, and the interrupt arrives as KeyboardInterrupt in this one.
NOTEBOOK = (
    SIGINT_AS_AT_A_TERMINAL
    + """
import asyncio, sys
from qagen.evaluate.api import evaluate
from qagen.evaluate.config import EvalConfig
from qagen.evaluate.config import EvalConfig
import slow_rag

async def cell():
    config = EvalConfig(testset="set.jsonl", metrics=["text"], interrupt_grace=float(sys.argv[1]))
    evaluate(config, slow_rag.answer, "eval", progress=False)

try:
    asyncio.new_event_loop().run_until_complete(cell())
except KeyboardInterrupt:
    sys.exit(130)
"""
)


def _wait_for(condition: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _results(eval_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (eval_dir / "results.jsonl").read_text(encoding="utf-8").splitlines()]


def _interrupt(command: list[str], folder: Path, grace: float) -> tuple[int, str, float]:
    """Run `command` in `folder`; once the fast rows are written and the slow calls block, send
    SIGINT. (exit code, stderr, seconds from SIGINT to exit)."""
    out = folder / "eval"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(command, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        # Both fast rows written, and all four slow calls blocking in their threads.
        written = out / "results.jsonl"
        _wait_for(lambda: written.exists() and written.read_text().count("\n") == 2, 60, "the fast rows")
        _wait_for(lambda: len(list((folder / "started").iterdir())) == 4, 60, "the slow calls")
        process.send_signal(signal.SIGINT)
        interrupted = time.monotonic()
        _, stderr = process.communicate(timeout=grace + 20)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return process.returncode, stderr.decode(), time.monotonic() - interrupted


def _check_interrupted_run(out: Path, grace: float) -> None:
    """The fast rows answered, the blocked ones recorded as interrupted, every line whole JSON."""
    rows = {row["question"]: row for row in _results(out)}
    assert set(rows) == set(QUESTIONS)
    for question, row in rows.items():
        if question in FAST:
            assert (row["generated_answer"], row["answer_error"]) == (f"Fast: {question}", "")
        else:
            assert row["generated_answer"] is None
            assert row["answer_error"] == f"interrupted: no reply within {grace:g} s of the interrupt"
    answers = [json.loads(line) for line in (out / "answers.jsonl").read_text().splitlines()]
    assert (
        sorted(a["output"]["error"] or "answered" for a in answers)
        == ["answered"] * 2 + [f"interrupted: no reply within {grace:g} s of the interrupt"] * 4
    )
    assert not (out / "summary.json").exists()  # the run did not finish, and does not pretend to


@pytest.mark.slow
@pytest.mark.parametrize("grace", [2.0])
def test_ctrl_c_ends_the_cli_run_within_the_grace_period(tmp_path: Path, grace: float) -> None:
    testset = _write_inputs(tmp_path)
    out = tmp_path / "eval"
    command = [
        sys.executable, "-c", CLI, "evaluate", str(testset), "--rag", "slow_rag:answer", "--metrics", "text",
        "--out", str(out), "-q", "--interrupt-grace", str(grace),
    ]  # fmt: skip
    code, stderr, elapsed = _interrupt(command, tmp_path, grace)
    assert code == 130, stderr
    assert "interrupted: finished calls are saved" in stderr
    assert grace <= elapsed < grace + 3, elapsed  # waited the grace period, then not much longer
    _check_interrupted_run(out, grace)

    # Resumed with a function that answers: only the interrupted questions are asked again.
    (tmp_path / "slow_rag.py").write_text("def answer(question):\n    return 'Now: ' + question\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    resumed = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr.decode()
    answers_now = {row["question"]: row["generated_answer"] for row in _results(out)}
    assert answers_now == {q: (f"Fast: {q}" if q in FAST else f"Now: {q}") for q in QUESTIONS}


@pytest.mark.slow
def test_ctrl_c_ends_a_run_started_where_an_event_loop_already_runs(tmp_path: Path) -> None:
    _write_inputs(tmp_path)
    grace = 1.0
    code, stderr, elapsed = _interrupt([sys.executable, "-c", NOTEBOOK, str(grace)], tmp_path, grace)
    assert code == 130, stderr
    # The interpreter's teardown (datasets, pyarrow) comes on top of the grace period here.
    assert grace <= elapsed < grace + 4, elapsed
    _check_interrupted_run(tmp_path / "eval", grace)


# --------------------------------------------------------------------------- in process


async def _cancel_after(system: CallableSystem, question: str, delay: float) -> tuple[RagOutput, float]:
    task = asyncio.ensure_future(system.answer(question))
    await asyncio.sleep(delay)
    task.cancel()
    cancelled = time.monotonic()
    with pytest.raises(AnswerInterrupted) as stopped:
        await task
    return stopped.value.output, time.monotonic() - cancelled


def test_a_call_that_returns_within_the_grace_period_keeps_its_answer() -> None:
    def slowish(question: str) -> dict[str, Any]:
        time.sleep(0.4)
        return {"answer": f"late answer to {question}", "contexts": ["c"]}

    output, waited = asyncio.run(_cancel_after(CallableSystem(slowish, interrupt_grace=5), "Q?", 0.1))
    assert output.answer == "late answer to Q?" and not output.error
    assert waited < 2  # not the whole grace period: it ended when the call did


def test_a_call_that_never_returns_is_abandoned_after_the_grace_period() -> None:
    release = threading.Event()

    def hung(question: str) -> str:
        release.wait()
        return "never seen"

    try:
        output, waited = asyncio.run(_cancel_after(CallableSystem(hung, interrupt_grace=0.5), "Q?", 0.1))
    finally:
        release.set()
    assert output == RagOutput(answer=None, error="interrupted: no reply within 0.5 s of the interrupt")
    assert 0.5 <= waited < 1.5


def test_a_call_that_fails_within_the_grace_period_records_its_error() -> None:
    def failing(question: str) -> str:
        time.sleep(0.3)
        raise ValueError("index missing")

    output, _ = asyncio.run(_cancel_after(CallableSystem(failing, interrupt_grace=5), "Q?", 0.1))
    assert output.answer is None and output.error == "system_error: ValueError: index missing"


def test_a_negative_grace_period_is_refused() -> None:
    from qagen.errors import ConfigError

    with pytest.raises(ConfigError, match="`interrupt_grace` must be 0 or more seconds"):
        CallableSystem(lambda q: q, interrupt_grace=-1)


def test_sync_functions_still_run_side_by_side(tmp_path: Path) -> None:
    # Own threads instead of the event loop's executor: questions are still answered concurrently.
    testset = tmp_path / "set.jsonl"
    testset.write_text("".join(json.dumps({"question": f"Q{n}?", "answer": "A."}) + "\n" for n in range(8)))
    barrier = threading.Barrier(8, timeout=10)

    def together(question: str) -> str:
        barrier.wait()  # breaks (and fails the call) unless all eight are in flight at once
        return "A."

    stats = evaluate(
        EvalConfig(testset=testset, metrics=["text"], concurrency=8), together, tmp_path / "eval", progress=False
    )
    assert stats.answered == 8
