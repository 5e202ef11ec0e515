"""One process at a time in a run directory: a second one is refused at once, naming the first."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from qagen.cli.app import main
from qagen.errors import RunInUseError
from qagen.records import Chunk
from qagen.runs.lock import LOCK_NAME, OWNER_NAME
from qagen.runs.rundir import RunDir

N = 40


def _command(llm: Any, corpus: Path, out: Path) -> list[str]:
    return [
        sys.executable, "-m", "qagen", "build", str(corpus), "--out", str(out), "--generator-model", "openai:stand-in",
        "--base-url", llm.base_url, "--n-generations", str(N), "--seed", "7", "--chunk-size", "400",
        "--chunk-overlap", "40", "--concurrency", "4", "-q", "--vetting", "cookbook",
    ]  # fmt: skip


def _lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


@pytest.mark.slow  # two CLI processes; the refusal of every command is covered in-process below
def test_a_second_build_on_the_same_run_directory_is_refused_at_once(llm: Any, corpus: Path, tmp_path: Path) -> None:
    llm.configure(latency=0.05)
    env = {**os.environ, "OPENAI_API_KEY": "test-key"}
    out = tmp_path / "run"
    first = subprocess.Popen(_command(llm, corpus, out), env=env, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while _lines(out / "drafts.jsonl") < 3:  # well into its LLM stage
            assert first.poll() is None, first.stderr.read() if first.stderr else ""
            assert time.monotonic() < deadline
            time.sleep(0.01)
        llm.configure(latency=1.0)  # the first one is kept at work while the second starts up ...
        started = time.monotonic()
        second = subprocess.run(_command(llm, corpus, out), env=env, capture_output=True, text=True, timeout=60)
        waited = time.monotonic() - started
        assert first.poll() is None  # ... so it was refused while the first was at work, not after it
        llm.configure(latency=0.0)
        assert second.returncode == 1, second.stderr
        assert f"error: {out} is in use by another qagen process (PID {first.pid}, started " in second.stderr
        assert "wait for it to finish, or stop it, then run this command again." in second.stderr
        assert waited < 30  # its own start-up only (on a busy machine): it did not wait for the first
        _, errors = first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 0, errors
    # Each prompt was sent once (no faults are configured, so there were no retries) ...
    assert max(llm.requests_by_body().values()) == 1
    drafts = sum(1 for entry in llm.log if entry["kind"] == "generation")
    assert drafts == N
    # ... and the funnel counts every call that was made.
    summary = json.loads((out / "summary.json").read_text())
    assert summary["funnel"]["sampled"] == N
    assert summary["usage"]["generation"]["calls"] == drafts
    assert summary["usage"]["critique"]["calls"] == sum(1 for entry in llm.log if entry["kind"] == "critique")
    assert not (out / OWNER_NAME).exists()  # the note goes with the lock


@pytest.fixture()
def held(corpus: Path, tmp_path: Path) -> Iterator[Path]:
    """A chunked run directory whose lock this test process holds."""
    out = tmp_path / "run"
    args = ["stage", "chunk", str(corpus), "--out", str(out), "--chunk-size", "400", "--chunk-overlap", "40", "-q"]
    assert CliRunner().invoke(main, args).exit_code == 0
    with RunDir(out).locked():
        yield out


@pytest.mark.parametrize("command", ["chunk", "generate", "critique", "filter", "build"])
def test_every_command_that_writes_to_a_run_directory_takes_the_lock(held: Path, corpus: Path, command: str) -> None:
    before = {path.name: path.stat().st_mtime_ns for path in held.iterdir()}
    corpus_argument = [str(corpus), "--out"] if command in {"chunk", "build"} else []
    args = [command, *corpus_argument, str(held), "--chunk-size", "400", "--chunk-overlap", "40"]
    if command != "build":
        args = ["stage", *args] if command == "chunk" else ["stage", command, str(held)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1
    assert f"is in use by another qagen process (PID {os.getpid()}, started " in result.output
    assert {path.name: path.stat().st_mtime_ns for path in held.iterdir()} == before  # nothing written


def test_the_library_refuses_too_and_the_lock_is_free_again_afterwards(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with RunDir(out).locked():
        assert json.loads((out / OWNER_NAME).read_text())["pid"] == os.getpid()
        with pytest.raises(RunInUseError, match=rf"PID {os.getpid()}"), RunDir(out).locked():
            pass
    with RunDir(out).locked():  # released on the way out, even though the directory holds no run
        pass


def test_a_holder_that_has_not_written_its_note_yet_is_still_refused(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with RunDir(out).locked():
        (out / OWNER_NAME).unlink()
        with pytest.raises(RunInUseError, match="its PID is not recorded yet"), RunDir(out).locked():
            pass


def test_a_lock_left_by_a_killed_process_does_not_block(tmp_path: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    script = (
        "import os, sys; from pathlib import Path; from qagen.runs.lock import RunLock; "
        "RunLock(Path(sys.argv[1])).acquire(); os.kill(os.getpid(), 9)"
    )
    killed = subprocess.run(
        [sys.executable, "-c", script, str(out)], env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    )
    assert killed.returncode == -9
    assert (out / LOCK_NAME).exists() and (out / OWNER_NAME).exists()  # left behind, as after kill -9
    with RunDir(out).locked():  # the OS freed the lock with its process
        assert json.loads((out / OWNER_NAME).read_text())["pid"] == os.getpid()


def test_chunk_files_being_written_do_not_collide(tmp_path: Path) -> None:
    """Two writers of one run directory's chunks each write to a temporary file of their own."""
    run = RunDir(tmp_path / "run")
    chunk = Chunk(id="c1", source="a.txt", start_index=0, end_index=4, text="text")

    def chunks_with_a_second_writer_inside() -> Iterator[Chunk]:
        yield chunk
        inner = run.write_chunks(iter([chunk, chunk]))  # meanwhile, another writer starts and finishes
        assert inner.chunks == 2 and inner.path.read_text().count("\n") == 2
        run.discard_chunks(inner)
        yield chunk

    outer = run.write_chunks(chunks_with_a_second_writer_inside())
    assert outer.chunks == 2 and outer.path.read_text().count("\n") == 2
    run.discard_chunks(outer)
    assert list(run.root.iterdir()) == []


def test_temporary_chunks_of_a_killed_process_are_removed_by_the_next_one(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run")
    chunk = Chunk(id="c1", source="a.txt", start_index=0, end_index=4, text="text")
    left = run.write_chunks(iter([chunk]))  # as if its process were killed before putting them in place
    with run.locked():  # only one process writes here, so any temporary chunks found are left over
        assert not left.path.exists()
