"""The records that flow through the pipeline. Frozen, so a stage can never edit another's output."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from qagen.failures import Failure

Criterion = Literal["groundedness", "relevance", "standalone"]
CRITERIA: tuple[Criterion, ...] = ("groundedness", "relevance", "standalone")


class Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Document(Record):
    """One document of the corpus, before chunking."""

    source: str = Field(
        description="Where the text came from: a path relative to the corpus root, or a table row's source."
    )
    text: str = Field(description="The document's readable text (HTML and PDF already converted).")


class SkippedInput(Record):
    """An input file or row that could not be used, and why."""

    source: str = Field(description="The path or row that was skipped.")
    reason: str = Field(description="Short machine-readable reason: empty, binary, undecodable, unreadable, ...")
    detail: str = Field(default="", description="A human-readable explanation.")


class Chunk(Record):
    """A piece of a document; `document_text[start_index:end_index] == text`."""

    id: str = Field(description="Content hash of (source, start_index, text).")
    source: str = Field(description="The source of the document the chunk came from.")
    text: str = Field(description="The chunk's text.")
    start_index: int = Field(description="Character offset of the chunk in its document's text.")
    end_index: int = Field(description="start_index + len(text).")


class Usage(Record):
    """Token usage reported by the server for one call (zeros when the server reports none)."""

    input_tokens: int = 0
    output_tokens: int = 0


def _from_status_and_reason(data: Any) -> Any:
    """Records written before `Failure` existed kept `status` and a `reason` string: read them as a
    failure, so a run directory made by an earlier qagen still resumes."""
    if isinstance(data, dict) and "status" in data:
        data = dict(data)
        status, reason = data.pop("status"), data.pop("reason", "")
        if status != "ok":
            failure = Failure.from_reason(reason)
            # A failed call kept its (redacted) error in `raw`, as it still does.
            data["failure"] = Failure.from_reason(reason, data.get("raw") or "") if failure.retryable else failure
    return data


class TaskOutput(Record):
    """What every LLM task's record has: its key, the model, the raw reply, usage, and any failure."""

    id: str = Field(description="The record's key (`Task.key`): the same inputs never cost a second call.")
    model: str = Field(description="Model spec that made it.")
    failure: Failure | None = Field(default=None, description="Why there is no result; None when there is one.")
    raw: str | None = Field(
        default=None,
        description="The model's reply, verbatim; for a failed call, the (redacted) error, since no reply came.",
    )
    usage: Usage = Usage()

    _legacy = model_validator(mode="before")(_from_status_and_reason)

    @property
    def ok(self) -> bool:
        return self.failure is None

    @property
    def reason(self) -> str:
        """The user-facing reason string of the failure; empty when ok."""
        return self.failure.reason if self.failure is not None else ""


class Draft(TaskOutput):
    """A question/answer pair drafted from a chunk by the generator model, or a failure to draft one."""

    chunk_id: str
    prompt_hash: str
    question: str | None = None
    answer: str | None = None


class Critique(TaskOutput):
    """One critic's verdict on one draft: a 1-5 score with its rationale, or a recorded failure."""

    draft_id: str
    criterion: str = Field(description="The critic's name: groundedness, relevance, standalone, or your own.")
    prompt_hash: str
    score: int | None = Field(default=None, description="1-5, or None when the reply had no valid rating.")
    rationale: str | None = None
