"""RAGAS-style metrics from LLM verdicts (definitions of `shared/reference/seeds/000_*.txt`).

- faithfulness = |V| / |S|: the answer is broken into statements S (call 1), and V are those the
  judge finds directly inferable from the retrieved contexts (call 2). An answer with no statement
  ("I don't know") has no faithfulness: `no_statements`, which ragas returns as NaN and leaves
  out of the mean; it is counted apart, never as a judge failure.
- answer_relevancy = (1/n) sum_i cos(E(q), E(q_i)), times 0 if the answer is noncommittal: the judge
  writes n questions q_i the answer would answer; E is the caller's embedding function.
- context_precision = sum_k (precision@k * v_k) / sum_k v_k over the retrieved contexts in rank
  order, v_k = 1 if context k was useful for reaching the reference answer (one call per context);
  0 when none was. (The seed's worked example sums precision@k over every k, also the irrelevant
  ones, and gets 1.09 > 1; RAGAS weights by v_k, giving (1 + 2/3 + 3/5) / 3 = 0.76 there.)
- context_recall = |reference sentences attributable to the contexts| / |reference sentences|.
- context_relevance = |extracted sentences| / |sentences in the contexts|: the RAGAS paper's
  definition (Es et al. 2023, ragas 0.1's `context_relevancy`), see `context_relevance`. ragas >=
  0.2 uses the name `ContextRelevance` for another metric, a 0/1/2 rating of the contexts.

An empty retrieval (no context with any text) scores as ragas scores it: 0 for the metrics of the
contexts, with no call (context_precision: an average precision over no context is 0 in ragas;
context_recall: no reference sentence is attributable to nothing; context_relevance: ragas 0.1
returns 0 when the contexts have no sentence). faithfulness still reads the answer's statements:
with statements, none can be inferred from nothing, so 0 without the verdicts call (ragas asks
for verdicts against an empty context); without any, `no_statements`, as above.

Sentences are counted by `split_sentences` on what the judge was shown. Multi-call metrics keep
every part in `detail`; a failed call or an unreadable reply fails the whole metric.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence

from qagen.evaluate.judges.ragas_parsing import (
    normalise_sentence,
    parse_extraction,
    parse_questions,
    parse_statements,
    parse_verdict,
    parse_verdicts,
    split_sentences,
)
from qagen.evaluate.judges.transcript import JudgeStep, Transcript
from qagen.llm.prompts import load_prompt
from qagen.llm.task import Ask, Compute, Done, Outcome, user_request
from qagen.llm.untrusted import neutralize, numbered, passages

Embed = Callable[[list[str]], Awaitable[list[list[float]]]]
"""Embeds texts, one vector each (e.g. a LangChain `Embeddings.aembed_documents`)."""

ANSWER_RELEVANCY_QUESTIONS = 3  # RAGAS's default `strictness`


def _no_contexts(contexts: Sequence[str]) -> bool:
    return not any(context.strip() for context in contexts)


# --------------------------------------------------------------------------- faithfulness


def render_statements(question: str, answer: str) -> str:
    return load_prompt("ragas_faithfulness_statements").render(question=neutralize(question), answer=neutralize(answer))


def render_statement_verdicts(contexts: Sequence[str], statements: Sequence[str]) -> str:
    prompt = load_prompt("ragas_faithfulness_verdicts")
    return prompt.render(context=passages(contexts), statements=numbered(statements))


def faithfulness(question: str, answer: str, contexts: list[str], model: str) -> JudgeStep:
    """|statements inferable from the contexts| / |statements of the answer|, in [0, 1].

    An answer with no statements (e.g. "I don't know") has no faithfulness: reason `no_statements`
    (ragas: NaN). With no context, an answer that makes statements scores 0 after the statements
    call alone: nothing is inferable from an empty context, so there is nothing to ask the judge.
    """
    t = Transcript("faithfulness", model)
    t.note("ragas_faithfulness_statements", "ragas_faithfulness_verdicts")

    def read_statements(reply: str) -> JudgeStep:
        parsed = parse_statements(reply)
        if parsed.items is None:
            return t.done(None, parsed.reason, step="statements")
        statements = list(parsed.items)
        if not statements:
            return t.done(None, "no_statements", statements=statements)
        if _no_contexts(contexts):
            return t.done(0.0, statements=statements, verdicts=[False] * len(statements), retrieved_nothing=True)

        def read_verdicts(reply: str) -> JudgeStep:
            judged = parse_verdicts(reply, len(statements))
            if judged.verdicts is None:
                return t.done(None, judged.reason, step="verdicts", statements=statements)
            return t.done(
                sum(judged.verdicts) / len(statements),
                statements=statements,
                verdicts=list(judged.verdicts),
                explanations=list(judged.explanations),
            )

        request = user_request(render_statement_verdicts(contexts, statements))
        return t.ask(request, read_verdicts, step="verdicts", statements=statements)

    return t.ask(user_request(render_statements(question, answer)), read_statements, step="statements")


# --------------------------------------------------------------------------- answer relevancy


def render_answer_questions(answer: str, count: int = ANSWER_RELEVANCY_QUESTIONS) -> str:
    return load_prompt("ragas_answer_relevancy").render(answer=neutralize(answer), count=str(count))


def cosine(a: Sequence[float], b: Sequence[float]) -> float | None:
    """cos(a, b) = a.b / (|a| |b|); None when either vector is zero (the angle is undefined)."""
    norm = math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b))
    return None if norm == 0.0 else math.fsum(x * y for x, y in zip(a, b, strict=True)) / norm


def answer_relevancy(
    question: str, answer: str, model: str, embed: Embed | None, *, count: int = ANSWER_RELEVANCY_QUESTIONS
) -> JudgeStep:
    """mean_i cos(E(question), E(q_i)) over the first `count` generated questions, 0 if noncommittal.

    In [-1, 1] (cosines are not clipped). Raises ValueError without `embed`, or if `embed` returns
    the wrong number of vectors: the caller's setup is wrong, not this answer.
    """
    if embed is None:
        raise ValueError("answer_relevancy needs an embedding function (embed=...).")
    t = Transcript("answer_relevancy", model)
    t.note("ragas_answer_relevancy")

    def read(reply: str) -> JudgeStep:
        parsed = parse_questions(reply)
        if parsed.questions is None or parsed.noncommittal is None:
            return t.done(None, parsed.reason, questions=list(parsed.questions or ()))
        questions = list(parsed.questions[:count])  # a model that writes more than asked: the first `count`
        detail: dict[str, object] = {"questions": questions, "noncommittal": parsed.noncommittal}

        def score(vectors: list[list[float]]) -> JudgeStep:
            if len(vectors) != len(questions) + 1:
                raise ValueError(f"embed returned {len(vectors)} vectors for {len(questions) + 1} texts.")
            similarities = [cosine(vectors[0], vector) for vector in vectors[1:]]
            if any(s is None for s in similarities):
                return t.done(None, "zero_embedding", **detail)
            values = [s for s in similarities if s is not None]
            mean = math.fsum(values) / len(values)
            return t.done(0.0 if parsed.noncommittal else mean, similarities=values, **detail)

        return Compute(lambda: embed([question, *questions]), score)

    return t.ask(user_request(render_answer_questions(answer, count)), read)


# --------------------------------------------------------------------------- context precision


def render_context_usefulness(question: str, reference_answer: str, context: str) -> str:
    return load_prompt("ragas_context_precision").render(
        question=neutralize(question), reference_answer=neutralize(reference_answer), context=passages([context])
    )


def average_precision(relevant: Sequence[bool]) -> float:
    """sum_k (precision@k * v_k) / sum_k v_k, with precision@k = (sum_{i<=k} v_i) / k; 0 if none is relevant."""
    hits = 0
    total = 0.0
    for k, is_relevant in enumerate(relevant, 1):
        if is_relevant:
            hits += 1
            total += hits / k
    return total / hits if hits else 0.0


def context_precision(question: str, reference_answer: str, contexts: list[str], model: str) -> JudgeStep:
    """Average precision of the retrieved contexts (rank order), each judged useful or not, in [0, 1]."""
    t = Transcript("context_precision", model)
    t.note("ragas_context_precision")
    if not reference_answer.strip():
        return t.done(None, "no_reference")
    if _no_contexts(contexts):
        return t.done(0.0, verdicts=[], retrieved_nothing=True)  # ragas: no useful context, 0

    def read(outcomes: Sequence[Outcome]) -> JudgeStep:
        verdicts: list[bool | None] = []
        explanations: list[str | None] = []
        reasons: list[str] = []
        for outcome in outcomes:  # in rank order, so `raw` lines up with `verdicts`
            reply = t.record(outcome)
            parsed = parse_verdict(reply) if reply is not None else None
            verdicts.append(parsed.verdicts[0] if parsed and parsed.verdicts else None)
            explanations.append(parsed.explanations[0] if parsed and parsed.explanations else None)
            # A call without a readable reply has no reading: `call_failed` reports its failure.
            reasons.append(parsed.reason if parsed is not None else "")
        detail: dict[str, object] = {"verdicts": verdicts, "explanations": explanations}
        if t.failures:  # a failed call, or a reply cut off at the output cap
            return Done(t.call_failed(**detail))
        failed = next((reason for reason in reasons if reason), "")
        if failed:
            return t.done(None, failed, reasons=reasons, **detail)
        return t.done(average_precision([v is True for v in verdicts]), **detail)

    requests = tuple(user_request(render_context_usefulness(question, reference_answer, c)) for c in contexts)
    return Ask(requests, read)


# --------------------------------------------------------------------------- context recall


def render_context_recall(question: str, contexts: Sequence[str], sentences: Sequence[str]) -> str:
    return load_prompt("ragas_context_recall").render(
        question=neutralize(question), context=passages(contexts), sentences=numbered(sentences)
    )


def context_recall(question: str, reference_answer: str, contexts: list[str], model: str) -> JudgeStep:
    """|reference sentences attributable to the contexts| / |reference sentences|, in [0, 1]."""
    t = Transcript("context_recall", model)
    t.note("ragas_context_recall")
    sentences = split_sentences(reference_answer)
    if not sentences:
        return t.done(None, "no_reference")
    if _no_contexts(contexts):
        # No reference sentence is attributable to nothing.
        return t.done(0.0, sentences=sentences, verdicts=[False] * len(sentences), retrieved_nothing=True)

    def read(reply: str) -> JudgeStep:
        judged = parse_verdicts(reply, len(sentences))
        if judged.verdicts is None:
            return t.done(None, judged.reason, sentences=sentences)
        return t.done(
            sum(judged.verdicts) / len(sentences),
            sentences=sentences,
            verdicts=list(judged.verdicts),
            explanations=list(judged.explanations),
        )

    return t.ask(user_request(render_context_recall(question, contexts, sentences)), read, sentences=sentences)


# --------------------------------------------------------------------------- context relevance


def render_context_relevance(question: str, contexts: Sequence[str]) -> str:
    return load_prompt("ragas_context_relevance").render(question=neutralize(question), context=passages(contexts))


def context_relevance(question: str, contexts: list[str], model: str) -> JudgeStep:
    """The RAGAS paper's context relevance, in [0, 1]:

        context_relevance = |S_extracted ∩ S_context| / |S_context|

    where S_context is the set of distinct sentences of the retrieved contexts (`split_sentences`
    of each context as the judge saw it, compared in `normalise_sentence` form) and S_extracted the
    sentences the judge copied from them as needed to answer the question (prompt
    `ragas_context_relevance`). It is low when the contexts carry much text the question does not
    need: it measures focus, not only relevance. This is Es et al. 2023 (arXiv:2309.15217) and
    ragas 0.1's `context_relevancy` (ragas counts every sentence of the reply, capped at 1; here
    only sentences of the contexts count, each once). ragas >= 0.2 names `ContextRelevance` another
    metric (`nv_context_relevance`): two judge calls each rate whether the contexts hold the
    information to answer the question (0, 1 or 2), and the score is the mean of rating/2; it does
    not penalise extra text. The two are not comparable.

    "Insufficient Information" is 0.0, and so are contexts without a sentence (as in ragas 0.1),
    with no call. An extraction of which no line is a context sentence is not 0 but a failure
    (`extraction_not_verbatim`): the judge paraphrased, so nothing was counted.
    """
    t = Transcript("context_relevance", model)
    t.note("ragas_context_relevance")
    # Sentences of the contexts as the judge saw them (neutralised), so a copy matches exactly.
    shown = [sentence for context in contexts for sentence in split_sentences(neutralize(context))]
    if not shown:
        return t.done(0.0, context_sentences=0, matched=0, unmatched=[], retrieved_nothing=True)

    def read(reply: str) -> JudgeStep:
        parsed = parse_extraction(reply)
        if parsed.sentences is None:
            return t.done(None, parsed.reason)
        known = {normalise_sentence(sentence) for sentence in shown}
        extracted = [sentence for line in parsed.sentences for sentence in split_sentences(line)]
        matched = {normalise_sentence(s) for s in extracted} & known
        unmatched = [s for s in extracted if normalise_sentence(s) not in known]
        detail: dict[str, object] = {"context_sentences": len(known), "matched": len(matched), "unmatched": unmatched}
        if extracted and not matched:
            return t.done(None, "extraction_not_verbatim", **detail)
        # Distinct normalised sentences: a context sentence repeated in the contexts counts once on
        # both sides, so the ratio never exceeds 1.
        return t.done(len(matched) / len(known), **detail)

    return t.ask(user_request(render_context_relevance(question, contexts)), read)
