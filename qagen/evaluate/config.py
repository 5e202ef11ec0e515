"""Settings of an evaluation: what `evaluate` reads, and what `qagen evaluate` makes of its options and
config keys (each point of a grid is one `EvalConfig`), as a build's are `BuildConfig`.

The fields are settings a file could hold, and three of them may also be objects made in Python: the
test set (a `TestSet` already read), the judge and reader (a LangChain chat model or a ready
`LLMClient`) and the embeddings (a LangChain `Embeddings` or an async function). Wrong settings are a
`ConfigError` naming the setting and what it takes, never pydantic's list of union members.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from langchain_core.embeddings import Embeddings
from pydantic import BaseModel, ConfigDict, InstanceOf, ValidationError, field_validator, model_validator

from qagen.call_policy import CallPolicy
from qagen.errors import ConfigError
from qagen.evaluate.judges.ragas import Embed
from qagen.evaluate.judges.registry import LLM_METRICS, metric_groups
from qagen.evaluate.metrics.scoring import DETERMINISTIC_METRICS
from qagen.evaluate.testset import TestSet, load_testset
from qagen.llm.backends import DEFAULT_MODEL, ModelSettings
from qagen.llm.client import LLMClient
from qagen.llm.clients import CallLimits
from qagen.llm.concurrency import INTERRUPT_GRACE_SECONDS

DEFAULT_METRICS = ("answer_correct", "retrieval", "text")

JUDGE_TOP_LOGPROBS = 5
"""Likeliest tokens asked for at each position of a judge's reply unless its settings say otherwise
(`ModelSettings.top_logprobs`): its verdicts are read as probabilities where the server sends them."""


@runtime_checkable
class ChatModel(Protocol):
    """A LangChain chat model you made yourself: anything answering `ainvoke` (`qagen.llm.clients`)."""

    def ainvoke(self, input: Any, *args: Any, **kwargs: Any) -> Any: ...


Model = ModelSettings | InstanceOf[LLMClient] | InstanceOf[ChatModel]
"""A role's model: settings (a spec string is read as them), a ready client, or a LangChain chat model."""


class EvalConfig(BaseModel):
    """Everything `evaluate` needs but the system under test, where the results go and how they are shown."""

    # The docstrings are the fields' descriptions: the config file's documentation is generated from them.
    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True, arbitrary_types_allowed=True)

    testset: str | Path | InstanceOf[TestSet]
    """The test set: a qagen run directory, a saved dataset directory, a Hub dataset id, or a .jsonl or
    .csv file with question and reference-answer columns (or, from Python, a `TestSet` already read)."""
    split: str = "train"
    """Split of the test set when it is a dataset."""
    question_column: str = "question"
    """Question column of the test set."""
    answer_column: str | None = None
    """Reference-answer column of the test set (None: answer, expected_answer, true_answer, reference or
    ground_truth, the first there is)."""
    metrics: tuple[str, ...] = DEFAULT_METRICS
    """The metrics, or groups of them (`ragas`, `graders`, `all`), to compute: a list or a comma-separated
    text. A group leaves answer_relevancy out (with a note) when there is no `embeddings`."""
    judge: Model | None = ModelSettings(spec=DEFAULT_MODEL)
    """The model of the LLM judges: a spec (`openai:gpt-4o-mini`), `ModelSettings`, or from Python a
    LangChain chat model or a ready `LLMClient` (None: no judge, deterministic metrics only)."""
    reader: Model | None = None
    """The model that answers for a system built with it, such as `rag_baseline(...)` (`SystemFactory`);
    the forms of `judge`. None: a system that brings its own reader, or none."""
    k: int = 7
    """Contexts scored by hit@k, NDCG@k and the other retrieval metrics."""
    embeddings: str | InstanceOf[Embeddings] | Embed | None = None
    """Embeddings model of answer_relevancy: `local` (the dense extra's bundled model), a model folder, or a
    LangChain spec such as `openai:text-embedding-3-small` (served from the judge's `base_url`, with its
    key, when it has one); from Python also a LangChain `Embeddings` or an async `texts -> vectors`."""
    concurrency: int = 16
    """Calls in flight at once: questions asked of the system, and the reader's and judges' calls together."""
    rpm: float | None = None
    """Requests per minute at most, the reader's and the judges' together (None: no limit)."""
    max_failure_rate: float = 0.5
    """Stop when more than this share of a model's calls fails even after retries (checked after 20 calls)."""
    interrupt_grace: float = INTERRUPT_GRACE_SECONDS
    """After Ctrl-C, how many seconds a sync system function still running may take to return; then its
    question is recorded as failed (interrupted) and the run ends."""
    system_calls: CallPolicy = CallPolicy()
    """How long a system function, Runnable or endpoint has per question, and how often it is asked again
    after a timeout or a failure that may pass."""

    @model_validator(mode="wrap")
    @classmethod
    def _in_words(cls, fields: Any, handler: Any) -> EvalConfig:
        # pydantic's own message lists every member of a union it tried; one sentence names the setting.
        if isinstance(fields, dict):
            unknown = [name for name in fields if name not in cls.model_fields]
            if unknown:
                raise ConfigError(_unknown_settings(unknown, list(cls.model_fields)))
        try:
            validated: EvalConfig = handler(fields)
        except ValidationError as exc:
            raise ConfigError(_invalid(cls, exc)) from None
        return validated

    @field_validator("judge", "reader", mode="before")
    @classmethod
    def _spec_is_settings(cls, model: Any) -> Any:
        return ModelSettings(spec=model) if isinstance(model, str) else model

    @field_validator("judge")
    @classmethod
    def _verdicts_as_probabilities(cls, judge: Any) -> Any:
        # 0 turns it off (a server that refuses the parameter); a ready client or chat model is as given.
        if isinstance(judge, ModelSettings) and judge.top_logprobs is None:
            return judge.model_copy(update={"top_logprobs": JUDGE_TOP_LOGPROBS})
        return judge

    @field_validator("metrics", mode="before")
    @classmethod
    def _comma_list(cls, metrics: Any) -> Any:
        if isinstance(metrics, str):
            return tuple(name.strip() for name in metrics.split(",") if name.strip())
        return tuple(name.strip() for name in metrics) if isinstance(metrics, list | tuple) else metrics

    @model_validator(mode="after")
    def _check(self) -> EvalConfig:
        if self.k < 1:
            raise ConfigError(f"`k` must be at least 1, got {self.k}.", settings=("k",))
        if self.interrupt_grace < 0:
            raise ConfigError(
                f"`interrupt_grace` must be 0 or more seconds, got {self.interrupt_grace}.",
                settings=("interrupt_grace",),
            )
        self.call_limits()  # concurrency, rpm and max_failure_rate, checked where every run's limits are
        select_metrics(self.metrics, embeddings=self.embeddings is not None)
        return self

    def call_limits(self) -> CallLimits:
        """How fast the evaluation may call the reader and the judges, together."""
        return CallLimits(concurrency=self.concurrency, rpm=self.rpm, max_failure_rate=self.max_failure_rate)

    def read_testset(self, *, token: str | None = None) -> TestSet:
        """The test set's questions: `testset` itself, or read from where it names (`token` for a private
        Hub dataset)."""
        if isinstance(self.testset, TestSet):
            return self.testset
        return load_testset(
            str(self.testset),
            split=self.split,
            question_column=self.question_column,
            answer_column=self.answer_column,
            token=token,
        )

    def replace(self, **changes: Any) -> EvalConfig:
        """These settings with `changes`, checked as new settings are."""
        return type(self).model_validate({**dict(self), **changes})


def _unknown_settings(unknown: list[str], known: list[str]) -> str:
    named = []
    for name in unknown:
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        named.append(f"`{name}` (did you mean `{close[0]}`?)" if close else f"`{name}`")
    return f"EvalConfig has no setting {', '.join(named)}; its settings are {', '.join(known)}."


def _invalid(model: type[EvalConfig], exc: ValidationError) -> str:
    """One sentence for the first setting pydantic refused: its value, why, and what it takes."""
    errors = exc.errors()
    located = [error for error in errors if error["loc"]]
    if not located:
        return f"EvalConfig is not valid: {errors[0]['msg']}."
    name = str(located[0]["loc"][0])
    if name not in model.model_fields:
        return f"`{name}` is not valid: {located[0]['msg']}."
    members = [error for error in located if str(error["loc"][0]) == name]
    value = members[0]["input"]
    # A union's members each say why they refused the value; only a field of one type says it usefully.
    reason = f" ({members[0]['msg'][0].lower()}{members[0]['msg'][1:]})" if len(members) == 1 else ""
    takes = " ".join((model.model_fields[name].description or "").split())
    return f"`{name}` cannot be {value!r}{reason}. It takes: {takes}"


def select_metrics(names: list[str] | tuple[str, ...], *, embeddings: bool) -> tuple[list[str], list[str]]:
    """The metrics to run, groups (`ragas`, `graders`, `all`) expanded in a stable order, and notes.

    answer_relevancy compares embeddings. Named on its own without an embeddings model it is an
    error; as part of a group it is left out, with a note saying so, so that `metrics=["ragas"]`
    runs the other four RAGAS metrics instead of refusing all five.
    """
    chosen: list[str] = []
    notes: list[str] = []
    groups = metric_groups()  # read now: a metric registered after import is in its group and `all`
    for raw in names:
        name = raw.strip()
        if not name:
            continue
        if name == "answer_relevancy" and not embeddings:
            raise ConfigError(
                "answer_relevancy compares embeddings: give an embeddings model with `embeddings`.",
                settings=("embeddings",),
            )
        for part in groups.get(name, (name,)):
            if part not in LLM_METRICS and part not in DETERMINISTIC_METRICS:
                known = sorted([*LLM_METRICS.names(), *DETERMINISTIC_METRICS.names(), *groups])
                raise ConfigError(f"Unknown metric '{part}'; choose from {', '.join(known)}.")
            if part == "answer_relevancy" and not embeddings:
                note = f"answer_relevancy left out of '{name}': it needs an embeddings model (`embeddings`)."
                if note not in notes:
                    notes.append(note)
                continue
            if part not in chosen:
                chosen.append(part)
    if not chosen:
        raise ConfigError("No metric to compute; choose some with `metrics`.", settings=("metrics",))
    return chosen, notes
