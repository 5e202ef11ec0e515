"""The records that flow through the pipeline. Frozen, so a stage can never edit another's output."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Criterion = Literal["groundedness", "relevance", "standalone"]
CRITERIA: tuple[Criterion, ...] = ("groundedness", "relevance", "standalone")

Status = Literal["ok", "failed"]


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


class Draft(Record):
    """A question/answer pair drafted from a chunk by the generator model, or a failure to draft one."""

    id: str = Field(description="Hash of (chunk id, prompt hash, model): the key that makes resume exact.")
    chunk_id: str
    model: str = Field(description="Model spec that drafted it.")
    prompt_hash: str
    status: Status
    reason: str = Field(
        default="",
        description="Why it failed (parse_failure, refusal, api_error, ...); empty when ok.",
    )
    question: str | None = None
    answer: str | None = None
    raw: str | None = Field(default=None, description="The model's reply, verbatim (None when no reply came).")
    usage: Usage = Usage()


class Critique(Record):
    """One critic's verdict on one draft: a 1-5 score with its rationale, or a recorded failure."""

    id: str = Field(description="Hash of (draft id, criterion, prompt hash, model).")
    draft_id: str
    criterion: Criterion
    model: str
    prompt_hash: str
    status: Status
    reason: str = Field(default="", description="Why it failed; empty when ok.")
    score: int | None = Field(default=None, description="1-5, or None when the reply had no valid rating.")
    rationale: str | None = None
    raw: str | None = None
    usage: Usage = Usage()
