"""labels.jsonl: appended a flushed line at a time; the latest label per (reviewer, kind, item) wins."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qagen.errors import CorruptRecordError
from qagen.review.labels import LABELS_FILE, CriterionLabel, Label, LabelKey, LabelStore


def _label(item: str, reviewer: str = "ana", *, keep: bool = True) -> Label:
    criteria = {"relevance": CriterionLabel.of(keep, 4 if keep else 2)}
    return Label(kind="draft", item_id=item, reviewer=reviewer, criteria=criteria, keep=keep, via="page")


def test_lines_follow_the_schema_and_a_later_label_supersedes(tmp_path: Path) -> None:
    store = LabelStore(tmp_path)
    store.append(_label("d1", keep=False))
    # Flushed at once: another reader sees it before the store is closed.
    assert len((tmp_path / LABELS_FILE).read_text().splitlines()) == 1
    store.append(_label("d1", "bo"))
    store.append(_label("d1", keep=True))
    store.close()
    lines = [json.loads(line) for line in (tmp_path / LABELS_FILE).read_text().splitlines()]
    assert lines[0]["schema"] == 1 and lines[0]["criteria"] == {"relevance": {"pass": False, "score": 2}}
    assert set(lines[0]) == {
        "schema", "kind", "item_id", "reviewer", "time", "criteria", "keep", "correct", "note", "prompt_hashes", "via",
    }  # fmt: skip
    assert lines[0]["time"].endswith("Z")
    latest = LabelStore(tmp_path).read()
    assert list(latest) == [LabelKey("ana", "draft", "d1"), LabelKey("bo", "draft", "d1")]
    assert latest[LabelKey("ana", "draft", "d1")].keep is True


def test_a_torn_last_line_is_cut_and_a_damaged_one_stops_with_its_line(tmp_path: Path) -> None:
    with LabelStore(tmp_path) as store:
        store.append(_label("d1"))
    path = tmp_path / LABELS_FILE
    path.write_text(path.read_text() + '{"schema": 1, "kind": "dr')  # a write cut short
    with LabelStore(tmp_path) as store:
        store.append(_label("d2"))  # after the torn line was cut off, not glued onto it
    assert [key.item_id for key in LabelStore(tmp_path).read()] == ["d1", "d2"]
    path.write_text("not json\n" + path.read_text())
    with pytest.raises(CorruptRecordError, match=r"line 1 .*give that label again"):
        LabelStore(tmp_path).read()


def test_a_label_fits_its_kind() -> None:
    with pytest.raises(ValueError, match="correct"):
        Label(kind="draft", item_id="d", reviewer="r", correct=True, via="csv")
    with pytest.raises(ValueError, match="criteria or keep"):
        Label(kind="answer", item_id="q", reviewer="r", keep=True, via="csv")
