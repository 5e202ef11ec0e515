"""Labels through a spreadsheet: the sample exported as CSV with empty label columns, imported back.

A run directory's CSV has `id, question, answer, chunk` (the chunk is the context a reviewer needs)
and a label column per critic of the run, `groundedness, relevance, standalone` and any other
(`pass` / `fail`, or a score 1-5, which passes at the run's threshold for that criterion, as the
critic's does), `keep` (`yes` / `no`), `note` and `reviewer`. The critics' own verdicts are not in
it, so they cannot anchor the reviewer's (the review page shows them once an item is labelled). An
evaluation directory's has `id, question, reference, answer` and `correct` (`yes` / `no`), `note`,
`reviewer`. An empty cell is "not labelled", never a fail.

An import is checked whole before anything is stored: an unknown id, column or value stops it with
the line and how to fix it, and nothing of that file is stored. The labels go to `labels.jsonl`
with `via="csv"`; a row equal to the reviewer's latest label of that item adds nothing, so
importing the same file twice changes nothing; two rows of one item and reviewer that say different
things stop the import (which one is meant is not guessed). The file is written with a byte-order
mark, as spreadsheet programs need to read UTF-8; it is read with or without one, separated by
commas, or by the semicolons (or tabs) a spreadsheet set to a decimal-comma language saves with.
A cell that a spreadsheet would run as a formula is written as text (`_as_text`) and read back as
it was.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple, TextIO

from qagen.errors import QagenError
from qagen.llm.untrusted import PASSAGE_SEPARATOR
from qagen.records import CandidateRow, Criterion, KeptQuality
from qagen.review.estimate import refresh_kept_quality
from qagen.review.eval_answers import AnswerRow, answer_sample, is_eval_dir, read_answers
from qagen.review.kept_sample import kept_sample
from qagen.review.labels import MAX_NOTE_CHARS, CriterionLabel, Label, LabelKey, LabelKind, LabelStore
from qagen.review.run_drafts import RunDrafts, read_run_drafts
from qagen.review.sample import DEFAULT_SIZE, SampleKind, review_sample
from qagen.review.skipped import ask_skipped_critics
from qagen.runs.store import writing

ANSWER_LABELS: tuple[str, ...] = ("correct", "note", "reviewer")
ANSWER_COLUMNS: tuple[str, ...] = ("id", "question", "reference", "answer", *ANSWER_LABELS)
_ENCODING = "utf-8-sig"
_MAX_PROBLEMS = 5
_YES_NO = {"yes": True, "no": False}
_PASS_FAIL = {"pass": True, "fail": False}
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""The first characters that make a spreadsheet read a cell as a formula (OWASP's list for CSV injection)."""
_TEXT_MARK = "'"
"""A leading apostrophe: the spreadsheets' own way to say "this cell is text"."""


class Exported(NamedTuple):
    path: Path
    rows: int
    calls: int
    """Critic calls made first, for sampled drafts the early stop had left without a score."""


class Imported(NamedTuple):
    path: Path
    labels: int
    """Labels stored (new, or changed since the reviewer's latest label of the item)."""
    unchanged: int
    """Rows equal to the reviewer's latest label of their item: nothing stored."""
    unlabelled: int
    """Rows with every label cell empty: nothing to store."""
    kept_quality: KeptQuality | None
    """A run's estimate of its share of good kept questions, made again with these labels (`summary.json`);
    None for an evaluation, or a run with no summary yet."""


def export_csv(
    directory: Path,
    path: Path,
    *,
    size: int = DEFAULT_SIZE,
    seed: int = 0,
    allow_calls: bool = True,
    say: Callable[[str], None] | None = None,
    sample: SampleKind = "drafts",
) -> Exported:
    """Write the review sample of a run or evaluation directory to `path` (see the module); `sample`:
    which sample of a run's drafts (`SampleKind`), the rows in its review order.

    For the drafts' sample, the critics the early stop skipped are asked for the sampled drafts first
    (saying how many calls before the first; `allow_calls=False` refuses instead: `ask_skipped_critics`).
    """
    if is_eval_dir(directory) and sample == "drafts":
        answer_ids = answer_sample(directory, size, seed).ids
        answers = read_answers(directory)
        rows = [_answer_cells(answers[item_id]) for item_id in answer_ids]
        _write(path, ANSWER_COLUMNS, rows)
        return Exported(path, len(rows), 0)
    if sample == "kept":
        ids, calls = kept_sample(directory, size, seed).ids, 0
    else:
        ids = review_sample(directory, size, seed).ids
        calls = ask_skipped_critics(directory, ids, allow_calls=allow_calls, say=say)
    drafts = read_run_drafts(directory)
    rows = []
    for item_id in ids:
        row = drafts.get(item_id)
        if row is None:
            raise QagenError(
                f"The review sample of {directory} names draft {item_id}, which the run no longer has; delete "
                f"{directory / 'review_sample.json'} to draw the sample again."
            )
        cells = {"id": row.id, "question": row.question or "", "answer": row.answer or "", "chunk": _passages(row)}
        rows.append({**cells, "question_type": row.question_type} if drafts.config.mixed else cells)
    _write(path, _draft_columns(drafts), rows)
    return Exported(path, len(rows), calls)


def _draft_labels(drafts: RunDrafts) -> tuple[str, ...]:
    """A run's label columns: one per critic of the run, in declaration order, then the decision."""
    return (*drafts.critics(), "keep", "note", "reviewer")


def _draft_columns(drafts: RunDrafts) -> tuple[str, ...]:
    """A run's columns: the question type after the id when the run drafted several types."""
    typed = ("question_type",) if drafts.config.mixed else ()
    return ("id", *typed, "question", "answer", "chunk", *_draft_labels(drafts))


def _passages(row: CandidateRow) -> str:
    """The chunk a draft was made from, or each of its passages, labelled, apart."""
    if len(row.contexts) < 2:
        return row.context
    return PASSAGE_SEPARATOR.join(f"Passage {number}:\n{text}" for number, text in enumerate(row.contexts, 1))


def _answer_cells(row: AnswerRow) -> dict[str, str]:
    return {"id": row.id, "question": row.question, "reference": row.reference, "answer": row.answer or ""}


def _write(path: Path, columns: tuple[str, ...], rows: list[dict[str, str]]) -> None:
    kept = "no label is lost, as the file holds none until it is filled"
    with writing(path, kept=kept), path.open("w", encoding=_ENCODING, newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, restval="")
        writer.writeheader()
        writer.writerows({name: _as_text(cell) for name, cell in row.items()} for row in rows)


def _as_text(cell: str) -> str:
    """The cell as a spreadsheet shows text: a question, answer or chunk from third-party documents
    (or written by a model) that begins as a formula, such as `=HYPERLINK(...)`, would run when the
    file is opened; an apostrophe before it keeps it text."""
    return _TEXT_MARK + cell if cell.startswith(FORMULA_STARTS) else cell


def _from_text(cell: str) -> str:
    """A cell as `_as_text` (or the reviewer's spreadsheet) escaped it, read back as it was."""
    return cell[1:] if cell.startswith(_TEXT_MARK) and cell[1:].startswith(FORMULA_STARTS) else cell


# --- import -----------------------------------------------------------------------------------
class _Reader(NamedTuple):
    """What an import needs of the labelled directory."""

    kind: LabelKind
    columns: tuple[str, ...]
    labels: tuple[str, ...]
    criteria: tuple[str, ...]
    known: Callable[[str], bool]
    threshold: Callable[[str], int]
    prompt_hashes: dict[str, str]


def import_csv(directory: Path, path: Path, *, reviewer: str | None = None) -> Imported:
    """Read the labels of a filled CSV into `DIRECTORY/labels.jsonl` (see the module).

    `reviewer` names the reviewer of rows whose `reviewer` cell is empty.
    """
    reader = _reader_for(directory)
    labels, unlabelled = _parse(path, reader, reviewer)
    if not labels and (missing := _missing_columns(path, reader)):
        raise QagenError(
            f"{path} holds no label, and has no {', '.join(missing)} column, which the export wrote (deleted?): "
            f"put {'it' if len(missing) == 1 else 'them'} back, or import the file as exported, filled in."
        )
    with LabelStore(directory) as store:
        latest = store.read()
        changed = [label for label in labels if not _same(latest.get(label.key), label)]
        store.extend(changed)
    quality = refresh_kept_quality(directory) if reader.kind == "draft" else None
    return Imported(path, len(changed), len(labels) - len(changed), unlabelled, quality)


def _missing_columns(path: Path, reader: _Reader) -> list[str]:
    """The label columns the export wrote that the file lacks (a column deleted)."""
    with path.open(encoding=_ENCODING, newline="") as handle:
        header = {name.strip() for name in next(csv.reader(handle, delimiter=_delimiter(handle)), [])}
    # `reviewer` says who, `note` is free text: no decision is lost without them.
    return [name for name in reader.labels if name not in header and name not in {"reviewer", "note"}]


def _reader_for(directory: Path) -> _Reader:
    if is_eval_dir(directory):
        answers = read_answers(directory)
        return _Reader(
            "answer", ANSWER_COLUMNS, ANSWER_LABELS, (), answers.__contains__, _no_threshold, _judge_hashes(directory)
        )
    drafts = read_run_drafts(directory)
    return _Reader(
        "draft",
        _draft_columns(drafts),
        _draft_labels(drafts),
        tuple(drafts.critics()),
        _draft_known(drafts),
        drafts.config.threshold,
        _draft_hashes(drafts),
    )


def _no_threshold(criterion: str) -> int:
    raise AssertionError(f"answers have no criterion {criterion}")


def _draft_known(drafts: RunDrafts) -> Callable[[str], bool]:
    def known(item_id: str) -> bool:
        row = drafts.get(item_id)
        return row is not None and row.question is not None

    return known


def _draft_hashes(drafts: RunDrafts) -> dict[str, str]:
    """Each prompt's hash: `generation` and the critics' names for the build's first question type
    (a build of factoids: its only one), `generation:<type>` and `<critic>:<prompt>` for the others'."""
    hashes: dict[str, str] = {}
    for position, tasks in enumerate(drafts.tasks.types.values()):
        hashes["generation" if position == 0 else f"generation:{tasks.spec.name}"] = tasks.draft.prompt.sha256
        for critic in tasks.critics:
            key = (
                critic.criterion
                if hashes.get(critic.criterion, critic.prompt.sha256) == critic.prompt.sha256
                else (f"{critic.criterion}:{critic.prompt.name}")
            )
            hashes[key] = critic.prompt.sha256
    return hashes


def _judge_hashes(directory: Path) -> dict[str, str]:
    """The correctness judge's prompt hash as the evaluation recorded it (none when it has no such judge)."""
    try:
        summary = json.loads((directory / "summary.json").read_text(encoding="utf-8"))
        prompt = summary["judges"]["correctness"]["prompts"]["judge_correctness"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    return {"judge": prompt} if isinstance(prompt, str) else {}


def _parse(path: Path, reader: _Reader, reviewer: str | None) -> tuple[list[Label], int]:
    problems: list[str] = []
    labels: list[Label] = []
    first_lines: dict[LabelKey, tuple[int, Label]] = {}
    unlabelled = 0
    try:
        with path.open(encoding=_ENCODING, newline="") as handle:
            rows = csv.DictReader(handle, delimiter=_delimiter(handle))
            header = [name.strip() for name in rows.fieldnames or []]
            _check_header(path, header, reader)
            rows.fieldnames = header
            line = 2  # the header is line 1; a row with a line break in a cell spans several lines
            for cells in rows:
                before = len(problems)
                label = _row_label(cells, line, reader, reviewer, problems)
                here, line = line, rows.line_num + 1
                if label is None:
                    if len(problems) == before:
                        unlabelled += 1
                    continue
                first = first_lines.setdefault(label.key, (here, label))
                if first[1] is label:
                    labels.append(label)
                elif not _same(first[1], label):
                    # Which of two rows is meant cannot be guessed; the last one winning silently would be a guess.
                    problems.append(
                        f"line {here}: {label.reviewer}'s label of id {label.item_id!r} differs from the one on line "
                        f"{first[0]}; keep one row per item and reviewer."
                    )
    except UnicodeDecodeError as exc:
        raise QagenError(
            f"{path} is not UTF-8 text ({exc.reason}); save it from your spreadsheet as CSV UTF-8."
        ) from exc
    except csv.Error as exc:
        raise QagenError(f"{path} is not a readable CSV file ({exc}); save it from your spreadsheet as CSV.") from exc
    if problems:
        shown = "\n  ".join(problems[:_MAX_PROBLEMS])
        more = f"\n  ... and {len(problems) - _MAX_PROBLEMS} more" if len(problems) > _MAX_PROBLEMS else ""
        raise QagenError(
            f"{path} was not imported (nothing of it was stored):\n  {shown}{more}\n"
            "Fix those cells and import it again."
        )
    return labels, unlabelled


def _delimiter(handle: TextIO) -> str:
    """The file's delimiter: a comma, or the semicolon (or tab) a spreadsheet set to a language that
    writes decimal commas saves its CSV with, when the header row is split by it into an `id` column."""
    header = handle.readline()
    handle.seek(0)
    for delimiter in (",", ";", "\t"):
        if "id" in (name.strip() for name in next(csv.reader([header], delimiter=delimiter), [])):
            return delimiter
    return ","


def _check_header(path: Path, header: list[str], reader: _Reader) -> None:
    if "id" not in header:
        raise QagenError(f"{path} has no `id` column; import the file the export wrote, with its first row kept.")
    unknown = [name for name in header if name and name not in reader.columns]
    if unknown:
        raise QagenError(
            f"{path} has column{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}, which qagen does not "
            f"read; name the label columns {', '.join(reader.labels)} (as exported), or remove the others."
        )


def _row_label(
    cells: dict[str, str | None], line: int, reader: _Reader, reviewer: str | None, problems: list[str]
) -> Label | None:
    """The row's label; None when it has none, or has a problem (added to `problems`)."""

    def cell(name: str) -> str:
        return _from_text((cells.get(name) or "").strip())

    item_id = cell("id")
    if not item_id:
        if any(cell(name) for name in reader.labels):
            problems.append(f"line {line}: no id; keep each row's id as exported.")
        return None
    if not reader.known(item_id):
        problems.append(f"line {line}: id {item_id!r} is not an item of this directory; keep the ids as exported.")
        return None
    who = cell("reviewer") or reviewer or ""
    found = len(problems)
    criteria: dict[Criterion, CriterionLabel] = {}
    keep = correct = None
    if reader.kind == "draft":
        for criterion in reader.criteria:
            try:
                verdict = _criterion(cell(criterion), reader.threshold(criterion))
            except ValueError:
                problems.append(f"line {line}: {criterion} is {cell(criterion)!r}; write pass, fail or a score 1-5.")
                continue
            if verdict is not None:
                criteria[criterion] = verdict
        keep = _yes_no(cell("keep"), "keep", line, problems)
    else:
        correct = _yes_no(cell("correct"), "correct", line, problems)
    if len(cell("note")) > MAX_NOTE_CHARS:
        problems.append(
            f"line {line}: the note has {len(cell('note')):,} characters; a note keeps at most {MAX_NOTE_CHARS:,} "
            "(as the review page's), shorten it."
        )
    labelled = criteria or keep is not None or correct is not None or cell("note")
    if labelled and not who:
        problems.append(f"line {line}: no reviewer; fill its reviewer cell, or name the reviewer of the file.")
    if len(problems) > found or not labelled:
        return None  # a problem (recorded), or nothing labelled
    return Label(
        kind=reader.kind,
        item_id=item_id,
        reviewer=who,
        criteria=criteria,
        keep=keep,
        correct=correct,
        note=cell("note"),
        prompt_hashes=reader.prompt_hashes,
        via="csv",
    )


def _criterion(text: str, threshold: int) -> CriterionLabel | None:
    """The cell's verdict; None when empty. Raises ValueError when it is no verdict."""
    if not text:
        return None
    lowered = text.lower()
    if lowered in _PASS_FAIL:
        return CriterionLabel.of(_PASS_FAIL[lowered])
    if lowered in {"1", "2", "3", "4", "5"}:
        score = int(lowered)
        return CriterionLabel.of(score >= threshold, score)
    raise ValueError(text)


def _yes_no(text: str, column: str, line: int, problems: list[str]) -> bool | None:
    if not text:
        return None
    if text.lower() not in _YES_NO:
        problems.append(f"line {line}: {column} is {text!r}; write yes or no.")
        return None
    return _YES_NO[text.lower()]


def _same(before: Label | None, after: Label) -> bool:
    """Whether `after` says what `before` said (when and how it was given aside)."""
    fields = {"criteria", "keep", "correct", "note"}
    return before is not None and before.model_dump(include=fields) == after.model_dump(include=fields)
