"""The columns of `dataset/` and `candidates/`: their order and types come from the row models."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from datasets import Value, load_from_disk
from pydantic import BaseModel

from qagen.generation.write import DATA_FILE, row_features, save_outputs
from qagen.records import CandidateRow, DatasetRow

COOKBOOK = [
    "context", "question", "answer", "source_doc",
    "groundedness_score", "groundedness_eval", "relevance_score", "relevance_eval",
    "standalone_score", "standalone_eval",
]  # fmt: skip
INTEGER_COLUMNS = {"groundedness_score", "relevance_score", "standalone_score", "start_index", "end_index"}


def _candidate(**changes: object) -> CandidateRow:
    row = CandidateRow(
        context="The lighthouse was built in 1871.", question="When was the lighthouse built?", answer="In 1871.",
        source_doc="lighthouse.txt", groundedness_score=5, groundedness_eval="Stated.", relevance_score=4,
        relevance_eval="Useful.", standalone_score=5, standalone_eval="Clear.", id="d1", chunk_id="c1",
        start_index=0, end_index=33, generator_model="openai:g", critic_model="openai:c", qa_prompt_hash="q",
        groundedness_prompt_hash="g", relevance_prompt_hash="r", standalone_prompt_hash="s",
        status="kept", reason="", generation_raw="raw", groundedness_raw="graw", relevance_raw=None,
        standalone_raw=None,
    )  # fmt: skip
    return row.model_copy(update=changes)


def test_the_cookbook_columns_come_first_then_provenance_then_the_candidate_columns() -> None:
    dataset = list(DatasetRow.model_fields)
    assert dataset[:10] == COOKBOOK
    assert dataset[10:] == [
        "id", "chunk_id", "start_index", "end_index", "generator_model", "critic_model",
        "qa_prompt_hash", "groundedness_prompt_hash", "relevance_prompt_hash", "standalone_prompt_hash",
    ]  # fmt: skip
    assert list(CandidateRow.model_fields) == [
        *dataset, "status", "reason", "generation_raw", "groundedness_raw", "relevance_raw", "standalone_raw",
    ]  # fmt: skip


@pytest.mark.parametrize("row_type", [DatasetRow, CandidateRow])
def test_features_are_the_model_fields_in_order_typed_from_their_annotations(row_type: type[BaseModel]) -> None:
    features = row_features(row_type)
    assert list(features) == list(row_type.model_fields)
    for name, value in features.items():
        assert value == Value("int64" if name in INTEGER_COLUMNS else "string"), name


def test_a_field_with_no_dataset_type_is_refused() -> None:
    class Scored(BaseModel):
        score: float

    with pytest.raises(TypeError, match="score"):
        row_features(Scored)


def _save(rows: list[CandidateRow], folder: Path) -> None:
    save_outputs((row.model_dump() for row in rows), folder / "dataset", folder / "candidates")


def test_saved_rows_load_back_with_the_model_columns(tmp_path: Path) -> None:
    failed = _candidate(
        id="d2", status="failed", reason="generation:refusal", question=None, answer=None,
        groundedness_score=None, relevance_score=None, standalone_score=None,
    )  # fmt: skip
    candidates = [_candidate(), failed]
    _save(candidates, tmp_path)

    loaded = load_from_disk(str(tmp_path / "candidates"))
    assert loaded.column_names == list(CandidateRow.model_fields)
    assert loaded.features == row_features(CandidateRow)
    assert list(loaded) == [row.model_dump() for row in candidates]
    dataset = load_from_disk(str(tmp_path / "dataset"))
    assert dataset.column_names == list(DatasetRow.model_fields)
    assert dataset.features == row_features(DatasetRow)
    assert list(dataset) == [candidates[0].dataset_row().model_dump()]


def test_an_empty_set_keeps_its_columns_and_types(tmp_path: Path) -> None:
    _save([], tmp_path)
    for name, row_type in (("dataset", DatasetRow), ("candidates", CandidateRow)):
        loaded = load_from_disk(str(tmp_path / name))
        assert loaded.num_rows == 0
        assert loaded.features == row_features(row_type)


@pytest.mark.parametrize("count", [3, 2500])
def test_every_candidate_and_only_the_kept_rows_are_written_in_one_data_file(tmp_path: Path, count: int) -> None:
    failed = _candidate(
        status="failed", reason="generation:refusal", question=None, answer=None, groundedness_score=None,
        relevance_score=None, standalone_score=None, groundedness_eval=None, generation_raw="I can't.",
    )  # fmt: skip
    rows = [(failed if i % 3 else _candidate()).model_copy(update={"id": f"d{i}"}) for i in range(count)]
    _save(rows, tmp_path)
    for name in ("dataset", "candidates"):
        assert sorted(path.name for path in (tmp_path / name).iterdir()) == [
            DATA_FILE, "dataset_info.json", "state.json",
        ]  # fmt: skip
    assert sorted(path.name for path in tmp_path.iterdir()) == ["candidates", "dataset"]  # no scratch left
    assert list(load_from_disk(str(tmp_path / "candidates"))) == [row.model_dump() for row in rows]
    kept = [row.dataset_row().model_dump() for row in rows if row.status == "kept"]
    assert list(load_from_disk(str(tmp_path / "dataset"))) == kept
    # `dataset_info.json` as `save_to_disk` writes it for rows of these features, nothing more.
    info = json.loads((tmp_path / "dataset" / "dataset_info.json").read_text())
    assert info == {"citation": "", "description": "", "features": row_features(DatasetRow).to_dict(),
                    "homepage": "", "license": ""}  # fmt: skip


def test_a_failed_write_leaves_the_previous_outputs(tmp_path: Path) -> None:
    _save([_candidate()], tmp_path)

    def breaking() -> Iterator[dict[str, object]]:
        yield _candidate(id="new").model_dump()
        raise RuntimeError("the ledger broke")

    with pytest.raises(RuntimeError, match="ledger broke"):
        save_outputs(breaking(), tmp_path / "dataset", tmp_path / "candidates")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["candidates", "dataset"]
    assert load_from_disk(str(tmp_path / "candidates"))["id"] == ["d1"]
    assert load_from_disk(str(tmp_path / "dataset"))["id"] == ["d1"]


def test_a_kept_candidate_is_its_dataset_row_plus_the_candidate_columns() -> None:
    candidate = _candidate()
    row = candidate.dataset_row()
    assert type(row) is DatasetRow
    assert row.model_dump() == candidate.model_dump(include=set(DatasetRow.model_fields))
