"""Append-only record logs survive a crash mid-write."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qagen.errors import CorruptRecordError, QagenError, RunWriteError
from qagen.failures import Failure, FailureKind
from qagen.records import Draft
from qagen.runs.store import Dependents, RecordLog, RecordWriter, record_key, write_json_atomic


def _draft(i: int, failed: bool = False) -> Draft:
    failure = Failure.of(FailureKind.PARSE_FAILURE) if failed else None
    return Draft(id=f"d{i}", chunk_id=f"c{i}", model="m", prompt_hash="p", failure=failure, question="q", answer="a")


def test_records_round_trip_and_later_records_win(tmp_path: Path) -> None:
    log = RecordLog(tmp_path / "drafts.jsonl", Draft)
    with log.writer() as out:
        out.append(_draft(1, failed=True))
        out.append(_draft(2))
        out.append(_draft(1))
    records = log.load()
    assert set(records) == {"d1", "d2"} and records["d1"].ok


def test_a_torn_last_line_is_cut_off_and_the_rest_kept(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "drafts.jsonl"
    log = RecordLog(path, Draft)
    with log.writer() as out:
        out.append(_draft(1))
        out.append(_draft(2))
    whole = path.read_bytes()
    path.write_bytes(whole + _draft(3).model_dump_json().encode()[:25])  # killed mid-write
    assert set(log.load()) == {"d1", "d2"}
    assert path.read_bytes() == whole and log.repaired_bytes == 25
    assert capsys.readouterr().err == (
        f"{path}: the last line was cut short by an interrupted write (25 bytes); it was removed, and its call is "
        "made again.\n"
    )
    with log.writer() as out:  # appending after the repair yields valid lines again
        out.append(_draft(3))
    assert set(log.load()) == {"d1", "d2", "d3"}


def test_a_complete_last_line_without_newline_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "drafts.jsonl"
    path.write_text(_draft(1).model_dump_json(), encoding="utf-8")
    assert set(RecordLog(path, Draft).load()) == {"d1"}


def test_a_corrupt_middle_line_is_an_error_not_silence(tmp_path: Path) -> None:
    path = tmp_path / "drafts.jsonl"
    path.write_text(_draft(1).model_dump_json() + '\n{"id": 3}\n' + _draft(2).model_dump_json() + "\n")
    with pytest.raises(QagenError, match="line 2"):
        RecordLog(path, Draft).load()


def test_a_damaged_line_names_the_file_the_line_and_how_to_go_on(tmp_path: Path) -> None:
    path, critiques = tmp_path / "drafts.jsonl", tmp_path / "critiques.jsonl"
    damaged = _draft(2).model_dump_json()[:40]  # a write cut short, then more records after it
    path.write_text("\n".join([_draft(1).model_dump_json(), damaged, _draft(3).model_dump_json()]) + "\n")
    log = RecordLog(path, Draft, dependents=Dependents(critiques, "draft_id"))
    with pytest.raises(CorruptRecordError) as caught:
        log.load()
    assert str(caught.value) == (
        f"{path} line 2 is damaged (a write cut short by a crash or a full disk, or an edit). To go on, delete that "
        f"line (e.g. `sed -i '2d' {path}`) and run the same command again: the record it held is asked for again, "
        f"every other one is kept. The record made again may differ, so delete also the lines of {critiques} made "
        'from it (those with "draft_id":"d2").'
    )
    # The way forward works: without the line, the other records load, and the file can grow again.
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:1] + lines[2:]) + "\n")
    assert set(log.load()) == {"d1", "d3"}


def test_a_complete_last_line_that_is_no_record_is_not_dropped(tmp_path: Path) -> None:
    """Only a last line without its newline can be a torn write; a whole line that is no record is an error."""
    path = tmp_path / "drafts.jsonl"
    text = _draft(1).model_dump_json() + '\n{"id":"d2","chunk_id":"c2"}\n'
    path.write_text(text)
    with pytest.raises(CorruptRecordError) as caught:
        RecordLog(path, Draft).load()
    message = str(caught.value)
    assert message.startswith(f"{path} line 2 is not a record this qagen version reads (model: Field required)")
    assert "written by another qagen version (run.json names the one that started the run" in message
    assert "The record made again" not in message  # no dependents given: nothing else to delete
    assert path.read_text() == text  # nothing cut


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux) to fill a disk")
def test_a_full_disk_names_the_file_and_says_what_to_do() -> None:
    writer: RecordWriter[Draft] = RecordWriter(Path("/dev/full"))
    with pytest.raises(RunWriteError) as caught:
        writer.append(_draft(1))
    assert str(caught.value) == (
        "Cannot write /dev/full: the disk (or your quota) is full. Free some space and run the same command again: "
        "every finished record is kept, and only what was not written is made again."
    )
    with pytest.raises(RunWriteError, match="/dev/full: the disk"):
        writer.close()


def test_any_other_write_error_names_the_file_too(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder")
    target = tmp_path / "file" / "summary.json"
    with pytest.raises(RunWriteError) as caught:
        write_json_atomic(target, {"a": 1})
    # The file in the way is named too: it is what to fix.
    assert str(caught.value).startswith(
        f"Cannot write {target}: File exists ({tmp_path / 'file'}). Fix that (the folder's permissions, the disk) and"
    )


def test_record_keys_are_stable() -> None:
    assert record_key("a", "b") == record_key("a", "b") != record_key("ab", "")


def test_records_of_an_earlier_qagen_are_refused_with_the_way_forward(tmp_path: Path) -> None:
    """Before `Failure`, records kept `status` and a `reason` string: such a run is not resumed."""
    path = tmp_path / "drafts.jsonl"
    old = {"id": "d1", "chunk_id": "c1", "model": "m", "prompt_hash": "p", "usage": {}, "raw": "I cannot."}
    path.write_text(json.dumps({**old, "status": "failed", "reason": "refusal"}) + "\n", encoding="utf-8")
    with pytest.raises(CorruptRecordError) as caught:
        RecordLog(path, Draft).load()
    message = str(caught.value)
    assert message.startswith(f"{path} line 1 is not a record this qagen version reads (status: Extra inputs")
    assert "or start again in a new `out`" in message
