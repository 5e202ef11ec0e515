"""The evaluator's LLM metrics, each declared once (`MetricSpec` in `LLM_METRICS`), and their judges as tasks.

The registry is what everything else reads: `metric_groups()` (the `metrics` groups, `all`
included), the CLI's help of the metrics option, the summary's judges and their prompt hashes, the
review's list of judges that say "correct", and the stand-in LLM's grader layouts. A new metric is
one `register_metric(MetricSpec(...))`, or `register_grader(name, help=..., prompt_folder=...)` for a
boolean grader that is two prompt files (`grader_<name>_system.txt`, `grader_<name>.txt`), or an
entry point of an installed package (`qagen.llm_metrics`: docs/extending.md).

Every judge is a pure state machine (`qagen.llm.task`) over a `JudgeInput` (the question, the
answer, the reference and the contexts the judge sees) that ends with a `JudgeVerdict`: a value,
or a failure with a reason and the raw replies; never a default score. Usage is summed over the
judge's calls, raw replies are kept in call order, and the hashes of the prompts used go into
`detail["prompts"]`. `JudgeTask` wraps one metric as a task, with the resume key of its verdicts.

- `answer_correct` (the default): a yes/no "is the response correct, given the reference?" read as
  P(yes), capped by the reference's key terms (`answer_correct`); correct at `CORRECT_AT`.
- `correctness`: the cookbook's Prometheus-style rubric judge, 1-5 (an expected rating when the server
  sends token probabilities).
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
from pathlib import Path
from typing import NamedTuple

from qagen.errors import ConfigError
from qagen.evaluate.judges.abstention import ABSTENTION_PROMPT, ABSTENTION_SYSTEM, judge_abstention
from qagen.evaluate.judges.answer_correct import ANSWER_CORRECT_PROMPT, CORRECT_AT, judge_answer_correct
from qagen.evaluate.judges.correctness import (
    CORRECTNESS_PROMPT,
    CORRECTNESS_SYSTEM,
    judge_correctness,
    normalise_correctness,
)
from qagen.evaluate.judges.graders import (
    GRADER_INPUTS,
    grade_correct,
    grade_grounded,
    grade_relevant,
    grade_retrieval_relevant,
    grade_with,
    grader_values,
)
from qagen.evaluate.judges.ragas import (
    Embed,
    answer_relevancy,
    context_precision,
    context_recall,
    context_relevance,
    faithfulness,
)
from qagen.evaluate.judges.transcript import JudgeStep
from qagen.evaluate.metrics.scoring import DETERMINISTIC_METRICS
from qagen.evaluate.records import EvalItem, JudgementRecord
from qagen.llm.prompts import Prompt, load_prompt
from qagen.llm.task import Ask, Compute, Done, Role, Step, Task
from qagen.question_types import scoring_of
from qagen.registry import Registry
from qagen.runs.store import record_key

__all__ = [
    "LLM_METRICS",
    "NOT_ITS_TYPE",
    "Embed",
    "JudgeInput",
    "JudgeTask",
    "MetricSpec",
    "Rescaling",
    "grader",
    "metric_groups",
    "register_grader",
    "register_metric",
]

NOT_ITS_TYPE = "not_its_question_type"
"""A metric's reason for no value on a question of a type it does not score (abstention on a factoid)."""


class JudgeInput(NamedTuple):
    """What a judge judges: a test question (with its reference), the answer, and the contexts shown."""

    item: EvalItem
    answer: str
    contexts: tuple[str, ...]


MetricStart = Callable[[JudgeInput, str, "Embed | None"], JudgeStep]
"""`start(input, judge_model, embed)`: the first step of a metric's judgement."""


class Rescaling(NamedTuple):
    """How the summary reads a metric's values when not as they are: each value through `apply`
    before the mean, as `formula` says (the report and `summary.json`'s `columns` quote it)."""

    formula: str
    apply: Callable[[float], float]
    range: tuple[float, float]
    """Where the rescaled values lie."""


CORRECTNESS_RESCALING = Rescaling("(score - 1) / 4", normalise_correctness, (0.0, 1.0))
"""The notebook's normalisation of the 1-5 rubric score: 0 when an answer scored 1, 1 when it scored 5."""


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
    group: str
    """The group `metrics` names it by with its kin (`ragas`, `graders`; `correctness` is its own)."""
    help: str
    """What it measures, in a few words (the CLI's help lists it)."""
    value_range: tuple[float, float] = (0.0, 1.0)
    """Where its values in `results.jsonl` lie: (1, 5) for the raw correctness score, (-1, 1) for cosines."""
    summarised_as: Rescaling | None = None
    """How the summary reads its values, when not as they are (correctness: `CORRECTNESS_RESCALING`)."""
    reviewable: bool = False
    """Its value is a verdict on the answer (a grader's 1.0 / 0.0, correctness at its midpoint): the
    review compares it with people's `correct` labels (`qagen.review.eval_answers`)."""
    reads_probabilities: bool = False
    """Its verdict is read from the judge's token probabilities where the server sends them (answer_correct's
    P(yes), correctness's expected rating): the evaluation asks for them, and says once when none came."""
    correct_at: float = 0.5
    """A reviewable metric's cut: an answer whose value is at least this is judged correct (a grader's
    1.0; correctness's 3, the midpoint of its scale; answer_correct's `CORRECT_AT`)."""
    prompt_folder: str | None = None
    """Where its prompt files are, when they are not qagen's bundled prompts (a registered metric's)."""

    scoring: str | None = None
    """The questions it judges: those of the question types scored this way (`QuestionTypeSpec.scoring`:
    `abstention`); None: every question. The others get no value, with the reason `NOT_ITS_TYPE`."""

    def judges(self, item: EvalItem) -> bool:
        """Whether it judges this question (its type is scored the way it scores)."""
        return self.scoring is None or scoring_of(item.question_type) == self.scoring

    def load_prompts(self) -> tuple[Prompt, ...]:
        folder = Path(self.prompt_folder) if self.prompt_folder else None
        return tuple(load_prompt(name, folder) for name in self.prompts)


def _spec(
    name: str,
    contexts: bool,
    reference: bool,
    start: MetricStart,
    *prompts: str,
    group: str,
    help: str,
    reviewable: bool = False,
) -> MetricSpec:
    return MetricSpec(name, contexts, reference, False, start, prompts, group=group, help=help, reviewable=reviewable)


LLM_METRICS: Registry[MetricSpec] = Registry(
    "llm_metrics",
    MetricSpec,
    noun="LLM metric",
    specs=(
        MetricSpec(
            "answer_correct",
            needs_contexts=False,
            needs_reference=True,
            needs_embeddings=False,
            start=lambda j, model, embed: judge_answer_correct(j.item.question, j.answer, j.item.true_answer, model),
            prompts=(ANSWER_CORRECT_PROMPT,),
            group="answer_correct",
            help=f"yes/no: is the answer correct, given the reference? P(yes), capped when it holds none of the "
            f"reference's key terms; correct at >= {CORRECT_AT}",
            reviewable=True,
            reads_probabilities=True,
            correct_at=CORRECT_AT,
        ),
        MetricSpec(
            "correctness",
            needs_contexts=False,
            needs_reference=True,
            needs_embeddings=False,
            start=lambda j, model, embed: judge_correctness(j.item.question, j.answer, j.item.true_answer, model),
            prompts=(CORRECTNESS_SYSTEM, CORRECTNESS_PROMPT),
            group="correctness",
            help="the cookbook's 1-5 rubric judge of the answer against the reference",
            value_range=(1.0, 5.0),
            summarised_as=CORRECTNESS_RESCALING,
            reviewable=True,
            reads_probabilities=True,
            correct_at=3.0,
        ),
        _spec(
            "faithfulness",
            True,
            False,
            lambda j, model, embed: faithfulness(j.item.question, j.answer, list(j.contexts), model),
            "ragas_faithfulness_statements",
            "ragas_faithfulness_verdicts",
            group="ragas",
            help="share of the answer's statements the contexts support",
        ),
        MetricSpec(
            "answer_relevancy",
            needs_contexts=False,
            needs_reference=False,
            needs_embeddings=True,
            start=lambda j, model, embed: answer_relevancy(j.item.question, j.answer, model, embed),
            prompts=("ragas_answer_relevancy",),
            group="ragas",
            help="how well questions drawn back from the answer match the question, by embeddings",
            value_range=(-1.0, 1.0),
        ),
        _spec(
            "context_precision",
            True,
            True,
            lambda j, model, embed: context_precision(j.item.question, j.item.true_answer, list(j.contexts), model),
            "ragas_context_precision",
            group="ragas",
            help="ranked usefulness of the contexts for the reference",
        ),
        _spec(
            "context_recall",
            True,
            True,
            lambda j, model, embed: context_recall(j.item.question, j.item.true_answer, list(j.contexts), model),
            "ragas_context_recall",
            group="ragas",
            help="share of the reference's sentences the contexts support",
        ),
        _spec(
            "context_relevance",
            True,
            False,
            lambda j, model, embed: context_relevance(j.item.question, list(j.contexts), model),
            "ragas_context_relevance",
            group="ragas",
            help="share of the contexts' sentences relevant to the question",
        ),
        _spec(
            "correct",
            False,
            True,
            lambda j, model, embed: grade_correct(j.item.question, j.answer, j.item.true_answer, model),
            "grader_correct_system",
            "grader_correct",
            group="graders",
            reviewable=True,
            help="true when the answer agrees with the reference",
        ),
        _spec(
            "relevant",
            False,
            False,
            lambda j, model, embed: grade_relevant(j.item.question, j.answer, model),
            "grader_relevant_system",
            "grader_relevant",
            group="graders",
            reviewable=True,
            help="true when the answer addresses the question",
        ),
        _spec(
            "grounded",
            True,
            False,
            lambda j, model, embed: grade_grounded(j.answer, list(j.contexts), model),
            "grader_grounded_system",
            "grader_grounded",
            group="graders",
            reviewable=True,
            help="true when the answer says nothing the contexts do not",
        ),
        _spec(
            "retrieval_relevant",
            True,
            False,
            lambda j, model, embed: grade_retrieval_relevant(j.item.question, list(j.contexts), model),
            "grader_retrieval_relevant_system",
            "grader_retrieval_relevant",
            group="graders",
            reviewable=True,
            help="true when the contexts relate to the question",
        ),
        MetricSpec(
            "abstention",
            needs_contexts=False,
            needs_reference=False,
            needs_embeddings=False,
            start=lambda j, model, embed: judge_abstention(j.item.question, j.answer, model),
            prompts=(ABSTENTION_SYSTEM, ABSTENTION_PROMPT),
            group="abstention",
            help="unanswerable questions only: 1 when the system declines to answer, 0 when it answers anyway",
            scoring="abstention",
        ),
    ),
)
"""Every LLM metric: qagen's, those `register_metric` adds, and those installed packages bring (entry
points `qagen.llm_metrics`, each naming a `MetricSpec`; `grader` makes one from two prompt files)."""


ALL = "all"


def register_metric(spec: MetricSpec) -> MetricSpec:
    """Add an LLM metric to every evaluation from now on: `metrics` names it, or its group, or `all`."""
    if spec.name in _metric_names():
        raise ConfigError(f"A metric or group named {spec.name} exists already; give yours another name.")
    return LLM_METRICS.register(spec)


def unregister_metric(name: str) -> None:
    """Take a registered metric out again (tests, or a plugin that replaces one)."""
    LLM_METRICS.unregister(name)


def register_grader(name: str, *, help: str, prompt_folder: Path | str, group: str = "graders") -> MetricSpec:
    """Add the boolean grader `grader` makes to every evaluation from now on."""
    return register_metric(grader(name, help=help, prompt_folder=prompt_folder, group=group))


def grader(name: str, *, help: str, prompt_folder: Path | str, group: str = "graders") -> MetricSpec:
    """A boolean grader from two prompt files in `prompt_folder`: `grader_<name>_system.txt` (the
    instructions) and `grader_<name>.txt` (the data, between tags), whose placeholders among
    `GRADER_INPUTS` say what it reads; the reply is `Explanation: ...` then `Grade: true|false`.
    Register it (`register_metric`), or name it in an entry point of `qagen.llm_metrics`."""
    folder = Path(prompt_folder).resolve()
    system, user = (load_prompt(f"grader_{name}_system", folder), load_prompt(f"grader_{name}", folder))
    unknown = sorted(user.variables - set(GRADER_INPUTS))
    if unknown or not user.variables:
        raise ConfigError(
            f"The prompt grader_{name}.txt reads {sorted(user.variables)}; a grader reads some of "
            f"{', '.join(GRADER_INPUTS)} and nothing else."
        )

    def start(judged: JudgeInput, model: str, embed: Embed | None) -> JudgeStep:
        values = grader_values(
            user, judged.item.question, judged.answer, judged.item.true_answer, list(judged.contexts)
        )
        return grade_with(name, model, system, user, **values)

    return MetricSpec(
        name,
        needs_contexts="facts" in user.variables,
        needs_reference="reference_answer" in user.variables,
        needs_embeddings=False,
        start=start,
        prompts=(system.name, user.name),
        group=group,
        help=help,
        reviewable=True,
        prompt_folder=str(folder),
    )


def _metric_names() -> set[str]:
    """Every name `metrics` knows: the LLM and deterministic metrics, the groups, `all`."""
    groups = {spec.group for spec in LLM_METRICS if spec.group != spec.name}
    return {*LLM_METRICS.names(), *DETERMINISTIC_METRICS.names(), *groups, ALL}


def metric_groups() -> dict[str, tuple[str, ...]]:
    """The groups `metrics` accepts besides single names, from the registries: each LLM metric's group
    (of more than the metric itself), then `all` (every LLM metric, then the deterministic ones).
    A name two metrics (or a metric and a group) share, which installed packages may bring, is refused."""
    groups: dict[str, tuple[str, ...]] = {}
    for spec in LLM_METRICS:
        if spec.group != spec.name:
            groups[spec.group] = (*groups.get(spec.group, ()), spec.name)
    names = [*LLM_METRICS.names(), *DETERMINISTIC_METRICS.names(), *groups, ALL]
    shared = sorted({name for name in names if names.count(name) > 1})
    if shared:
        raise ConfigError(
            f"The metric name {shared[0]} is taken twice (an LLM metric, a deterministic metric or a group, "
            f"{_brought_by(shared[0])}); uninstall one of the packages that bring it."
        )
    groups[ALL] = (*LLM_METRICS.names(), *DETERMINISTIC_METRICS.names())
    return groups


def _brought_by(name: str) -> str:
    packages = [
        package
        for package in (LLM_METRICS.installed_by(name), DETERMINISTIC_METRICS.installed_by(name))
        if package is not None
    ]
    return f"brought by {', '.join(packages)}" if packages else "registered in Python"


class JudgeTask(Task[JudgeInput, JudgementRecord]):
    """One metric's judge as a task: its verdict on one answer, stored under an exact key."""

    role: Role = "judge"

    def __init__(self, metric: str, model: str, embed: Embed | None = None) -> None:
        self.spec = LLM_METRICS.get(metric)
        self.name = f"judge:{metric}"
        self.model = model
        self.embed = embed
        self.prompts = self.spec.load_prompts()

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
