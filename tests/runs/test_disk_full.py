"""A disk that fills up during a build: one sentence with the path, and the same command finishes it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from datasets import load_from_disk

from qagen.cli.app import main
from qagen.records import Draft
from qagen.runs.store import RecordWriter

pytestmark = pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux) to fill a disk")
FULL_AFTER = 6


def _command(llm: Any, corpus: Path, out: Path) -> list[str]:
    return [
        "build", str(corpus), "--out", str(out), "--generator-model", "openai:stand-in", "--base-url", llm.base_url,
        "-n", "20", "--seed", "7", "--chunk-size", "400", "--chunk-overlap", "40", "--concurrency", "1", "-q",
    ]  # fmt: skip


def test_a_full_disk_stops_with_the_path_and_the_rerun_keeps_every_finished_record(
    llm: Any, corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "run"
    drafts_file = out / "drafts.jsonl"
    append = RecordWriter.append
    written = 0

    def filling(self: RecordWriter[Draft], record: Draft) -> int:
        # From the FULL_AFTER-th draft on, drafts.jsonl is on a full disk (the real ENOSPC of /dev/full).
        nonlocal written
        if self.path == drafts_file:
            written += 1
            if written == FULL_AFTER:
                self._handle = open("/dev/full", "ab")  # noqa: SIM115 (closed by the writer)
        return append(self, record)

    monkeypatch.setattr(RecordWriter, "append", filling)
    result = CliRunner().invoke(main, _command(llm, corpus, out))
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.stderr == (
        f"error: Cannot write {drafts_file}: the disk (or your quota) is full. Free some space and run the same "
        "command again: every finished record is kept, and only what was not written is made again.\n"
    )
    kept = drafts_file.read_text(encoding="utf-8").splitlines()
    assert len(kept) == FULL_AFTER - 1 and all(json.loads(line) for line in kept)
    drafted = len(llm.requests_by_body())

    monkeypatch.setattr(RecordWriter, "append", append)  # space freed
    again = CliRunner().invoke(main, _command(llm, corpus, out))
    assert again.exit_code == 0, again.output
    # Every draft written before the disk filled was kept; only the one not written was asked again.
    assert max(llm.requests_by_body().values()) <= 2
    assert sum(count == 2 for count in llm.requests_by_body().values()) == 1
    assert len(list(load_from_disk(str(out / "candidates")))) == 20
    assert drafted >= FULL_AFTER
