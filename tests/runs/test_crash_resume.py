"""`kill -9` in the middle of a build, then the same command: same dataset, no call paid twice (a
multi-hop draft's parts and their `supported` verdicts, each a call of its own before the composing
call, included)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from datasets import load_from_disk

CONCURRENCY = 8


def _command(llm: Any, corpus: Path, out: Path, types: str) -> list[str]:
    return [
        sys.executable, "-m", "qagen", "build", str(corpus), "--out", str(out), "--generator-model", "openai:stand-in",
        "--base-url", llm.base_url, "--n-generations", "60", "--seed", "7", "--chunk-size", "400",
        "--chunk-overlap", "40", "--concurrency", str(CONCURRENCY), "--question-types", types, "-q",
    ]  # fmt: skip


def _lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


@pytest.mark.slow
@pytest.mark.parametrize("types", ["factoid", "multi_hop"])
def test_kill_9_then_rerun_equals_an_uninterrupted_build(llm: Any, corpus: Path, tmp_path: Path, types: str) -> None:
    llm.configure(latency=0.03)
    env = {**os.environ, "OPENAI_API_KEY": "test-key"}
    out = tmp_path / "killed"
    for kill_after in (15, 60):  # killed twice: once while drafting, once deep into critiques
        process = subprocess.Popen(_command(llm, corpus, out, types), env=env, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while _lines(out / "drafts.jsonl") + _lines(out / "critiques.jsonl") < kill_after:
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            assert time.monotonic() < deadline
            time.sleep(0.005)
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        assert not (out / "dataset").exists()
    finished = subprocess.run(_command(llm, corpus, out, types), env=env, capture_output=True, text=True, timeout=120)
    assert finished.returncode == 0, finished.stderr
    repeats = {body: n for body, n in llm.requests_by_body().items() if n > 1}
    # Only calls in flight at each kill may have been sent again.
    assert sum(n - 1 for n in repeats.values()) <= 2 * CONCURRENCY

    llm.reset()
    clean = subprocess.run(
        _command(llm, corpus, tmp_path / "clean", types), env=env, capture_output=True, text=True, timeout=120
    )
    assert clean.returncode == 0, clean.stderr
    for name in ("dataset", "candidates"):
        assert list(load_from_disk(str(out / name))) == list(load_from_disk(str(tmp_path / "clean" / name)))
