"""Append-only record logs survive a crash mid-write."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qagen.errors import QagenError
from qagen.failures import Failure, FailureKind
from qagen.records import Draft
from qagen.runs.store import RecordLog, record_key


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


def test_records_of_an_earlier_qagen_read_their_reason_as_a_typed_failure(tmp_path: Path) -> None:
    """Run directories written before `Failure` kept `status` and a `reason` string: they still resume."""
    path = tmp_path / "drafts.jsonl"
    old = {"id": "d1", "chunk_id": "c1", "model": "m", "prompt_hash": "p", "usage": {}}
    lines = [
        {**old, "status": "failed", "reason": "api_error:rate_limited", "raw": "RateLimitError: 429"},
        {**old, "id": "d2", "status": "failed", "reason": "refusal", "raw": "I cannot."},
        {**old, "id": "d3", "status": "ok", "reason": "", "question": "q", "answer": "a", "raw": "..."},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    records = RecordLog(path, Draft).load()
    assert records["d1"].failure == Failure.of(FailureKind.RATE_LIMITED, "RateLimitError: 429")
    assert records["d1"].failure is not None and records["d1"].failure.retryable
    assert records["d1"].reason == "api_error:rate_limited"
    assert records["d2"].failure == Failure.of(FailureKind.REFUSAL) and records["d2"].reason == "refusal"
    assert records["d3"].ok and records["d3"].question == "q"
