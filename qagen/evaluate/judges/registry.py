"""The evaluator's LLM judges, and the registry the runner picks them from by name.

Every judge is an async function of the texts and a `JudgeClient` (`qagen.llm.client.LLMClient`) that
returns a `JudgeVerdict`: a value, or a failure with a reason and the raw replies; never a default
score. Usage is summed over the judge's calls, raw replies are kept in call order, and the hashes
of the prompts used go into `detail["prompts"]`.

- `judge_correctness`: the cookbook's Prometheus-style rubric judge, raw score 1-5
  (`normalise_correctness` maps it to [0, 1] as the notebook does: (score - 1) / 4).
- RAGAS metrics (`judges_ragas`): faithfulness, answer_relevancy, context_precision,
  context_recall, context_relevance.
- Boolean graders (`judges_boolean`): correct, relevant, grounded, retrieval_relevant.

Untrusted text (question, answer, reference, contexts) reaches a prompt only neutralised
(`untrusted_text.neutralize`) and between the data tags of the prompt file, which tell the judge
that text inside them is data, not instructions.

The correctness prompt is the notebook's EVALUATION_PROMPT with three changes: its literal
placeholders `{{write a feedback for criteria}}` and `{{an integer number between 1 and 5}}` are
written `<write a feedback for criteria>` and `<an integer number between 1 and 5>` (our renderer
reads every `{lowercase_name}` as a variable, and `parse_prometheus` skips a `[RESULT]` followed by
`<...>` as an echo of the template); the instruction, response and reference sit between
`<question>`, `<response>` and `<reference_answer>` tags; and a fifth task item says that text
inside the tags is data. Its variable is `{question}` where the notebook has `{instruction}`.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from qagen.evaluate.judges.graders import grade_correct, grade_grounded, grade_relevant, grade_retrieval_relevant
from qagen.evaluate.judges.parsing import parse_prometheus
from qagen.evaluate.judges.ragas import (
    Embed,
    answer_relevancy,
    context_precision,
    context_recall,
    context_relevance,
    faithfulness,
)
from qagen.evaluate.judges.transcript import JudgeClient, Transcript
from qagen.evaluate.records import JudgeVerdict
from qagen.llm.prompts import load_prompt
from qagen.llm.untrusted import neutralize

__all__ = [
    "LLM_METRICS",
    "Embed",
    "JudgeClient",
    "MetricRun",
    "MetricSpec",
    "answer_relevancy",
    "context_precision",
    "context_recall",
    "context_relevance",
    "faithfulness",
    "grade_correct",
    "grade_grounded",
    "grade_relevant",
    "grade_retrieval_relevant",
    "judge_correctness",
    "normalise_correctness",
    "render_correctness",
]

CORRECTNESS_PROMPT = "judge_correctness"
CORRECTNESS_SYSTEM = "judge_correctness_system"  # "You are a fair evaluator language model."


def render_correctness(question: str, answer: str, reference_answer: str) -> str:
    """The correctness judge's user message, every value neutralised."""
    return load_prompt(CORRECTNESS_PROMPT).render(
        question=neutralize(question), response=neutralize(answer), reference_answer=neutralize(reference_answer)
    )


def normalise_correctness(score: float) -> float:
    """(score - 1) / 4: the 1-5 rubric score on [0, 1], as in the cookbook notebook."""
    return (score - 1.0) / 4.0


async def judge_correctness(question: str, answer: str, reference_answer: str, client: JudgeClient) -> JudgeVerdict:
    """Prometheus-style correctness of `answer` against `reference_answer`: value = raw score 1-5."""
    t = Transcript("correctness", client.settings.spec)
    t.note(CORRECTNESS_SYSTEM, CORRECTNESS_PROMPT)
    if not reference_answer.strip():
        return t.verdict(None, "no_reference")
    system = load_prompt(CORRECTNESS_SYSTEM).text.strip()
    reply = t.record(await client.complete(render_correctness(question, answer, reference_answer), system=system))
    if reply is None:
        return t.call_failed()
    parsed = parse_prometheus(reply)
    if parsed.score is None:
        return t.verdict(None, parsed.reason, feedback=parsed.feedback)
    return t.verdict(float(parsed.score), feedback=parsed.feedback, normalised=normalise_correctness(parsed.score))


# --------------------------------------------------------------------------- registry

MetricRun = Callable[[str, str, str, list[str], JudgeClient, Embed | None], Coroutine[Any, Any, JudgeVerdict]]
"""`run(question, answer, reference, contexts, client, embed)`: the same signature for every metric
(a coroutine, so it can also go to `asyncio.create_task`)."""


@dataclass(frozen=True)
class MetricSpec:
    """An LLM metric as the runner sees it: what it needs, and how to run it."""

    name: str
    needs_contexts: bool
    """The metric is undefined without retrieved contexts (it then fails with `no_contexts`)."""
    needs_reference: bool
    """The metric compares against the reference answer (it fails with `no_reference` without one)."""
    needs_embeddings: bool
    """`run` raises ValueError when `embed` is None."""
    run: MetricRun
    prompts: tuple[str, ...]
    """The prompt files it uses (their hashes identify the judge together with the model)."""
    value_range: tuple[float, float] = (0.0, 1.0)
    """Where its values lie: (1, 5) for the raw correctness score, (-1, 1) for cosines."""


def _spec(name: str, contexts: bool, reference: bool, run: MetricRun, *prompts: str) -> MetricSpec:
    return MetricSpec(name, contexts, reference, False, run, prompts)


LLM_METRICS: dict[str, MetricSpec] = {
    spec.name: spec
    for spec in (
        MetricSpec(
            "correctness",
            needs_contexts=False,
            needs_reference=True,
            needs_embeddings=False,
            run=lambda q, a, r, c, client, embed: judge_correctness(q, a, r, client),
            prompts=(CORRECTNESS_SYSTEM, CORRECTNESS_PROMPT),
            value_range=(1.0, 5.0),
        ),
        _spec(
            "faithfulness",
            True,
            False,
            lambda q, a, r, c, client, embed: faithfulness(q, a, c, client),
            "ragas_faithfulness_statements",
            "ragas_faithfulness_verdicts",
        ),
        MetricSpec(
            "answer_relevancy",
            needs_contexts=False,
            needs_reference=False,
            needs_embeddings=True,
            run=lambda q, a, r, c, client, embed: answer_relevancy(q, a, client, embed),
            prompts=("ragas_answer_relevancy",),
            value_range=(-1.0, 1.0),
        ),
        _spec(
            "context_precision",
            True,
            True,
            lambda q, a, r, c, client, embed: context_precision(q, r, c, client),
            "ragas_context_precision",
        ),
        _spec(
            "context_recall",
            True,
            True,
            lambda q, a, r, c, client, embed: context_recall(q, r, c, client),
            "ragas_context_recall",
        ),
        _spec(
            "context_relevance",
            True,
            False,
            lambda q, a, r, c, client, embed: context_relevance(q, c, client),
            "ragas_context_relevance",
        ),
        _spec(
            "correct",
            False,
            True,
            lambda q, a, r, c, client, embed: grade_correct(q, a, r, client),
            "grader_correct_system",
            "grader_correct",
        ),
        _spec(
            "relevant",
            False,
            False,
            lambda q, a, r, c, client, embed: grade_relevant(q, a, client),
            "grader_relevant_system",
            "grader_relevant",
        ),
        _spec(
            "grounded",
            True,
            False,
            lambda q, a, r, c, client, embed: grade_grounded(a, c, client),
            "grader_grounded_system",
            "grader_grounded",
        ),
        _spec(
            "retrieval_relevant",
            True,
            False,
            lambda q, a, r, c, client, embed: grade_retrieval_relevant(q, c, client),
            "grader_retrieval_relevant_system",
            "grader_retrieval_relevant",
        ),
    )
}
