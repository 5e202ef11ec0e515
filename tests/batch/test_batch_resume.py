"""Batch mode across kills and failures: a killed run polls the same batches when re-run and
uploads nothing twice; error lines and an expired batch end as recorded failures that the next
run asks again, and nothing is lost on the way."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from qagen.cli.app import main
from qagen.runs.batch.journal import Journal
from standins.llm.server import StandInLLM
from tests.batch.test_batch_build import build_args, journal, rows


def _events(run: Path, kind: str) -> list[dict[str, Any]]:
    return [event for event in journal(run) if event["event"] == kind] if (run / "batches.jsonl").exists() else []


def _online(corpus: Path, out: Path) -> None:
    with StandInLLM() as online:
        assert CliRunner().invoke(main, build_args(online, corpus, out), catch_exceptions=False).exit_code == 0


@pytest.mark.slow
def test_killed_while_waiting_then_rerun_polls_the_same_batches(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "batch"
    env = {**os.environ, "OPENAI_API_KEY": "test-key"}
    with StandInLLM(batch_polls=7) as llm:
        command = [sys.executable, "-m", "qagen", *build_args(llm, corpus, out, "--batch", "--batch-poll", "0.05")]
        process = subprocess.Popen(command, env=env, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while len([e for e in llm.log if e["kind"] == "batch"]) < 3:  # submitted, and polled a few times
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            assert time.monotonic() < deadline
            time.sleep(0.02)
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        (submitted,) = _events(out, "submitted")
        polled_before = {e["path"] for e in llm.log if e["kind"] == "batch"}
        assert polled_before == {f"/v1/batches/{submitted['batch_id']}"}
        cut = len(llm.log)

        finished = subprocess.run(command, env=env, capture_output=True, text=True, timeout=180)
        assert finished.returncode == 0, finished.stderr
        after = llm.log[cut:]
    # The re-run polled the batch of the killed run, and uploaded and created only the later rounds.
    first_poll = next(e for e in after if e["kind"] == "batch")
    assert first_poll["path"] == f"/v1/batches/{submitted['batch_id']}"
    uploads = [e for e in llm.log if e["kind"] == "file_upload"]
    created = [e for e in llm.log if e["kind"] == "batch_create"]
    assert len(uploads) == len(created) == len(_events(out, "uploaded")) <= 4
    lines = Counter(e["body_sha256"] for e in llm.log if e["method"] == "BATCH")
    assert max(lines.values()) == 1  # no request was answered (paid) twice
    _online(corpus, tmp_path / "online")
    for name in ("dataset", "candidates"):
        assert rows(out, name) == rows(tmp_path / "online", name)


def test_error_lines_and_an_expired_batch_are_failures_that_the_next_run_retries(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "batch"
    with StandInLLM(batch_failure_rate=0.2, batch_expire=1) as llm:
        args = build_args(llm, corpus, out, "--batch", "--batch-poll", "0.01")
        first = CliRunner().invoke(main, args, catch_exceptions=False)
        assert first.exit_code == 0, first.output
        summary = json.loads((out / "summary.json").read_text())
        funnel = summary["funnel"]
        candidates = rows(out, "candidates")
        reasons = Counter(row["reason"] for row in candidates if row["status"] == "failed")
        # The drafts' batch expired half-way: those requests, and the error lines, are failed drafts.
        assert reasons["generation:api_error:batch_expired"] == 20
        assert reasons["generation:api_error:server_error"] > 0
        assert funnel["generation_failed"]["api_error:batch_expired"] == 20
        # Nothing lost: every sampled chunk is kept, rejected, a duplicate, too long or failed.
        failed = sum(funnel["generation_failed"].values()) + sum(funnel["critique_failed"].values())
        assert (
            funnel["sampled"]
            == 40
            == funnel["kept"] + funnel["rejected"] + funnel["duplicates"] + funnel["too_long"] + failed
        )
        assert Counter(row["status"] for row in candidates)["failed"] == failed

        # Each re-run asks again exactly the requests that failed (a retried request may fail once
        # itself: the stand-in's error lines hit a body the first time it is in a batch).
        for _ in range(6):  # a draft and each of its critics may fail once
            answered = Counter(e["body_sha256"] for e in llm.log if e["method"] == "BATCH")
            failed_before = [row for row in rows(out, "candidates") if row["status"] == "failed"]
            if not failed_before:
                break
            uploaded_before = len(_events(out, "uploaded"))
            again = CliRunner().invoke(main, args, catch_exceptions=False)
            assert again.exit_code == 0, again.output
            first_round = _events(out, "uploaded")[uploaded_before]
            assert len(first_round["custom_ids"]) == len(failed_before)
            asked = Counter(e["body_sha256"] for e in llm.log if e["method"] == "BATCH") - answered
            assert set(first_round["custom_ids"]) <= set(asked)
        assert not [row for row in rows(out, "candidates") if row["status"] == "failed"]
        # No successful answer was asked for twice.
        ok = Counter(e["body_sha256"] for e in llm.log if e["method"] == "BATCH" and e["status_code"] == 200)
        assert max(ok.values()) == 1
    _online(corpus, tmp_path / "online")
    for name in ("dataset", "candidates"):
        assert rows(out, name) == rows(tmp_path / "online", name)


def test_a_batch_journal_line_that_is_not_utf8_is_read_as_a_torn_one(tmp_path: Path) -> None:
    journal = tmp_path / "batches.jsonl"
    journal.write_bytes(b'{"event": "batched", "ids": ["a"]}\n{"event": "batched", "ids": ["caf\xe9"]}\n')
    # Its rule for any line it cannot read (a kill mid-write): that step is redone; the others stand.
    assert Journal(tmp_path).batched == {"a"}
