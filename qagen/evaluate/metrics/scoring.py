"""Deterministic per-question metrics (no LLM): retrieval at document and chunk level, text overlap."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

from qagen.corpus.evidence import Evidence, locate_evidence
from qagen.corpus.squad import token_f1
from qagen.evaluate.metrics.evidence_hits import ReferenceEvidence
from qagen.evaluate.metrics.retrieval import (
    Span,
    binary_relevance,
    hit_at_k,
    hit_at_k_from_relevance,
    ndcg_at_k,
    ndcg_at_k_from_relevance,
    reciprocal_rank_at_k,
    reciprocal_rank_at_k_from_relevance,
)
from qagen.evaluate.metrics.text import context_rouge_l_recall
from qagen.evaluate.records import EvalItem, RagOutput
from qagen.question_types import scoring_of
from qagen.records import RetrievedContext


@dataclass(frozen=True)
class ScoreSpec:
    """A deterministic metric, declared once: everything else (the groups, the summary's names, the
    help, the report's notes on scales) reads it from `SCORES`. Every value is on [0, 1]."""

    column: str
    """Its column of `results.jsonl`, one value per question; `@k` stands for the cutoff there."""
    group: str
    """The group `metrics` asks for it by (`retrieval`, `text`)."""
    help: str
    """What a question's value is, in a few words."""
    summary: str | None = None
    """Its name in `summary.json` when that is not the column's: the mean of reciprocal ranks is MRR
    (`mrr@k`). `@k` is written out there (`mrr@7`)."""
    several_passages: bool = False
    """It exists on questions of several passages only (the others leave the column out)."""

    @property
    def summary_name(self) -> str:
        return self.summary or self.column


PASSAGES_FOUND = "passages_found@k"
"""A question of several passages: the share of its passages' documents among the top k (the partial
hit beside `hit@k`, which needs them all). The column exists on such questions only."""

SCORES: tuple[ScoreSpec, ...] = (
    ScoreSpec("hit@k", "retrieval", "1 when the question's source document is among the top k, else 0"),
    ScoreSpec(
        "reciprocal_rank@k",
        "retrieval",
        "1 / the rank of the source document within the top k, 0 beyond",
        summary="mrr@k",
    ),
    ScoreSpec("ndcg@k", "retrieval", "NDCG@k of the source document (binary relevance)"),
    ScoreSpec("evidence_hit@k", "retrieval", "1 when a top-k chunk holds the reference answer's evidence, else 0"),
    ScoreSpec(
        "evidence_reciprocal_rank@k",
        "retrieval",
        "1 / the rank of the first chunk holding the evidence within the top k, 0 beyond",
        summary="evidence_mrr@k",
    ),
    ScoreSpec("evidence_ndcg@k", "retrieval", "NDCG@k of the first chunk holding the evidence"),
    ScoreSpec(
        PASSAGES_FOUND,
        "retrieval",
        "the share of the question's passages whose document is among the top k",
        several_passages=True,
    ),
    ScoreSpec("context_rouge_l_recall", "text", "ROUGE-L recall of the reference answer in the retrieved contexts"),
    ScoreSpec("token_f1", "text", "token F1 of the answer against the reference (SQuAD's)"),
)
"""The deterministic metrics, in the order the summary lists them."""

SCORES_BY_COLUMN = {spec.column: spec for spec in SCORES}

EVIDENCE_COLUMNS = tuple(spec.column for spec in SCORES if spec.column.startswith("evidence_"))
"""The chunk-level columns: a retrieved chunk is relevant when it holds the reference answer's
evidence (`qagen.evaluate.metrics.evidence_hits`)."""

NOT_RETRIEVAL_SCORED = "scored_by_abstention"
"""Why a question of a type scored by abstention (`unanswerable`) has no retrieval or text values:
nothing in the corpus answers it, so there is nothing to retrieve, and the words of a refusal say
nothing of whether it is one (a refusal that shares no word with the reference's "the documents do
not answer" is still a refusal: the abstention judge reads it)."""


def _columns_by_group() -> dict[str, tuple[str, ...]]:
    groups: dict[str, tuple[str, ...]] = {}
    for spec in SCORES:
        if not spec.several_passages:
            groups[spec.group] = (*groups.get(spec.group, ()), spec.column)
    return groups


DETERMINISTIC_GROUPS = _columns_by_group()
"""Each group's columns that every question has (`PASSAGES_FOUND` aside), in `SCORES`' order."""


class Reported(NamedTuple):
    """What a system reports with its answers, judged over the whole run.

    A question whose answer came with no contexts means "retrieved nothing" (scored 0) for a system
    that reports contexts (or sources) elsewhere in the run, and "unknown" (no value) for
    one that never does: a plain-answer system must not score 0 on retrieval, and a retriever that
    sometimes finds nothing must not have those questions dropped from its mean.
    """

    contexts: bool = False
    sources: bool = False


NOTHING_REPORTED = Reported()


def reported(outputs: Iterable[RagOutput]) -> Reported:
    """What the `outputs` of one run report, any of them."""
    contexts = sources = False
    for output in outputs:
        for context in output.contexts:
            contexts = True
            sources = sources or context.source is not None
    return Reported(contexts, sources)


def _span(context: RetrievedContext) -> Span | None:
    if context.source is None or context.start_index is None or context.end_index is None:
        return None
    return Span(context.source, context.start_index, context.end_index)


def question_evidence(item: EvalItem) -> Evidence | None:
    """Where the question's reference answer is written in its chunk: the evidence the build placed
    when the set carries it, else the answer looked for in the chunk; None when the chunk's text is unknown."""
    if not item.context:
        return None
    return placed_evidence(item) or locate_evidence(item.true_answer, item.context)


def placed_evidence(item: EvalItem) -> Evidence | None:
    """The evidence offsets the build stored (document offsets), as a span of the chunk; None when
    the set has none, or they do not lie inside the chunk."""
    if item.evidence_start is None or item.evidence_end is None or item.start_index is None or not item.context:
        return None
    start, end = item.evidence_start - item.start_index, item.evidence_end - item.start_index
    if not 0 <= start < end <= len(item.context):
        return None
    return Evidence(match="quoted", spans=((start, end),))


def _evidence_relevance(item: EvalItem, evidence: Evidence, contexts: list[RetrievedContext]) -> list[bool]:
    known = item.source_doc is not None and item.start_index is not None and item.end_index is not None
    reference = Span(item.source_doc or "", item.start_index or 0, item.end_index or 0) if known else None
    judge = ReferenceEvidence(item.context or "", evidence, reference, item.source_doc)
    return judge.relevance([(context.text, _span(context), context.source) for context in contexts])


def deterministic_metrics(
    item: EvalItem,
    output: RagOutput,
    k: int,
    groups: set[str],
    run: Reported = NOTHING_REPORTED,
    evidence: Evidence | None = None,
) -> dict[str, float | None]:
    """Every deterministic metric whose inputs exist for this question; None where they do not.

    Document level compares the retrieved sources with the question's `source_doc`. Chunk level
    (`evidence_*`) counts a retrieved context when it holds the reference answer's evidence in the
    question's chunk (`evidence` as `question_evidence(item)` gives it, computed here when not
    given; the rule: `qagen.evaluate.metrics.evidence_hits`): it needs the chunk's text and an
    answer located in it. An answer with no contexts scores 0 on what the system reports elsewhere
    in the `run` (see `Reported`); a failed answer without contexts has no retrieval values (its
    failure is counted apart).
    """
    values: dict[str, float | None] = {}
    contexts = output.contexts[:k]
    retrieved_nothing = output.answer is not None and not output.contexts
    if scoring_of(item.question_type) == "abstention":
        # Nothing in the corpus answers it: no retrieval to score (the reason: `NOT_RETRIEVAL_SCORED`).
        if "retrieval" in groups:
            values.update(dict.fromkeys(DETERMINISTIC_GROUPS["retrieval"]))
        if "text" in groups:
            values.update(dict.fromkeys(DETERMINISTIC_GROUPS["text"]))
        return values
    if "retrieval" in groups:
        sources = [context.source or "" for context in contexts]
        # A question of several passages needs every passage's document: a hit is all of them.
        relevant: str | tuple[str, ...] = tuple(dict.fromkeys(item.source_docs)) or (item.source_doc or "")
        if relevant and (any(sources) or (retrieved_nothing and run.sources)):
            found = binary_relevance(sources[:k], relevant)
            values["hit@k"] = (
                float(sum(found) == len(relevant)) if isinstance(relevant, tuple) else hit_at_k(sources, relevant, k)
            )
            values["reciprocal_rank@k"] = reciprocal_rank_at_k(sources, relevant, k)
            values["ndcg@k"] = ndcg_at_k(sources, relevant, k)
            if isinstance(relevant, tuple):
                values[PASSAGES_FOUND] = sum(found) / len(relevant)
        else:
            values["hit@k"] = values["reciprocal_rank@k"] = values["ndcg@k"] = None
        if evidence is None:
            evidence = question_evidence(item)
        if evidence is not None and evidence.spans and (contexts or (retrieved_nothing and run.contexts)):
            relevance = _evidence_relevance(item, evidence, contexts)
            values["evidence_hit@k"] = hit_at_k_from_relevance(relevance, k)
            values["evidence_reciprocal_rank@k"] = reciprocal_rank_at_k_from_relevance(relevance, k)
            values["evidence_ndcg@k"] = ndcg_at_k_from_relevance(relevance, k, n_relevant=1)
        else:
            values.update(dict.fromkeys(EVIDENCE_COLUMNS))
    if "text" in groups:
        texts = [c.text for c in contexts]
        values["context_rouge_l_recall"] = (
            context_rouge_l_recall(texts, item.true_answer) if texts or (retrieved_nothing and run.contexts) else None
        )
        values["token_f1"] = token_f1(output.answer, item.true_answer) if output.answer is not None else None
    return values
