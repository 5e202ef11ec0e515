"""Answers computed beforehand by the user's own RAG system, read from a JSONL file.

The file is the user's own input, so every problem with it is a `ConfigError` naming the line, raised
before any score is computed. Each line is one question's reply, in any shape `parse_reply` accepts,
with its `question` and, optionally, the test set's `id` of that question.

How a row finds its test-set question (`AnswersFileSystem.match`), first rule that applies:

1. its `id` is a test-set question's id: that question;
2. its question, whitespace collapsed, is a test-set question's exactly;
3. its question equals a test-set question after `normalize_question` (NFKC, case folded,
   whitespace collapsed): an upper-case copy of a question matches.

Two test-set questions that are equal under rule 3 (e.g. "What is US?" and "What is us?") are
told apart by rule 2, or by ids; when neither tells which of two different answers is whose, the
file is refused with the lines named, rather than one answer guessed. One row may answer several
test-set questions that are the same question (the same answer, as the system would give).
A row that answers no question is counted and shown, never dropped without a word.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from qagen.errors import ConfigError
from qagen.evaluate.records import EvalItem, RagOutput
from qagen.evaluate.systems.protocol import collapse_whitespace, normalize_question
from qagen.evaluate.systems.replies import BadReply, parse_reply, type_name
from qagen.runs.store import collector_paused

__all__ = ["AnswerRow", "AnswersFileSystem", "AnswersMatch", "load_answers"]

NOT_IN_FILE = "not_in_answers_file"


@dataclass(frozen=True)
class AnswerRow:
    """One entry of an answers file."""

    where: str
    """ "line N" (or "item N" in a JSON array), for messages."""
    question: str
    id: str | None
    """The test set's id of the question, when the file gives one."""
    output: RagOutput


@dataclass(frozen=True)
class AnswersMatch:
    """Which rows answer which test-set questions, and the rows that answer none."""

    outputs: dict[str, RagOutput]
    """Test-set item id -> its answer."""
    rows: int
    unmatched: list[AnswerRow]

    def sentence(self, path: Path) -> str | None:
        """One sentence on the rows that match no question, with up to three of them; None if none."""
        if not self.unmatched:
            return None
        examples = "; ".join(f"{row.where}: {_short(row.question)!r}" for row in self.unmatched[:3])
        more = "e.g. " if len(self.unmatched) > 3 else ""
        return (
            f"{len(self.unmatched)} of the {self.rows} rows of the answers file {path.name} match no question "
            f"of the test set ({more}{examples}) and are not scored; questions are compared ignoring case and "
            "spacing, so these are other questions (or give each row the `id` of its test-set question)."
        )


def load_answers(path: Path) -> list[AnswerRow]:
    with collector_paused():  # many objects that all live on: see `collector_paused`
        return _load_answers(path)


def _load_answers(path: Path) -> list[AnswerRow]:
    """The rows of a JSONL file (or a JSON array of the same objects), in file order.

    The file is the user's own input, so every problem is a `ConfigError` naming the line, to be
    fixed before any score is computed: bad JSON, a line of the wrong shape, or a question (or an
    id) given twice with different answers (which one would be scored?).
    """
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise ConfigError(f"Answers file not found: {path}.") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"Answers file {path} is not UTF-8 text (byte {exc.start}).") from None
    except OSError as exc:
        raise ConfigError(f"Cannot read the answers file {path}: {exc.strerror or exc}.") from None
    rows: list[AnswerRow] = []
    for where, row in _entries(path, text):
        if not isinstance(row, Mapping):
            raise ConfigError(f"{path}, {where}: expected a JSON object, got {type_name(row)}.")
        question = row.get("question")
        if not isinstance(question, str) or not question.strip():
            raise ConfigError(f"{path}, {where}: no 'question' string.")
        item_id = row.get("id")
        if item_id is not None and not isinstance(item_id, str | int):
            raise ConfigError(f"{path}, {where}: 'id' must be a string, got {type_name(item_id)}.")
        try:
            output = parse_reply(row)
        except BadReply as exc:
            raise ConfigError(f"{path}, {where}: {exc}.") from None
        rows.append(AnswerRow(where, question, None if item_id in (None, "") else str(item_id), output))
    if not rows:
        raise ConfigError(f"Answers file {path} has no answers.")
    # Rows without an id that are the same question as written must agree; so must rows of one id.
    _one_answer_each(path, rows, lambda row: row.id or f"\x00{collapse_whitespace(row.question)}")
    return rows


def _entries(path: Path, text: str) -> list[tuple[str, object]]:
    """(where, parsed value) for each entry; `where` is "line N" (or "item N" in a JSON array)."""
    if text.lstrip().startswith("["):
        # The cookbook notebook saves its results as one JSON array; accept that as it is.
        try:
            items = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}, line {exc.lineno}: not valid JSON ({exc.msg}, column {exc.colno}).") from None
        return [(f"item {number}", item) for number, item in enumerate(items, start=1)]
    entries: list[tuple[str, object]] = []
    # Split on "\n" only: `str.splitlines` would also split at U+2028 inside a JSON string.
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            entries.append((f"line {number}", json.loads(line)))
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}, line {number}: not valid JSON ({exc.msg}, column {exc.colno}).") from None
    return entries


def _one_answer_each(path: Path, rows: Sequence[AnswerRow], key: Callable[[AnswerRow], str]) -> dict[str, AnswerRow]:
    """The first row of each key; a later row of the same key with another answer is refused."""
    first: dict[str, AnswerRow] = {}
    for row in rows:
        seen = first.setdefault(key(row), row)
        if seen.output != row.output:
            raise ConfigError(
                f"{path}, {row.where}: the question of {seen.where} again, with a different answer "
                "or contexts; keep only one of them (or give each the `id` of its test-set question)."
            )
    return first


class AnswersFileSystem:
    """Answers computed beforehand by the user's own RAG system, read from a JSONL file.

    Each line: `{"question": ..., "answer": ..., "contexts": [...], "sources": [...]}` (contexts,
    sources and the test set's `id` optional). `match` pairs the rows with a test set's questions
    (see the module docstring); before it is called, `answer` looks a question up by
    `normalize_question` alone.
    """

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        # Taken before the file is read: an edit made while it is read shows as a change next time.
        try:
            stat = self.path.stat()
        except OSError:
            stat = None  # `load_answers` says what is wrong
        self.rows = load_answers(self.path)
        self.read_stat = [stat.st_size, stat.st_mtime_ns] if stat is not None else None
        """The file's size and modification time (ns) when it was read (`qagen.evaluate.stamp`)."""
        self._by_question = {normalize_question(row.question): row.output for row in reversed(self.rows)}
        self._matched: AnswersMatch | None = None

    @property
    def name(self) -> str:
        return f"answers:{self.path.name}"

    def __len__(self) -> int:
        return len(self._by_question)

    def match(self, items: Sequence[EvalItem]) -> AnswersMatch:
        """Pair the rows with `items` (kept for `answer_item`); `ConfigError` when a pairing is ambiguous."""
        ids = {item.id for item in items}
        by_id = {row.id: row for row in self.rows if row.id is not None and row.id in ids}
        by_question = [row for row in self.rows if row.id is None or row.id not in ids]
        exact = _one_answer_each(self.path, by_question, lambda row: collapse_whitespace(row.question))
        loose: dict[str, list[AnswerRow]] = {}
        for row in exact.values():
            loose.setdefault(normalize_question(row.question), []).append(row)
        used: set[tuple[str, str]] = set()
        outputs: dict[str, RagOutput] = {}
        for item in items:
            found = by_id.get(item.id) or exact.get(collapse_whitespace(item.question))
            chosen = [found] if found is not None else loose.get(normalize_question(item.question), [])
            if any(other.output != chosen[0].output for other in chosen[1:]):
                raise ConfigError(
                    f"{self.path}: {chosen[0].where} and {chosen[1].where} both ask the test-set question "
                    f"{_short(item.question)!r} (ignoring case and spacing) with different answers; write the "
                    "question exactly as the test set does, or give each row the `id` of its test-set question."
                )
            if chosen:
                outputs[item.id] = chosen[0].output
                used.update(_group(row, ids) for row in chosen)
        unmatched = [row for row in self.rows if _group(row, ids) not in used]
        self._matched = AnswersMatch(outputs=outputs, rows=len(self.rows), unmatched=unmatched)
        return self._matched

    async def answer(self, question: str) -> RagOutput:
        output = self._by_question.get(normalize_question(question))
        return output if output is not None else RagOutput(answer=None, error=NOT_IN_FILE)

    async def answer_item(self, item: EvalItem) -> RagOutput:
        """`item`'s answer as `match` paired it (by id first); by its question when not matched yet."""
        if self._matched is None:
            return await self.answer(item.question)
        output = self._matched.outputs.get(item.id)
        return output if output is not None else RagOutput(answer=None, error=NOT_IN_FILE)


def _group(row: AnswerRow, ids: set[str]) -> tuple[str, str]:
    """Rows that stand for one answer (an id of the test set, or one question as written) share a group."""
    if row.id is not None and row.id in ids:
        return ("id", row.id)
    return ("question", collapse_whitespace(row.question))


def _short(question: str, limit: int = 60) -> str:
    text = collapse_whitespace(question)
    return text if len(text) <= limit else text[: limit - 1] + "…"
