"""Append-only record logs survive a crash mid-write."""

from __future__ import annotations

from pathlib import Path

import pytest

from qagen.errors import QagenError
from qagen.records import Draft
from qagen.runs.store import RecordLog, record_key


def _draft(i: int, status: str = "ok") -> Draft:
    return Draft(id=f"d{i}", chunk_id=f"c{i}", model="m", prompt_hash="p", status=status, question="q", answer="a")  # type: ignore[arg-type]


def test_records_round_trip_and_later_records_win(tmp_path: Path) -> None:
    log = RecordLog(tmp_path / "drafts.jsonl", Draft)
    with log.writer() as out:
        out.append(_draft(1, "failed"))
        out.append(_draft(2))
        out.append(_draft(1))
    records = log.load()
    assert set(records) == {"d1", "d2"} and records["d1"].status == "ok"


def test_a_torn_last_line_is_cut_off_and_the_rest_kept(tmp_path: Path) -> None:
    path = tmp_path / "drafts.jsonl"
    log = RecordLog(path, Draft)
    with log.writer() as out:
        out.append(_draft(1))
        out.append(_draft(2))
    whole = path.read_bytes()
    path.write_bytes(whole + _draft(3).model_dump_json().encode()[:25])  # killed mid-write
    assert set(log.load()) == {"d1", "d2"}
    assert path.read_bytes() == whole and log.repaired_bytes == 25
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


def test_record_keys_are_stable() -> None:
    assert record_key("a", "b") == record_key("a", "b") != record_key("ab", "")
