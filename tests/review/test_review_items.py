"""What a reviewer sees: the answer found in its chunk, and every verdict held back until asked for."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from qagen.review.items import answer_items, answer_spans, draft_items
from qagen.review.sample import review_sample
from tests.review.page_fixtures import Reviewed, build_and_evaluate, critiques_by_draft


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Reviewed]:
    with build_and_evaluate(tmp_path_factory.mktemp("items")) as built:
        yield built


@pytest.mark.parametrize(
    ("text", "answer", "spans", "match"),
    [
        ("The bay has 16 m tides.", "16 m", [(12, 16)], "exact"),
        ("spring, then spring again", "spring", [(0, 6), (13, 19)], "exact"),
        ("aaaa", "aa", [(0, 2), (2, 4)], "exact"),  # occurrences do not overlap
        ("The Bay of\n  Fundy, Canada", "the bay of fundy", [(0, 18)], "loose"),
        ("  Paris  ", " Paris ", [(2, 7)], "exact"),  # the answer's own outer spaces do not count
        ("Die STRASSE ist lang", "straße", [(4, 11)], "loose"),  # case folding lengthens ß
        ("Die Straße ist lang", "STRASSE", [(4, 10)], "loose"),
        ("Lyon", "Paris", [], "none"),
        ("Lyon", "", [], "none"),
        ("Lyon", None, [], "none"),
        ("Lyon", "   ", [], "none"),
    ],
)
def test_answer_spans(text: str, answer: str | None, spans: list[tuple[int, int]], match: str) -> None:
    found, how = answer_spans(text, answer)
    assert [(span.start, span.end) for span in found] == spans
    assert how == match


def _fold(text: str) -> str:
    return " ".join(text.split()).casefold()


@given(st.text(alphabet="aAbß \n\tİ", max_size=30), st.text(alphabet="aAbß \nİ", max_size=6))
def test_every_span_holds_the_answer(text: str, answer: str) -> None:
    spans, match = answer_spans(text, answer)
    assert (match == "none") == (not spans)
    for span in spans:
        found = text[span.start : span.end]
        assert found == answer.strip() if match == "exact" else _fold(found) == _fold(answer)
    if _fold(answer) and _fold(answer) in _fold(text):
        assert spans  # an answer that is there, as the loose rule reads it, is found


def test_draft_items_show_the_run_records_and_hold_back_the_critics(reviewed: Reviewed) -> None:
    ids = review_sample(reviewed.run, size=12, seed=0).ids
    items = draft_items(reviewed.run, ids)
    assert [item.id for item in items] == ids
    drafts = {row["id"]: row for row in map(json.loads, (reviewed.run / "drafts.jsonl").read_text().splitlines())}
    chunks = {row["id"]: row for row in map(json.loads, (reviewed.run / "chunks.jsonl").read_text().splitlines())}
    critiques = critiques_by_draft(reviewed.run)
    verdicts_seen = 0
    for item in items:
        draft = drafts[item.id]
        chunk = chunks[draft["chunk_id"]]
        assert (item.question, item.answer, item.chunk, item.source) == (
            draft["question"],
            draft["answer"],
            chunk["text"],
            chunk["source"],
        )
        # The stand-in quotes its answer's sentence as the evidence: highlighted where the build places it.
        assert item.match == "evidence" and len(item.spans) == 1
        assert all(chunk["text"][span.start : span.end] == draft["evidence"] == draft["answer"] for span in item.spans)
        assert item.prompt_hashes["generation"] == draft["prompt_hash"]
        for verdict in item.verdicts:
            critique = critiques[item.id].get(verdict.name)
            if critique is None:  # the critics stopped at an earlier rejection
                assert (verdict.score, verdict.failure, verdict.passes) == (None, "not_asked", None)
                continue
            verdicts_seen += 1
            assert (verdict.score, verdict.rationale) == (critique["score"], critique["rationale"])
            assert verdict.passes == (critique["score"] >= 4)
            assert item.prompt_hashes[verdict.name] == critique["prompt_hash"]
        hidden = json.dumps(item.shown(reveal=False))
        assert "verdicts" not in item.shown(reveal=False)
        assert not any(v.rationale and v.rationale in hidden for v in item.verdicts)
        assert item.shown(reveal=True)["verdicts"] == [v.model_dump(mode="json") for v in item.verdicts]
    assert verdicts_seen >= len(items)


def test_answer_items_show_the_results_and_hold_back_the_judge(reviewed: Reviewed) -> None:
    rows = [json.loads(line) for line in (reviewed.eval / "results.jsonl").read_text().splitlines()]
    items = answer_items(reviewed.eval, [row["id"] for row in rows])
    summary = json.loads((reviewed.eval / "summary.json").read_text())
    for row, item in zip(rows, items, strict=True):
        assert (item.kind, item.question, item.reference, item.answer) == (
            "answer",
            row["question"],
            row["true_answer"],
            row["generated_answer"],
        )
        assert [context.text for context in item.contexts] == row["retrieved_docs"]
        assert [context.source for context in item.contexts] == row["retrieved_sources"]
        correctness, correct = item.verdicts
        assert (correctness.name, correctness.score, correctness.rationale) == (
            "correctness",
            row["correctness"],
            row["correctness_feedback"],
        )
        assert correctness.passes == (row["correctness"] >= 3)  # (score - 1) / 4 >= 0.5
        assert (correct.name, correct.score, correct.passes) == ("correct", row["correct"], row["correct"] == 1.0)
        assert item.prompt_hashes["judge"] == summary["judges"]["correctness"]["prompts"]["judge_correctness"]
        assert "verdicts" not in item.shown(reveal=False)
        assert row["correctness_feedback"] not in json.dumps(item.shown(reveal=False))


def test_a_sample_from_another_run_is_refused_with_the_way_out(reviewed: Reviewed, tmp_path: Path) -> None:
    from qagen.errors import QagenError

    with pytest.raises(QagenError, match=r"delete review_sample\.json"):
        draft_items(reviewed.run, ["0" * 20])


def test_a_quote_the_chunk_does_not_hold_is_said_and_the_answer_highlighted_instead() -> None:
    from qagen.records import Draft
    from qagen.review.items import Span, _draft_spans

    chunk = "Tides rise twice a day. The Bay of Fundy has the highest tides."
    quoted = Draft(id="d", chunk_id="c", model="m", prompt_hash="h", question="q", answer="Bay of Fundy")
    assert _draft_spans(quoted.model_copy(update={"evidence": "The Bay of Fundy has the highest tides."}), chunk) == (
        [Span(start=24, end=63)],
        "evidence",
    )
    missing, match = _draft_spans(quoted.model_copy(update={"evidence": "Tides never rise in lakes at all."}), chunk)
    assert match == "evidence_missing" and [chunk[s.start : s.end] for s in missing] == ["Bay of Fundy"]
    assert _draft_spans(quoted, chunk)[1] == "exact"  # no quote: the answer, as before
