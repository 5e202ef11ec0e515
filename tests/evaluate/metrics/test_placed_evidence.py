"""The evaluator takes a test set's stored evidence offsets (the build placed the quoted sentence)
instead of looking for the answer's words; offsets that do not lie in the chunk are not used."""

from __future__ import annotations

from qagen.evaluate.metrics.scoring import question_evidence
from qagen.evaluate.records import EvalItem

CHUNK = "Tides rise twice a day. The Bay of Fundy has the highest tides in the world."


def _item(**offsets: int | None) -> EvalItem:
    return EvalItem(
        id="q", question="Where are the highest tides?", true_answer="In Canada's Bay of Fundy.",
        source_doc="tides.md", context=CHUNK, start_index=100, end_index=100 + len(CHUNK), **offsets,
    )  # fmt: skip


def test_stored_offsets_are_the_evidence() -> None:
    start = 100 + CHUNK.index("The Bay")
    evidence = question_evidence(_item(evidence_start=start, evidence_end=100 + len(CHUNK)))
    assert evidence is not None and evidence.match == "quoted"
    assert [CHUNK[a:b] for a, b in evidence.spans] == ["The Bay of Fundy has the highest tides in the world."]


def test_without_offsets_or_outside_the_chunk_the_answer_is_looked_for() -> None:
    for offsets in ({}, {"evidence_start": 10, "evidence_end": 20}, {"evidence_start": 150, "evidence_end": 900}):
        evidence = question_evidence(_item(**offsets))
        assert evidence is not None and evidence.match == "window"  # the answer's words, as before
