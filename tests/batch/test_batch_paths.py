"""Batch mode's other paths: a spending cap submits only the requests that fit and exits 3 like
online; a run stopped between a remote step (upload, submit) and its journal line uploads and
submits nothing twice when re-run; `--no-wait` exits 4 saying how to go on, and a second one while
the batch runs submits nothing new."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from qagen.cli.app import main
from qagen.runs.batch.journal import Journal
from standins.llm.server import StandInLLM
from tests.batch.test_batch_build import PRICES, build_args, journal, rows

BATCH = ("--batch", "--batch-poll", "0.01")


def invoke(args: list[str]) -> Result:
    return CliRunner().invoke(main, args, catch_exceptions=False)


def events(run: Path, kind: str) -> list[dict[str, Any]]:
    return [event for event in journal(run) if event["event"] == kind]


def kinds(llm: StandInLLM, kind: str) -> list[dict[str, Any]]:
    return [entry for entry in llm.log if entry["kind"] == kind]


def answered(llm: StandInLLM) -> Counter[str]:
    """How often each request body was answered in a batch line."""
    return Counter(entry["body_sha256"] for entry in llm.log if entry["method"] == "BATCH")


@pytest.fixture
def online(corpus: Path, tmp_path: Path) -> Path:
    out = tmp_path / "online"
    with StandInLLM() as llm:
        assert invoke(build_args(llm, corpus, out)).exit_code == 0
    return out


def assert_same_dataset(run: Path, online: Path) -> None:
    for name in ("dataset", "candidates"):
        assert rows(run, name) == rows(online, name)


# --------------------------------------------------------------------------- the spending cap


def test_a_cap_submits_only_what_fits_and_exits_3_keeping_the_finished_work(
    corpus: Path, tmp_path: Path, online: Path
) -> None:
    out = tmp_path / "batch"
    with StandInLLM() as llm:
        capped = invoke(build_args(llm, corpus, out, *PRICES, *BATCH, "--max-cost", "1"))
        assert capped.exit_code == 3, capped.output
        assert "re-run with a higher cap" in capped.output
        # The drafts' round held only the requests that fit under the cap: fewer than the sample.
        first = events(out, "uploaded")[0]
        fitted = len(first["custom_ids"])
        assert 0 < fitted < 40
        # What was answered is kept: a draft for each request of the first round, the rest undecided.
        drafts = [json.loads(line) for line in (out / "drafts.jsonl").read_text().splitlines()]
        assert len(drafts) == fitted
        summary = json.loads((out / "summary.json").read_text())
        assert summary["funnel"]["undecided"]["generation"] == 40 - fitted
        # Counted as submitted work, at batch prices: what the run spent stays under the cap.
        spent = sum(stage["cost_usd"] for stage in summary["usage"].values())
        assert 0 < spent <= 1

        # A higher cap goes on from there: nothing answered is asked again, and the dataset is online's.
        done = invoke(build_args(llm, corpus, out, *PRICES, *BATCH, "--max-cost", "1000"))
        assert done.exit_code == 0, done.output
        assert max(answered(llm).values()) == 1
    assert_same_dataset(out, online)


# --------------------------------------------------------------------------- stopped mid-step


class Killed(BaseException):
    """The process dying right after a remote step, before its journal line is written."""


@pytest.mark.parametrize("step", ["uploaded", "submitted"])
def test_stopped_between_a_remote_step_and_its_journal_line_repeats_nothing(
    corpus: Path, tmp_path: Path, online: Path, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    out = tmp_path / "batch"
    write = Journal.write

    def dies_once(self: Journal, event: dict[str, Any]) -> None:
        if event["event"] == step:
            monkeypatch.setattr(Journal, "write", write)
            raise Killed
        write(self, event)

    monkeypatch.setattr(Journal, "write", dies_once)
    with StandInLLM(batch_polls=1) as llm:
        args = build_args(llm, corpus, out, *BATCH)
        with pytest.raises(Killed):
            invoke(args)
        # The remote step was made, and the journal does not say so: only that it began.
        assert len(kinds(llm, "file_upload")) == 1
        assert len(kinds(llm, "batch_create")) == (step == "submitted")
        assert not events(out, step)
        begun = {"uploaded": "uploading", "submitted": "submitting"}[step]
        assert len(events(out, begun)) == 1

        finished = invoke(args)
        assert finished.exit_code == 0, finished.output
        # The re-run found the upload (by its name) or the batch (by its input file) on the server.
        uploads, created = kinds(llm, "file_upload"), kinds(llm, "batch_create")
        assert len(uploads) == len(created) == len(events(out, "uploaded")) == len(events(out, "submitted")) <= 4
        file_ids = [event["file_id"] for event in events(out, "uploaded")]
        assert [event["file_id"] for event in events(out, "submitted")] == file_ids == sorted(set(file_ids))
        assert max(answered(llm).values()) == 1
    assert_same_dataset(out, online)


# --------------------------------------------------------------------------- --no-wait


def test_no_wait_exits_4_and_a_second_one_submits_nothing_new(corpus: Path, tmp_path: Path, online: Path) -> None:
    out = tmp_path / "batch"
    with StandInLLM(batch_polls=1000) as llm:
        args = build_args(llm, corpus, out, *BATCH)
        first = invoke([*args, "--no-wait"])
        assert first.exit_code == 4, first.output
        (batch_id,) = [event["batch_id"] for event in events(out, "submitted")]
        assert f"1 batch(es) still running ({batch_id})" in first.output
        assert "run the same command again to collect the results" in first.output
        status = invoke(["status", str(out)]).output
        assert f"round 1: {batch_id} in_progress" in status and "run the same command again" in status

        second = invoke([*args, "--no-wait"])
        assert second.exit_code == 4, second.output
        assert (len(kinds(llm, "file_upload")), len(kinds(llm, "batch_create"))) == (1, 1)
        assert [entry["path"] for entry in kinds(llm, "batch")][-1] == f"/v1/batches/{batch_id}"  # polled again

        llm.configure(batch_polls=0)
        done = invoke(args)
        assert done.exit_code == 0, done.output
        assert max(answered(llm).values()) == 1
    assert_same_dataset(out, online)
