"""The evaluator's records: a test question, a RAG system's output, and one judge's verdict."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from qagen.failures import Failure
from qagen.records import Usage


class EvalItem(BaseModel):
    """One question of a test set, with what is known about where its answer lives."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(description="Stable id: the dataset's `id` column, else a hash of the question.")
    question: str
    true_answer: str = Field(description="The reference answer.")
    source_doc: str | None = Field(default=None, description="The document the question was drafted from.")
    context: str | None = Field(default=None, description="The chunk the question was drafted from.")
    start_index: int | None = Field(default=None, description="The chunk's character offset in source_doc.")
    end_index: int | None = None


class RetrievedContext(BaseModel):
    """A passage the RAG system retrieved, with its source and offsets when the system knows them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str
    source: str | None = None
    start_index: int | None = None
    end_index: int | None = None


class RagOutput(BaseModel):
    """What the RAG system under test answered, and what it retrieved (best first)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    answer: str | None = Field(description="None when the system failed to answer (see `error`).")
    contexts: list[RetrievedContext] = Field(default_factory=list)
    error: str = Field(default="", description="Why there is no answer; empty when there is one.")
    usage: Usage = Usage()


class JudgeVerdict(BaseModel):
    """One LLM judge's reading of one answer: a value, or a recorded failure with the raw reply."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    metric: str
    value: float | None = Field(description="The metric's value (raw score for 1-5 judges); None when it failed.")
    failure: Failure | None = Field(default=None, description="Why there is no value; None when there is one.")
    raw: list[str] = Field(default_factory=list, description="Every judge reply this verdict was read from.")
    detail: dict[str, object] = Field(
        default_factory=dict, description="Metric-specific parts (statements, verdicts...)."
    )
    usage: Usage = Usage()

    @model_validator(mode="before")
    @classmethod
    def _from_reason(cls, data: Any) -> Any:
        # Verdicts written before `Failure` existed kept a `reason` string.
        if isinstance(data, dict) and "reason" in data:
            data = dict(data)
            reason = data.pop("reason")
            if reason:
                data["failure"] = Failure.from_reason(reason)
        return data

    @property
    def reason(self) -> str:
        """The user-facing reason string; empty when there is a value."""
        return self.failure.reason if self.failure is not None else ""


class AnswerRecord(BaseModel):
    """The RAG system's output for one question, as stored in `answers.jsonl`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(description="Hash of the question and the system's identity (its name and settings).")
    item_id: str
    system: str
    output: RagOutput


class JudgementRecord(BaseModel):
    """One judge's verdict on one answer, as stored in `judgements.jsonl`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(description="`JudgeTask.key`: the answer, contexts, reference, metric, model and prompts.")
    item_id: str
    judge_model: str
    verdict: JudgeVerdict

    @property
    def failure(self) -> Failure | None:
        return self.verdict.failure
