"""The chunk-level hit rule on mixed chunk sizes: the same text holding the evidence scores the same
however it was cut, a chunk outside the evidence never hits, a boundary through the evidence leaves
the larger piece a hit, and placing chunks by text agrees with placing them by offsets."""

from __future__ import annotations

import math
import random
from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qagen.corpus.chunk import chunk_document, make_splitter
from qagen.corpus.evidence import Evidence, locate_evidence
from qagen.evaluate.metrics.evidence_hits import ReferenceEvidence, covers_evidence
from qagen.evaluate.metrics.retrieval import Span
from qagen.evaluate.metrics.scoring import deterministic_metrics
from qagen.evaluate.records import EvalItem, RagOutput
from qagen.records import Chunk, Document, RetrievedContext

SOURCE = "guide.md"
ANSWER = "quartz zebra ladder"  # words found nowhere else in the document
VOCABULARY = "harbour valley engineers measured river station council museum archive northern early modern".split()


@cache
def document() -> str:
    """About 9,000 characters of paragraphs, with the answer once, in the middle of a sentence."""
    rng = random.Random(5)
    paragraphs = []
    for _ in range(24):
        sentences = [" ".join(rng.choice(VOCABULARY) for _ in range(rng.randint(6, 14))) for _ in range(4)]
        paragraphs.append(". ".join(sentence.capitalize() for sentence in sentences) + ".")
    text = "\n\n".join(paragraphs)
    middle = text.index(" ", len(text) // 2)
    return f"{text[:middle]} {ANSWER}{text[middle:]}"


def chunks(size: int, overlap: int) -> list[Chunk]:
    return list(chunk_document(Document(source=SOURCE, text=document()), make_splitter(size, overlap, "characters")))


@cache
def reference() -> Chunk:
    """The chunk the question was drafted from: qagen's default chunking (2,000 / 200)."""
    return next(chunk for chunk in chunks(2000, 200) if ANSWER in chunk.text)


def item(answer: str = ANSWER) -> EvalItem:
    chunk = reference()
    return EvalItem(
        id="q",
        question="Which ladder?",
        true_answer=answer,
        source_doc=SOURCE,
        context=chunk.text,
        start_index=chunk.start_index,
        end_index=chunk.end_index,
    )


def judge() -> ReferenceEvidence:
    chunk = reference()
    evidence = locate_evidence(ANSWER, chunk.text)
    return ReferenceEvidence(chunk.text, evidence, Span(SOURCE, chunk.start_index, chunk.end_index), SOURCE)


def context(chunk: Chunk, *, offsets: bool) -> RetrievedContext:
    if offsets:
        return RetrievedContext(
            text=chunk.text, source=chunk.source, start_index=chunk.start_index, end_index=chunk.end_index
        )
    return RetrievedContext(text=chunk.text)  # a system that reports texts only


def evidence_span() -> Span:
    start = document().index(ANSWER)
    return Span(SOURCE, start, start + len(ANSWER))


def contains(chunk: Chunk, span: Span) -> bool:
    return chunk.start_index <= span.start and span.end <= chunk.end_index


def disjoint(chunk: Chunk, span: Span) -> bool:
    return chunk.end_index <= span.start or span.end <= chunk.start_index


CUTS = [(size, overlap) for size in (500, 1000, 2000) for overlap in (0, size // 10)]


# --------------------------------------------------------------------------------------------------
# The same retrieved text, cut into chunks of different sizes
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("offsets", [True, False], ids=["offsets", "text-only"])
def test_the_chunk_holding_the_evidence_scores_the_same_at_every_size(offsets: bool) -> None:
    evidence = evidence_span()
    scores = {}
    for size, overlap in CUTS:
        pieces = chunks(size, overlap)
        holding = next(chunk for chunk in pieces if contains(chunk, evidence))
        others = [chunk for chunk in pieces if disjoint(chunk, evidence)]
        # Ranked third, behind two chunks far from the evidence, and before another.
        ranked = [others[0], others[-1], holding, others[len(others) // 2]]
        output = RagOutput(answer="A ladder.", contexts=[context(chunk, offsets=offsets) for chunk in ranked])
        for k in (2, 3, 7):
            scores[size, overlap, k] = deterministic_metrics(item(), output, k, {"retrieval"})
    for (size, overlap, k), values in scores.items():
        expected = {
            "evidence_hit@k": float(k >= 3),
            "evidence_reciprocal_rank@k": 1 / 3 if k >= 3 else 0.0,
            "evidence_ndcg@k": 1 / math.log2(4) if k >= 3 else 0.0,
        }
        assert {name: values[name] for name in expected} == pytest.approx(expected), (size, overlap, k)
        # Document level: every chunk is of the right document, when the system says so.
        assert values["hit@k"] == (1.0 if offsets else None)


@pytest.mark.parametrize(("size", "overlap"), CUTS)
def test_a_chunk_outside_the_evidence_never_hits(size: int, overlap: int) -> None:
    evidence, rule = evidence_span(), judge()
    outside = [chunk for chunk in chunks(size, overlap) if disjoint(chunk, evidence)]
    assert len(outside) >= 3
    for chunk in outside:
        span = Span(chunk.source, chunk.start_index, chunk.end_index)
        assert not rule.holds(chunk.text, span, chunk.source)
        assert not rule.holds(chunk.text, None, None)  # by its text alone


def test_placing_by_text_agrees_with_placing_by_offsets_at_every_size() -> None:
    rule, evidence = judge(), evidence_span()
    for size, overlap in [*CUTS, (300, 0), (700, 35), (2500, 250)]:
        hits = 0
        for chunk in chunks(size, overlap):
            by_offsets = rule.holds(chunk.text, Span(chunk.source, chunk.start_index, chunk.end_index), chunk.source)
            assert by_offsets == rule.holds(chunk.text, None, None), (size, overlap, chunk.start_index)
            assert by_offsets or not contains(chunk, evidence)
            hits += by_offsets
        assert hits >= 1, (size, overlap)


# --------------------------------------------------------------------------------------------------
# Evidence cut by a chunk boundary: the partial-coverage branch
# --------------------------------------------------------------------------------------------------


def _cut_at(position: int) -> tuple[Chunk, Chunk]:
    """The reference chunk cut in two at a document offset."""
    chunk = reference()
    cut = position - chunk.start_index
    before, after = chunk.text[:cut], chunk.text[cut:]
    return (
        Chunk(id="a", source=SOURCE, text=before, start_index=chunk.start_index, end_index=position),
        Chunk(id="b", source=SOURCE, text=after, start_index=position, end_index=chunk.end_index),
    )


@pytest.mark.parametrize("offsets", [True, False], ids=["offsets", "text-only"])
def test_evidence_straddling_a_boundary_counts_for_the_piece_holding_half_of_it(offsets: bool) -> None:
    rule, evidence = judge(), evidence_span()

    def hits(chunk: Chunk) -> bool:
        span = Span(chunk.source, chunk.start_index, chunk.end_index) if offsets else None
        return rule.holds(chunk.text, span, chunk.source if offsets else None)

    length = evidence.end - evidence.start  # 19 characters
    for shift in range(1, length):
        before, after = _cut_at(evidence.start + shift)
        # The piece with at least half of the evidence hits (both, at exactly half); a sliver does not.
        assert hits(before) == (shift >= length / 2), shift
        assert hits(after) == (length - shift >= length / 2), shift
        assert hits(before) or hits(after)


def test_a_piece_of_the_evidence_counts_only_from_inside_the_reference_chunk() -> None:
    evidence, chunk = evidence_span(), reference()
    reference_span = Span(SOURCE, chunk.start_index, chunk.end_index)
    most = evidence.start + 15  # 15 of the 19 characters
    assert covers_evidence(Span(SOURCE, evidence.start - 300, most), evidence, reference_span)
    # The same piece reaching out of the reference chunk: not a hit; holding all of it: a hit.
    assert not covers_evidence(Span(SOURCE, chunk.start_index - 1, most), evidence, reference_span)
    assert covers_evidence(Span(SOURCE, chunk.start_index - 1, evidence.end), evidence, reference_span)
    assert not covers_evidence(Span("other.md", evidence.start - 300, most), evidence, reference_span)


# --------------------------------------------------------------------------------------------------
# The rule on character ranges, as properties
# --------------------------------------------------------------------------------------------------

offsets = st.integers(min_value=0, max_value=400)


@st.composite
def cases(draw: st.DrawFn) -> tuple[Span, Span]:
    """A reference chunk and an evidence span inside it."""
    start = draw(st.integers(0, 200))
    end = draw(st.integers(start + 1, start + 200))
    evidence_start = draw(st.integers(start, end - 1))
    evidence_end = draw(st.integers(evidence_start + 1, end))
    return Span("d", start, end), Span("d", evidence_start, evidence_end)


@given(cases(), offsets, offsets)
def test_any_chunk_holding_the_evidence_hits_and_one_disjoint_from_it_never(
    case: tuple[Span, Span], a: int, b: int
) -> None:
    reference_span, evidence = case
    start, end = min(a, b), max(a, b)
    retrieved = Span("d", start, end)
    if start <= evidence.start and evidence.end <= end:
        assert covers_evidence(retrieved, evidence, reference_span)
    if end <= evidence.start or evidence.end <= start:
        assert not covers_evidence(retrieved, evidence, reference_span)
    assert not covers_evidence(Span("e", start, end), evidence, reference_span)


@given(cases(), st.data())
def test_however_a_boundary_cuts_the_evidence_one_side_hits(case: tuple[Span, Span], data: st.DataObject) -> None:
    reference_span, evidence = case
    cut = data.draw(st.integers(evidence.start, evidence.end))
    left = data.draw(st.integers(reference_span.start, evidence.start))
    right = data.draw(st.integers(evidence.end, reference_span.end))
    assert covers_evidence(Span("d", left, cut), evidence, reference_span) or covers_evidence(
        Span("d", cut, right), evidence, reference_span
    )


@given(st.integers(100, 2600), st.data())
@settings(max_examples=25, deadline=None)
def test_text_and_offsets_agree_for_any_chunk_size(size: int, data: st.DataObject) -> None:
    overlap = data.draw(st.integers(0, size // 4))
    rule = judge()
    for chunk in chunks(size, overlap):
        span = Span(chunk.source, chunk.start_index, chunk.end_index)
        assert rule.holds(chunk.text, span, chunk.source) == rule.holds(chunk.text, None, None)


# --------------------------------------------------------------------------------------------------
# Answers not written as they are, and answers not found
# --------------------------------------------------------------------------------------------------


def test_an_answer_not_written_word_for_word_is_looked_for_where_the_window_put_it() -> None:
    answer = "A ladder of Quartz-Zebra"  # its words, in another order
    evidence = locate_evidence(answer, reference().text)
    assert evidence.match == "window"
    [(start, end)] = evidence.spans
    assert reference().text[start:end] == ANSWER
    for size, overlap in CUTS:
        holding = next(chunk for chunk in chunks(size, overlap) if contains(chunk, evidence_span()))
        output = RagOutput(answer="A ladder.", contexts=[context(holding, offsets=True)])
        assert deterministic_metrics(item(answer), output, 3, {"retrieval"})["evidence_hit@k"] == 1.0


def test_no_evidence_no_value() -> None:
    holding = context(reference(), offsets=True)
    output = RagOutput(answer="Yes.", contexts=[holding])
    values = deterministic_metrics(item("Yes, of course."), output, 3, {"retrieval"})
    assert values["evidence_hit@k"] is None and values["hit@k"] == 1.0
    without_chunk = item().model_copy(update={"context": None})
    values = deterministic_metrics(without_chunk, output, 3, {"retrieval"})
    assert values["evidence_hit@k"] is None  # offsets alone do not say where the answer is


def test_a_context_of_another_document_never_hits_even_with_the_same_words() -> None:
    holding = reference()
    other = RetrievedContext(text=holding.text, source="copy.md")
    values = deterministic_metrics(item(), RagOutput(answer="A.", contexts=[other]), 3, {"retrieval"})
    assert values["evidence_hit@k"] == 0.0
    unnamed = RetrievedContext(text=holding.text)
    values = deterministic_metrics(item(), RagOutput(answer="A.", contexts=[unnamed]), 3, {"retrieval"})
    assert values["evidence_hit@k"] == 1.0


def test_offsets_that_do_not_describe_the_chunk_text_are_not_used() -> None:
    chunk = reference()
    wrong = Span(SOURCE, chunk.start_index, chunk.end_index + 5)  # not document[start:end] == context
    rule = ReferenceEvidence(chunk.text, locate_evidence(ANSWER, chunk.text), wrong, SOURCE)
    far = Span(SOURCE, 0, 10)
    assert rule.holds(f"... {ANSWER} ...", far, SOURCE)  # placed by its text instead
    with pytest.raises(ValueError, match="not found"):
        ReferenceEvidence(chunk.text, Evidence(match="not_found", spans=()), None, SOURCE)


words = st.sampled_from(["alpha", "Beta", "42", "x86_64", "naïve", "北京", "ǅemal", "straße", "ok.", "e\u0301t\u0301"])
separators = st.sampled_from([" ", "  ", "\n", ", ", " - "])


@given(st.lists(st.tuples(words, separators), min_size=1, max_size=25), st.data())
@settings(max_examples=200)
def test_the_evidence_is_placed_in_the_normalised_chunk_as_word_by_word(
    parts: list[tuple[str, str]], data: st.DataObject
) -> None:
    chunk = "".join(word + separator for word, separator in parts)
    start = data.draw(st.integers(0, len(chunk) - 1))
    end = data.draw(st.integers(start + 1, len(chunk)))
    evidence = locate_evidence(chunk[start:end], chunk)
    if not evidence.spans:
        return
    rule = ReferenceEvidence(chunk, evidence, None, None)
    by_words = [rule._place_by_tokens(start, end) for start, end in evidence.spans]
    assert rule._normalised_spans == [place for place in by_words if place is not None]
