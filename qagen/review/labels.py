"""People's labels of drafts and answers: `labels.jsonl`, one label per line, appended as given.

The file sits in the directory it labels (a run directory's drafts, an evaluation directory's
answers). A later line for the same (reviewer, kind, item) supersedes an earlier one, so changing
one's mind is one more line and nothing is ever rewritten. Damaged lines are treated as the run's
record logs treat theirs (`qagen.runs.store`): a torn last line (a write cut short) is cut off with
a notice, any other unreadable line stops with its line number and how to go on.

A line, as the review page and the CSV import both write it:

    {"schema": 1, "kind": "draft", "item_id": "...", "reviewer": "ana", "time": "2026-11-23T18:00:00Z",
     "criteria": {"relevance": {"pass": false, "score": 2}}, "keep": false, "correct": null,
     "note": "", "prompt_hashes": {"relevance": "<sha256>"}, "via": "page"}
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from qagen.records import Criterion
from qagen.runs.store import RecordLog, RecordWriter, collector_paused

LABELS_FILE = "labels.jsonl"
MAX_NOTE_CHARS = 10_000
"""The longest note a label keeps (the review page's note box takes no more; an import refuses more)."""
LABEL_SCHEMA: Literal[1] = 1

LabelKind = Literal["draft", "answer"]
"""What was labelled: a drafted question (in a run directory) or an answer (in an evaluation directory)."""
LabelVia = Literal["page", "csv"]


class CriterionLabel(BaseModel):
    """A person's verdict on one criterion: pass or fail, and optionally the 1-5 score they would give."""

    model_config = ConfigDict(frozen=True, extra="forbid", validate_by_name=True, serialize_by_alias=True)

    passed: bool = Field(alias="pass", description="Whether the draft meets the criterion, in the person's view.")
    score: int | None = Field(default=None, ge=1, le=5, description="The 1-5 score the person gave, if any.")

    @classmethod
    def of(cls, passed: bool, score: int | None = None) -> CriterionLabel:
        """The verdict (`pass` is a Python keyword, so the field is named `passed` here)."""
        return cls.model_validate({"pass": passed, "score": score})


def utc_now() -> str:
    """The time as labels record it: UTC, to the second, ISO 8601 with a `Z`."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Label(BaseModel):
    """One person's label of one item (see the module for the line it is)."""

    model_config = ConfigDict(frozen=True, extra="forbid", validate_by_name=True, serialize_by_alias=True)

    schema_version: Literal[1] = Field(default=LABEL_SCHEMA, alias="schema", description="The line format's version.")
    kind: LabelKind = Field(description="draft (a run directory's drafted question) or answer (an evaluated answer).")
    item_id: str = Field(min_length=1, description="The draft's id (candidates row id) or the evaluated question's id.")
    reviewer: str = Field(min_length=1, description="Who gave the label.")
    time: str = Field(default_factory=utc_now, description="When, UTC, e.g. 2026-11-23T18:00:00Z.")
    criteria: dict[Criterion, CriterionLabel] = Field(
        default_factory=dict, description="Drafts: the verdict per criterion, any subset of the three."
    )
    keep: bool | None = Field(default=None, description="Drafts: whether the person would keep it in the test set.")
    correct: bool | None = Field(default=None, description="Answers: whether it is correct against the reference.")
    note: str = Field(default="", description="The reviewer's free-text note.")
    prompt_hashes: dict[str, str] = Field(
        default_factory=dict,
        description="The sha256 of each prompt whose output was labelled, by criterion, `generation` or `judge`: a "
        "label is about what those prompts produced.",
    )
    via: LabelVia = Field(description="How it was given: the review page or a CSV import.")

    @model_validator(mode="after")
    def _fits_its_kind(self) -> Label:
        if self.kind == "answer" and (self.criteria or self.keep is not None):
            raise ValueError("an answer's label has `correct`, not criteria or keep")
        if self.kind == "draft" and self.correct is not None:
            raise ValueError("a draft's label has criteria and keep, not `correct`")
        return self

    @property
    def key(self) -> LabelKey:
        return LabelKey(self.reviewer, self.kind, self.item_id)

    @property
    def empty(self) -> bool:
        """Nothing labelled: no criterion, no keep decision, no correctness."""
        return not self.criteria and self.keep is None and self.correct is None


class LabelKey(NamedTuple):
    """What a later label supersedes an earlier one by."""

    reviewer: str
    kind: LabelKind
    item_id: str


class _LabelLog(RecordLog[Label]):
    """The record log's reading, with what a damaged line of labels means for the reviewer."""

    redone = "the label it held must be given again"

    def _not_a_record(self, exc: ValidationError) -> str:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        if first["type"] == "json_invalid":
            return "is damaged (an edit, or a write cut short)"
        return f"is not a label this qagen version reads ({where}: {first['msg']})"

    def _damaged(self, number: int, line: str, what: str) -> str:
        return (
            f"{self.path} line {number} {what}. To go on, delete that line (e.g. `sed -i '{number}d' {self.path}`) "
            "and give that label again; every other label is kept."
        )


class LabelStore:
    """`DIR/labels.jsonl`: `append` adds a label (one flushed line), `read` gives the latest per key."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / LABELS_FILE
        self._log = _LabelLog(self.path, Label)
        self._writer: RecordWriter[Label] | None = None

    def append(self, label: Label) -> None:
        """Append `label` as one line, flushed at once (a crash loses no label already given)."""
        if self._writer is None:
            # Read first: a torn last line is cut off (not appended after), a damaged one stops here.
            self.read()
            self._writer = self._log.writer()
        self._writer.append(label)

    def extend(self, labels: list[Label]) -> None:
        for label in labels:
            self.append(label)

    def read(self) -> dict[LabelKey, Label]:
        """The latest label per (reviewer, kind, item), in the order each key was first labelled."""
        latest: dict[LabelKey, Label] = {}
        with collector_paused():
            for label in self._log.iter_records():
                latest[label.key] = label
        return latest

    def of_kind(self, kind: LabelKind) -> list[Label]:
        """The latest labels of one kind (every reviewer's)."""
        return [label for label in self.read().values() if label.kind == kind]

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def __enter__(self) -> LabelStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
