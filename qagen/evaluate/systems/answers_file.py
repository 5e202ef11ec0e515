"""Answers computed beforehand by the user's own RAG system, read from a JSONL file.

The file is the user's own input, so every problem with it is a `ConfigError` naming the line, raised
before any score is computed. Each line is one question's reply, in any shape `parse_reply` accepts.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from qagen.errors import ConfigError
from qagen.evaluate.records import RagOutput
from qagen.evaluate.systems.protocol import normalize_question
from qagen.evaluate.systems.replies import BadReply, parse_reply, type_name

__all__ = ["AnswersFileSystem", "load_answers"]


def load_answers(path: Path) -> dict[str, RagOutput]:
    """Answers by normalised question, from a JSONL file (or a JSON array of the same objects).

    The file is the user's own input, so every problem is a `ConfigError` naming the line, to be
    fixed before any score is computed: bad JSON, a line of the wrong shape, or a question given
    twice with different answers (which one would be scored?).
    """
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise ConfigError(f"Answers file not found: {path}.") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"Answers file {path} is not UTF-8 text (byte {exc.start}).") from None
    except OSError as exc:
        raise ConfigError(f"Cannot read the answers file {path}: {exc.strerror or exc}.") from None
    answers: dict[str, RagOutput] = {}
    first_seen: dict[str, str] = {}
    for where, row in _rows(path, text):
        if not isinstance(row, Mapping):
            raise ConfigError(f"{path}, {where}: expected a JSON object, got {type_name(row)}.")
        question = row.get("question")
        if not isinstance(question, str) or not question.strip():
            raise ConfigError(f"{path}, {where}: no 'question' string.")
        try:
            output = parse_reply(row)
        except BadReply as exc:
            raise ConfigError(f"{path}, {where}: {exc}.") from None
        key = normalize_question(question)
        if key in answers:
            if answers[key] != output:
                raise ConfigError(
                    f"{path}, {where}: the question of {first_seen[key]} again, with a different answer "
                    "or contexts; keep only one of them."
                )
            continue
        answers[key] = output
        first_seen[key] = where
    if not answers:
        raise ConfigError(f"Answers file {path} has no answers.")
    return answers


def _rows(path: Path, text: str) -> list[tuple[str, object]]:
    """(where, parsed value) for each entry; `where` is "line N" (or "item N" in a JSON array)."""
    if text.lstrip().startswith("["):
        # The cookbook notebook saves its results as one JSON array; accept that as it is.
        try:
            items = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}, line {exc.lineno}: not valid JSON ({exc.msg}, column {exc.colno}).") from None
        return [(f"item {number}", item) for number, item in enumerate(items, start=1)]
    rows: list[tuple[str, object]] = []
    # Split on "\n" only: `str.splitlines` would also split at U+2028 inside a JSON string.
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            rows.append((f"line {number}", json.loads(line)))
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}, line {number}: not valid JSON ({exc.msg}, column {exc.colno}).") from None
    return rows


class AnswersFileSystem:
    """Answers computed beforehand by the user's own RAG system, read from a JSONL file.

    Each line: `{"question": ..., "answer": ..., "contexts": [...], "sources": [...]}` (contexts and
    sources optional). Questions are matched after `normalize_question`.
    """

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._answers = load_answers(self.path)

    @property
    def name(self) -> str:
        return f"answers:{self.path.name}"

    def __len__(self) -> int:
        return len(self._answers)

    async def answer(self, question: str) -> RagOutput:
        output = self._answers.get(normalize_question(question))
        return output if output is not None else RagOutput(answer=None, error="not_in_answers_file")
