"""The columns of `dataset/` and `candidates/`: their order and types come from the row models."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from datasets import Dataset, List, Value, load_from_disk
from pydantic import BaseModel

from qagen.generation.write import DATA_FILE, RowValues, row_columns, row_features, save_outputs
from qagen.records import PASSAGE_COLUMNS, CandidateRow, CriticReply, DatasetRow

COOKBOOK = [
    "context", "question", "answer", "source_doc",
    "groundedness_score", "groundedness_eval", "relevance_score", "relevance_eval",
    "standalone_score", "standalone_eval",
]  # fmt: skip
INTEGER_COLUMNS = {
    "groundedness_score", "relevance_score", "standalone_score", "start_index", "end_index", "evidence_start",
    "evidence_end", "bm25_rank",
}  # fmt: skip
FLOAT_COLUMNS = {
    "copied_share", "extractive_share", "restated_share", "predicted_keep", "groundedness_measurement",
    "relevance_measurement", "standalone_measurement",
}  # fmt: skip
BOOL_COLUMNS = {"groundedness_passed", "relevance_passed", "standalone_passed"}
DECISION_COLUMNS = [
    f"{critic}_{what}" for critic in ("groundedness", "relevance", "standalone") for what in ("measurement", "passed")
]
QUALITY_COLUMNS = ["evidence_quote", "evidence_start", "evidence_end", "evidence_match", "copied_share", "bm25_rank",
    "extractive_share", "restated_share", "predicted_keep",
]  # fmt: skip


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


def _save(rows: list[CandidateRow], folder: Path, *, extra_critics: bool = False, mixed: bool = False) -> None:
    save_outputs(rows, folder / "dataset", folder / "candidates", extra_critics=extra_critics, mixed=mixed)


def test_the_cookbook_columns_come_first_then_provenance_then_the_candidate_columns() -> None:
    dataset = row_columns(DatasetRow)
    assert dataset[:10] == COOKBOOK
    assert dataset[10:] == [
        *DECISION_COLUMNS, "id", "chunk_id", "start_index", "end_index", "generator_model", "critic_model",
        "qa_prompt_hash", "groundedness_prompt_hash", "relevance_prompt_hash", "standalone_prompt_hash",
        *QUALITY_COLUMNS,
    ]  # fmt: skip
    assert row_columns(CandidateRow) == [
        *dataset, "status", "reason", "generation_raw", "groundedness_raw", "relevance_raw", "standalone_raw",
    ]  # fmt: skip
    # Critics beyond the cookbook's three: one column after the cookbook's, in both sets.
    assert row_columns(DatasetRow, extra_critics=True) == [*COOKBOOK, "extra_critics", *dataset[10:]]
    assert row_columns(CandidateRow, extra_critics=True) == [
        *row_columns(DatasetRow, extra_critics=True),
        *row_columns(CandidateRow)[len(dataset) :],
    ]


@pytest.mark.parametrize("row_type", [DatasetRow, CandidateRow])
def test_features_are_the_model_fields_in_order_typed_from_their_annotations(row_type: type[BaseModel]) -> None:
    features = row_features(row_type)
    assert list(features) == row_columns(row_type)
    for name, value in features.items():
        dtype = (
            "int64"
            if name in INTEGER_COLUMNS
            else "float64"
            if name in FLOAT_COLUMNS
            else "bool"
            if name in BOOL_COLUMNS
            else "string"
        )
        assert value == Value(dtype), name
    # The critics beyond the three: a list of one struct per critic, its fields typed as the record's.
    verdict = row_features(row_type, extra_critics=True)["extra_critics"].feature
    decision = ["measured_as", "measurement", "cut", "passed"]
    expected = ["name", "score", "eval", "prompt_hash", *decision, *(["raw"] if row_type is CandidateRow else [])]
    assert list(verdict) == expected and verdict["score"] == Value("int64") and verdict["eval"] == Value("string")


def test_a_field_with_no_dataset_type_is_refused() -> None:
    class Scored(BaseModel):
        score: complex

    with pytest.raises(TypeError, match="score"):
        row_features(Scored)


def test_saved_rows_load_back_with_the_model_columns(tmp_path: Path) -> None:
    failed = _candidate(
        id="d2", status="failed", reason="generation:refusal", question=None, answer=None,
        groundedness_score=None, relevance_score=None, standalone_score=None,
    )  # fmt: skip
    candidates = [_candidate(), failed]
    _save(candidates, tmp_path)  # the first is kept, the second not

    loaded = load_from_disk(str(tmp_path / "candidates"))
    assert loaded.column_names == row_columns(CandidateRow)
    assert list(loaded) == [row.model_dump(exclude={"extra_critics", *PASSAGE_COLUMNS}) for row in candidates]
    dataset = load_from_disk(str(tmp_path / "dataset"))
    assert dataset.column_names == row_columns(DatasetRow)
    assert list(dataset) == [candidates[0].dataset_row().model_dump(exclude={"extra_critics", *PASSAGE_COLUMNS})]


def test_a_build_of_several_types_writes_the_type_and_every_passage(tmp_path: Path) -> None:
    candidate = _candidate(
        question_type="multi_hop", contexts=("First passage.", "Second passage."), source_docs=("a.txt", "b.txt"),
        chunk_ids=("c1", "c2"), start_indices=(0, 10), end_indices=(14, 25),
    )  # fmt: skip
    assert row_columns(DatasetRow, mixed=True)[-len(PASSAGE_COLUMNS) :] == list(PASSAGE_COLUMNS)
    _save([candidate], tmp_path, mixed=True)
    for folder in ("candidates", "dataset"):
        (row,) = load_from_disk(str(tmp_path / folder))
        assert row["question_type"] == "multi_hop" and row["contexts"] == ["First passage.", "Second passage."]
        assert (row["source_docs"], row["start_indices"], row["end_indices"]) == (["a.txt", "b.txt"], [0, 10], [14, 25])
    features = row_features(DatasetRow, mixed=True)
    assert features["start_indices"] == List(Value("int64")) and features["contexts"] == List(Value("string"))


def test_a_critic_beyond_the_three_is_one_entry_of_extra_critics(tmp_path: Path) -> None:
    verdict = CriticReply(
        name="specificity", score=2, eval="Vague.", prompt_hash="p", raw="Evaluation: Vague.",
        measured_as="expected_rating", measurement=2.3, cut=4.0, passed=False,
    )  # fmt: skip
    candidate = _candidate(extra_critics=(verdict,))
    _save([candidate], tmp_path, extra_critics=True)
    (row,) = load_from_disk(str(tmp_path / "candidates"))
    assert row["extra_critics"] == [verdict.model_dump()]
    (kept,) = load_from_disk(str(tmp_path / "dataset"))
    # The dataset has the verdict without the reply, as it has `<name>_score` without `<name>_raw`.
    assert kept["extra_critics"] == [
        {"name": "specificity", "score": 2, "eval": "Vague.", "prompt_hash": "p", "measured_as": "expected_rating",
         "measurement": 2.3, "cut": 4.0, "passed": False}
    ]  # fmt: skip
    assert kept == candidate.dataset_row().model_dump(mode="json", exclude=set(PASSAGE_COLUMNS))


def test_an_empty_set_keeps_its_columns_and_types(tmp_path: Path) -> None:
    _save([], tmp_path)
    for name, row_type in (("dataset", DatasetRow), ("candidates", CandidateRow)):
        loaded = load_from_disk(str(tmp_path / name))
        assert loaded.num_rows == 0
        assert loaded.features == row_features(row_type)


def test_a_kept_candidate_is_its_dataset_row_plus_the_candidate_columns() -> None:
    candidate = _candidate()
    row = candidate.dataset_row()
    assert type(row) is DatasetRow
    assert row.model_dump() == candidate.model_dump(include=set(DatasetRow.model_fields))


@pytest.mark.parametrize("mixed", [False, True])
@pytest.mark.parametrize("extra_critics", [False, True])
def test_the_rows_written_are_the_records_dumps(extra_critics: bool, mixed: bool) -> None:
    """`RowValues` (what the final write writes) against the records' own dumps: the candidate's, and its
    `dataset_row`'s."""
    replies = (
        CriticReply(
            name="specificity", score=2, eval="Vague.", prompt_hash="p", raw="Evaluation: Vague.",
            measured_as="expected_rating", measurement=2.3, cut=4.0, passed=False,
        ),
        CriticReply(name="clear", score=None, eval=None, prompt_hash="c", raw=None),
    )  # fmt: skip
    columns = {"extra_critics": extra_critics, "mixed": mixed}
    kept_columns = row_columns(DatasetRow, **columns)
    for candidate in (
        _candidate(),
        _candidate(extra_critics=replies, question_type="multi_hop", contexts=("a", "b"), chunk_ids=("c1", "c2")),
        _candidate(question=None, answer=None, copied_share=0.5, bm25_rank=3, evidence_match="exact"),
    ):
        every_columns = row_columns(CandidateRow, **columns)
        values = RowValues(every_columns, kept_columns)
        row = values.candidate(candidate)
        assert dict(zip(every_columns, row, strict=True)) == candidate.model_dump(include=set(every_columns))
        expected = candidate.dataset_row().model_dump(include=set(kept_columns))
        assert dict(zip(kept_columns, values.kept(row), strict=True)) == expected


@pytest.mark.parametrize("extra_critics", [False, True])
def test_written_directories_with_or_without_extra_critics_are_those_of_save_to_disk(
    tmp_path: Path, extra_critics: bool
) -> None:
    """Byte for byte, but for the fingerprint, with the list-of-structs column too."""
    verdict = CriticReply(name="specificity", score=None, eval=None, prompt_hash="p", raw=None)
    rows = [_candidate(id=f"d{i}", extra_critics=(verdict,) * (i % 2)) for i in range(3)]
    _save(rows, tmp_path / "streamed", extra_critics=extra_critics)
    columns = row_columns(CandidateRow, extra_critics=extra_critics)
    data = {column: [row.model_dump()[column] for row in rows] for column in columns}
    features = row_features(CandidateRow, extra_critics=extra_critics)
    Dataset.from_dict(data, features=features, split="train").save_to_disk(str(tmp_path / "saved"), num_shards=1)
    for name in (DATA_FILE, "dataset_info.json"):
        assert (tmp_path / "streamed" / "candidates" / name).read_bytes() == (tmp_path / "saved" / name).read_bytes()


@pytest.mark.parametrize("count", [0, 3, 2500])
def test_written_directories_are_those_of_save_to_disk(tmp_path: Path, count: int) -> None:
    """The rows, the features and the metadata of `save_to_disk`, but for the fingerprint, and the data file it
    writes of the same rows byte for byte (2,500 rows: in its batches of 1,000); only the kept rows in
    `dataset/`, and no temporary folder left."""
    failed = _candidate(
        status="failed", reason="generation:refusal", question=None, answer=None, groundedness_score=None,
        relevance_score=None, standalone_score=None, groundedness_eval=None, generation_raw="I can't.",
    )  # fmt: skip
    rows = [(failed if i % 3 else _candidate()).model_copy(update={"id": f"d{i}"}) for i in range(count)]
    _save(rows, tmp_path / "streamed")
    data = {column: [row.model_dump()[column] for row in rows] for column in row_columns(CandidateRow)}
    Dataset.from_dict(data, features=row_features(CandidateRow), split="train").save_to_disk(
        str(tmp_path / "saved"), num_shards=1
    )
    streamed = tmp_path / "streamed" / "candidates"
    assert sorted(path.name for path in streamed.iterdir()) == [DATA_FILE, "dataset_info.json", "state.json"]
    assert (streamed / "dataset_info.json").read_bytes() == (tmp_path / "saved" / "dataset_info.json").read_bytes()
    load_from_disk(str(streamed)).save_to_disk(str(tmp_path / "saved again"), num_shards=1)
    assert (streamed / DATA_FILE).read_bytes() == (tmp_path / "saved again" / DATA_FILE).read_bytes()
    assert list(load_from_disk(str(streamed))) == list(load_from_disk(str(tmp_path / "saved")))
    new, old = (json.loads((folder / "state.json").read_text()) for folder in (streamed, tmp_path / "saved"))
    assert {**new, "_fingerprint": ""} == {**old, "_fingerprint": ""}
    assert sorted(path.name for path in (tmp_path / "streamed").iterdir()) == ["candidates", "dataset"]  # no leftovers
    kept = [
        row.dataset_row().model_dump(exclude={"extra_critics", *PASSAGE_COLUMNS})
        for row in rows
        if row.status == "kept"
    ]
    assert list(load_from_disk(str(tmp_path / "streamed" / "dataset"))) == kept


def test_a_failed_write_leaves_the_previous_outputs(tmp_path: Path) -> None:
    _save([_candidate()], tmp_path)

    def breaking() -> Iterator[CandidateRow]:
        yield _candidate(id="new")
        raise RuntimeError("the ledger broke")

    with pytest.raises(RuntimeError, match="ledger broke"):
        save_outputs(breaking(), tmp_path / "dataset", tmp_path / "candidates")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["candidates", "dataset"]
    assert load_from_disk(str(tmp_path / "candidates"))["id"] == ["d1"]
    assert load_from_disk(str(tmp_path / "dataset"))["id"] == ["d1"]
