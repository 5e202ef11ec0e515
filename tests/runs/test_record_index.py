"""The record index: small states in memory, whole records read back from the log by place; every
line read once; later records win, as in `RecordLog.load`."""

from __future__ import annotations

from pathlib import Path

import pytest

from qagen.errors import QagenError
from qagen.failures import Failure, FailureKind
from qagen.records import Draft, Usage
from qagen.runs.record_index import RecordIndex
from qagen.runs.store import RecordLog


def _draft(key: str, question: str | None = "Why?", failure: Failure | None = None) -> Draft:
    return Draft(
        id=key, model="m", chunk_id=f"c-{key}", prompt_hash="p", question=question, answer="Because.",
        raw=f"Factoid question: {question}\nAnswer: Because. " + "x" * 500, failure=failure,
        usage=Usage(input_tokens=3, output_tokens=2),
    )  # fmt: skip


class CountingSummary:
    """Keeps the question of each record, and how many records it was asked to summarise."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, draft: Draft) -> str | None:
        self.calls += 1
        return draft.question


def test_states_in_memory_records_from_the_log_and_later_records_win(tmp_path: Path) -> None:
    log = RecordLog(tmp_path / "drafts.jsonl", Draft)
    failed = _draft("a", None, Failure.of(FailureKind.RATE_LIMITED, "429"))
    with log.writer() as out:
        for draft in (failed, _draft("b", "Who?"), _draft("a", "What?")):
            out.append(draft)
    index = RecordIndex(log, CountingSummary())
    index.scan()
    assert len(index) == 2 and index.state("a") == "What?" and index.state("b") == "Who?"
    assert index.state("nope") is None and index.get("nope") is None
    assert {key: index.get(key) for key in ("a", "b")} == log.load()
    index.close()


def test_each_line_is_read_once_and_added_records_are_found_at_once(tmp_path: Path) -> None:
    log = RecordLog(tmp_path / "drafts.jsonl", Draft)
    with log.writer() as out:
        out.append(_draft("a"))
    summary = CountingSummary()
    index = RecordIndex(log, summary)
    index.scan()
    with index.appending():
        assert index.add(_draft("b", "Who?")) == "Who?"
        assert index.state("b") == "Who?"  # kept as it is written
        assert index.get("b") == _draft("b", "Who?")  # and located: read back with no scan
        index.add(_draft("c", "When?"))
    index.scan()
    index.scan()
    assert summary.calls == 3  # a read, b and c added: no line read twice
    assert index.get("c") == _draft("c", "When?") and index.get("a") == _draft("a")
    assert {key: index.get(key) for key in "abc"} == log.load()
    index.close()


def test_a_record_added_after_lines_of_another_writer_is_found_by_the_next_scan(tmp_path: Path) -> None:
    log = RecordLog(tmp_path / "drafts.jsonl", Draft)
    index = RecordIndex(log, CountingSummary())
    index.scan()
    with index.appending():
        with log.writer() as other:
            other.append(_draft("x", "Where?"))
        index.add(_draft("b", "Who?"))
        assert index.state("x") is None
        assert index.get("b") == _draft("b", "Who?")  # the scan it takes reads both lines
        assert index.state("x") == "Where?" and index.get("x") == _draft("x", "Where?")
    index.close()


def test_adding_outside_appending_is_refused(tmp_path: Path) -> None:
    index = RecordIndex(RecordLog(tmp_path / "drafts.jsonl", Draft), CountingSummary())
    with pytest.raises(RuntimeError):
        index.add(_draft("a"))


def test_a_torn_last_line_is_cut_off_on_the_first_scan(tmp_path: Path) -> None:
    log = RecordLog(tmp_path / "drafts.jsonl", Draft)
    with log.writer() as out:
        out.append(_draft("a"))
    with log.path.open("a", encoding="utf-8") as handle:
        handle.write('{"id": "b", "mod')
    index = RecordIndex(log, CountingSummary())
    index.scan()
    assert len(index) == 1 and log.repaired_bytes > 0
    assert log.path.read_text(encoding="utf-8").endswith("\n")


def test_a_corrupt_line_names_its_line_number_in_a_later_scan_too(tmp_path: Path) -> None:
    log = RecordLog(tmp_path / "drafts.jsonl", Draft)
    with log.writer() as out:
        out.append(_draft("a"))
        out.append(_draft("b"))
    index = RecordIndex(log, CountingSummary())
    index.scan()
    with log.path.open("a", encoding="utf-8") as handle:
        handle.write("\n" + '{"id": "c"}\n')
    with pytest.raises(QagenError, match="line 4 is not a record"):
        index.scan()
