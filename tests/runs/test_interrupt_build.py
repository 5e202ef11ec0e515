"""Ctrl-C during `qagen build`: the calls on the wire get the grace period a blocking `--rag` gets
(`qagen.llm.concurrency.despite_interrupt`); their replies are recorded and nothing new is sent, so
the re-run pays only for the calls that never got an answer, and none twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from standins.llm.server import StandInLLM
from tests.batch.test_batch_build import build_args

# A shell starts background jobs with SIGINT ignored; the child takes Python's usual handler, as at a terminal.
CLI = "import signal; signal.signal(signal.SIGINT, signal.default_int_handler)\nfrom qagen.cli.app import run; run()"


def _records(run: Path) -> int:
    return sum(
        len((run / name).read_text().splitlines())
        for name in ("drafts.jsonl", "critiques.jsonl")
        if (run / name).exists()
    )


@pytest.mark.slow
def test_ctrl_c_records_the_calls_in_flight_and_the_rerun_asks_none_again(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    env = {**os.environ, "OPENAI_API_KEY": "test-key"}
    with StandInLLM(latency=1.0) as llm:
        command = [sys.executable, "-c", CLI, *build_args(llm, corpus, out, "--concurrency", "4", n=16)]
        process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        # The first four replies are in: the next four calls are on the wire (each takes 1 s).
        while len(llm.requests_by_body()) < 4:
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.02)
        time.sleep(0.3)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
        assert process.returncode == 130, stderr
        asked_before = llm.requests_by_body()
        # Every call the server answered is recorded: those on the wire at Ctrl-C too (4 more).
        assert len(asked_before) >= 8
        assert _records(out) == sum(asked_before.values())

        again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=180)
        assert again.returncode == 0, again.stderr
        asked = llm.requests_by_body()
    assert max(asked.values()) == 1, "a request was sent twice"
    assert _records(out) == sum(asked.values())
    assert len(json.loads((out / "summary.json").read_text())["funnel"]) > 0
