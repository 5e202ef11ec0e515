"""Deterministic per-question metrics (no LLM): retrieval at document and chunk level, text overlap."""

from __future__ import annotations

from typing import Any

from qagen.evaluate.records import EvalItem, RagOutput
from qagen.evaluate.retrieval_metrics import (
    Span,
    chunk_hit_ranks,
    hit_at_k,
    hit_at_k_from_relevance,
    ndcg_at_k,
    ndcg_at_k_from_relevance,
    reciprocal_rank,
    reciprocal_rank_from_relevance,
)
from qagen.evaluate.text_metrics import context_rouge_l_recall, token_f1

DETERMINISTIC_GROUPS = {
    "retrieval": ("hit@k", "reciprocal_rank", "ndcg@k", "chunk_hit@k", "chunk_reciprocal_rank", "chunk_ndcg@k"),
    "text": ("context_rouge_l_recall", "token_f1"),
}


def deterministic_metrics(item: EvalItem, output: RagOutput, k: int, groups: set[str]) -> dict[str, Any]:
    """Every deterministic metric whose inputs exist for this question; None where they do not.

    Document level compares the retrieved sources with the question's `source_doc`. Chunk level
    needs character offsets on both sides: a retrieved context counts when it overlaps at least
    half of the chunk the question was drafted from.
    """
    values: dict[str, Any] = {}
    contexts = output.contexts[:k] if output.contexts else []
    if "retrieval" in groups:
        sources = [context.source or "" for context in contexts]
        doc_ok = bool(item.source_doc) and any(sources)
        values["hit@k"] = hit_at_k(sources, item.source_doc or "", k) if doc_ok else None
        values["reciprocal_rank"] = reciprocal_rank(sources, item.source_doc or "") if doc_ok else None
        values["ndcg@k"] = ndcg_at_k(sources, item.source_doc or "", k) if doc_ok else None
        spans = [
            Span(c.source, c.start_index, c.end_index)
            if c.source is not None and c.start_index is not None and c.end_index is not None
            else None
            for c in contexts
        ]
        chunk_ok = item.source_doc and item.start_index is not None and item.end_index is not None and any(spans)
        if chunk_ok:
            reference = Span(item.source_doc or "", item.start_index or 0, item.end_index or 0)
            relevance = chunk_hit_ranks(spans, reference)
            values["chunk_hit@k"] = hit_at_k_from_relevance(relevance, k)
            values["chunk_reciprocal_rank"] = reciprocal_rank_from_relevance(relevance)
            values["chunk_ndcg@k"] = ndcg_at_k_from_relevance(relevance, k, n_relevant=1)
        else:
            values["chunk_hit@k"] = values["chunk_reciprocal_rank"] = values["chunk_ndcg@k"] = None
    if "text" in groups:
        values["context_rouge_l_recall"] = (
            context_rouge_l_recall([c.text for c in contexts], item.true_answer) if contexts else None
        )
        values["token_f1"] = token_f1(output.answer, item.true_answer) if output.answer is not None else None
    return values
