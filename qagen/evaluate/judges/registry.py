"""The evaluator's LLM judges as tasks, and the registry the runner picks them from by name.

Every judge is a pure state machine (`qagen.llm.task`) over a `JudgeInput` (the question, the
answer, the reference and the contexts the judge sees) that ends with a `JudgeVerdict`: a value,
or a failure with a reason and the raw replies; never a default score. Usage is summed over the
judge's calls, raw replies are kept in call order, and the hashes of the prompts used go into
`detail["prompts"]`. `JudgeTask` wraps one metric as a task, with the resume key of its verdicts.

- `correctness`: the cookbook's Prometheus-style rubric judge, raw score 1-5.
- RAGAS metrics (`ragas`): faithfulness, answer_relevancy, context_precision, context_recall,
  context_relevance.
- Boolean graders (`graders`): correct, relevant, grounded, retrieval_relevant.
- `abstention`: whether the system declined to answer a question its documents do not answer
  (only the questions of a type scored by abstention: `unanswerable`).

Untrusted text (question, answer, reference, contexts) reaches a prompt only neutralised
(`qagen.llm.untrusted.neutralize`) and between the data tags of the prompt file, which tell the
judge that text inside them is data, not instructions.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from qagen.evaluate.judges.abstention import ABSTENTION_PROMPT, ABSTENTION_SYSTEM, judge_abstention
from qagen.evaluate.judges.correctness import CORRECTNESS_PROMPT, CORRECTNESS_SYSTEM, judge_correctness
from qagen.evaluate.judges.graders import grade_correct, grade_grounded, grade_relevant, grade_retrieval_relevant
from qagen.evaluate.judges.ragas import (
    Embed,
    answer_relevancy,
    context_precision,
    context_recall,
    context_relevance,
    faithfulness,
)
from qagen.evaluate.judges.transcript import JudgeStep
from qagen.evaluate.records import EvalItem, JudgementRecord
from qagen.llm.prompts import load_prompt
from qagen.llm.task import Ask, Compute, Done, Role, Step, Task
from qagen.question_types import scoring_of
from qagen.runs.store import record_key

__all__ = ["LLM_METRICS", "NOT_ITS_TYPE", "Embed", "JudgeInput", "JudgeTask", "MetricSpec"]

NOT_ITS_TYPE = "not_its_question_type"
"""A metric's reason for no value on a question of a type it does not score (abstention on a factoid)."""


class JudgeInput(NamedTuple):
    """What a judge judges: a test question (with its reference), the answer, and the contexts shown."""

    item: EvalItem
    answer: str
    contexts: tuple[str, ...]


MetricStart = Callable[[JudgeInput, str, "Embed | None"], JudgeStep]
"""`start(input, judge_model, embed)`: the first step of a metric's judgement."""


@dataclass(frozen=True)
class MetricSpec:
    """An LLM metric as the runner sees it: what it needs, and how it starts."""

    name: str
    needs_contexts: bool
    """The metric judges the retrieved contexts. An empty retrieval scores as ragas scores it (0; for
    faithfulness 0 once the answer is found to make statements): see `qagen.evaluate.judges.ragas`.
    A system that never reports contexts is not judged on it (`no_contexts`, `results.py`)."""
    needs_reference: bool
    """The metric compares against the reference answer (it fails with `no_reference` without one)."""
    needs_embeddings: bool
    """`start` raises ValueError when `embed` is None."""
    start: MetricStart
    prompts: tuple[str, ...]
    """The prompt files it uses (their hashes identify the judge together with the model)."""
    value_range: tuple[float, float] = (0.0, 1.0)
    """Where its values lie: (1, 5) for the raw correctness score, (-1, 1) for cosines."""
    scoring: str | None = None
    """The questions it judges: those of the question types scored this way (`QuestionTypeSpec.scoring`:
    `abstention`); None: every question. The others get no value, with the reason `NOT_ITS_TYPE`."""

    def judges(self, item: EvalItem) -> bool:
        """Whether it judges this question (its type is scored the way it scores)."""
        return self.scoring is None or scoring_of(item.question_type) == self.scoring


def _spec(name: str, contexts: bool, reference: bool, start: MetricStart, *prompts: str) -> MetricSpec:
    return MetricSpec(name, contexts, reference, False, start, prompts)


LLM_METRICS: dict[str, MetricSpec] = {
    spec.name: spec
    for spec in (
        MetricSpec(
            "correctness",
            needs_contexts=False,
            needs_reference=True,
            needs_embeddings=False,
            start=lambda j, model, embed: judge_correctness(j.item.question, j.answer, j.item.true_answer, model),
            prompts=(CORRECTNESS_SYSTEM, CORRECTNESS_PROMPT),
            value_range=(1.0, 5.0),
        ),
        _spec(
            "faithfulness",
            True,
            False,
            lambda j, model, embed: faithfulness(j.item.question, j.answer, list(j.contexts), model),
            "ragas_faithfulness_statements",
            "ragas_faithfulness_verdicts",
        ),
        MetricSpec(
            "answer_relevancy",
            needs_contexts=False,
            needs_reference=False,
            needs_embeddings=True,
            start=lambda j, model, embed: answer_relevancy(j.item.question, j.answer, model, embed),
            prompts=("ragas_answer_relevancy",),
            value_range=(-1.0, 1.0),
        ),
        _spec(
            "context_precision",
            True,
            True,
            lambda j, model, embed: context_precision(j.item.question, j.item.true_answer, list(j.contexts), model),
            "ragas_context_precision",
        ),
        _spec(
            "context_recall",
            True,
            True,
            lambda j, model, embed: context_recall(j.item.question, j.item.true_answer, list(j.contexts), model),
            "ragas_context_recall",
        ),
        _spec(
            "context_relevance",
            True,
            False,
            lambda j, model, embed: context_relevance(j.item.question, list(j.contexts), model),
            "ragas_context_relevance",
        ),
        _spec(
            "correct",
            False,
            True,
            lambda j, model, embed: grade_correct(j.item.question, j.answer, j.item.true_answer, model),
            "grader_correct_system",
            "grader_correct",
        ),
        _spec(
            "relevant",
            False,
            False,
            lambda j, model, embed: grade_relevant(j.item.question, j.answer, model),
            "grader_relevant_system",
            "grader_relevant",
        ),
        _spec(
            "grounded",
            True,
            False,
            lambda j, model, embed: grade_grounded(j.answer, list(j.contexts), model),
            "grader_grounded_system",
            "grader_grounded",
        ),
        _spec(
            "retrieval_relevant",
            True,
            False,
            lambda j, model, embed: grade_retrieval_relevant(j.item.question, list(j.contexts), model),
            "grader_retrieval_relevant_system",
            "grader_retrieval_relevant",
        ),
        MetricSpec(
            "abstention",
            needs_contexts=False,
            needs_reference=False,
            needs_embeddings=False,
            start=lambda j, model, embed: judge_abstention(j.item.question, j.answer, model),
            prompts=(ABSTENTION_SYSTEM, ABSTENTION_PROMPT),
            scoring="abstention",
        ),
    )
}


class JudgeTask(Task[JudgeInput, JudgementRecord]):
    """One metric's judge as a task: its verdict on one answer, stored under an exact key."""

    role: Role = "judge"

    def __init__(self, metric: str, model: str, embed: Embed | None = None) -> None:
        self.spec = LLM_METRICS[metric]
        self.name = f"judge:{metric}"
        self.model = model
        self.embed = embed
        self.prompts = tuple(load_prompt(name) for name in self.spec.prompts)

    def key(self, item: JudgeInput) -> str:
        # The verdict depends on what was judged (the answer and the contexts the judge saw, i.e.
        # the top k), on the reference, and on the judge: its model and the text of its prompts.
        payload = json.dumps([item.answer, list(item.contexts)], ensure_ascii=False)
        digest = hashlib.sha256(payload.encode("utf-8")).hexdigest()
        prompts = ",".join(prompt.hash for prompt in self.prompts)
        return record_key("judgement", item.item.id, self.spec.name, self.model, prompts, digest, item.item.true_answer)

    def start(self, item: JudgeInput) -> Step[JudgementRecord]:
        return _as_record(self.spec.start(item, self.model, self.embed), self.key(item), item.item.id, self.model)


def _as_record(step: JudgeStep, key: str, item_id: str, model: str) -> Step[JudgementRecord]:
    """The judge's steps, with its verdict wrapped in the record that stores it."""
    if isinstance(step, Done):
        return Done(JudgementRecord(id=key, item_id=item_id, judge_model=model, verdict=step.record))
    then = step.then

    def wrapped(value: object) -> Step[JudgementRecord]:
        return _as_record(then(value), key, item_id, model)  # type: ignore[arg-type]

    if isinstance(step, Compute):
        return Compute(step.work, wrapped)
    return Ask(step.requests, wrapped)
