"""An evaluation directory's answers as a reviewer sees them: each question, its reference, the
system's answer, and what the judges said of it (`results.jsonl`), and the sample to label.

People label an answer correct or not against the reference. The judges that say the same thing
in their own terms, each at its cut (`MetricSpec.correct_at`): answer_correct (correct at 0.5), the
correctness judge (1-5; correct at 3, the midpoint of the notebook's normalisation) and the boolean
graders (1.0 / 0.0). The sample is
stratified like a run's (`qagen.review.sample`): half the answers the first judge present calls
correct, half the ones it calls wrong, so both of its errors are measured.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

from qagen.errors import QagenError
from qagen.evaluate.judges.registry import LLM_METRICS
from qagen.review.sample import ReviewSample, draw, stored_or_drawn

RESULTS_FILE = "results.jsonl"


def judges() -> tuple[str, ...]:
    """The judges whose value is a verdict on the answer (`MetricSpec.reviewable`), from the registry:
    the correctness judge and the boolean graders; `correct` compares with the reference as people
    do, the others (relevance, groundedness) are reported against the same labels for what they are worth."""
    return tuple(spec.name for spec in LLM_METRICS if spec.reviewable)


JUDGED_CORRECT = "judged:correct"
JUDGED_WRONG = "judged:wrong"
ANSWERED = "answered"
"""The answers no judge gave a verdict on (all of them in an evaluation with no judge)."""


class AnswerRow(NamedTuple):
    """One evaluated question: what a reviewer reads, and each judge's value (None: no verdict)."""

    id: str
    question: str
    reference: str
    answer: str | None
    verdicts: dict[str, float | None]


def is_eval_dir(directory: Path) -> bool:
    """Whether `directory` holds an evaluation's results (and no build's run)."""
    return (directory / RESULTS_FILE).is_file() and not (directory / "run.json").exists()


def read_answers(eval_dir: Path) -> dict[str, AnswerRow]:
    """The rows of `EVAL_DIR/results.jsonl` by question id, in test-set order."""
    path = eval_dir / RESULTS_FILE
    rows: dict[str, AnswerRow] = {}
    try:
        with path.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if line.strip():
                    row = _row(json.loads(line), path, number)
                    rows[row.id] = row
    except FileNotFoundError as exc:
        raise QagenError(
            f"{eval_dir} holds no {RESULTS_FILE}: it is not an evaluation directory (nor a run directory); "
            "give the `out` folder of `qagen evaluate`."
        ) from exc
    except ValueError as exc:
        raise QagenError(f"{path} cannot be read ({exc}); run the evaluation again to rewrite it.") from exc
    return rows


def _row(data: Any, path: Path, number: int) -> AnswerRow:
    if not isinstance(data, dict) or not isinstance(data.get("id"), str):
        raise ValueError(f"line {number} is not a results row")
    verdicts = {judge: _number(data.get(judge)) for judge in judges() if judge in data}
    return AnswerRow(
        id=data["id"],
        question=str(data.get("question", "")),
        reference=str(data.get("true_answer", "")),
        answer=data.get("generated_answer"),
        verdicts=verdicts,
    )


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def judge_says_correct(judge: str, value: float) -> bool:
    """A judge's value as a correct / wrong verdict: at least its cut (`MetricSpec.correct_at`)."""
    return value >= LLM_METRICS.get(judge).correct_at


def judges_present(rows: dict[str, AnswerRow]) -> list[str]:
    """The judges with a verdict on some answer, in the registry's order."""
    return [judge for judge in judges() if any(row.verdicts.get(judge) is not None for row in rows.values())]


def answer_sample(eval_dir: Path, size: int, seed: int) -> ReviewSample:
    """The answers of `eval_dir` to label (see the module), stored as `EVAL_DIR/review_sample.json`
    like a run's sample, and read back when drawn with the same `size` and `seed`."""

    def draw_new() -> ReviewSample:
        rows = read_answers(eval_dir)
        answered = [row for row in rows.values() if row.answer is not None]
        if not answered:
            raise QagenError(f"{eval_dir} has no answered question to review.")
        judges = judges_present(rows)
        if not judges:
            return draw({ANSWERED: [row.id for row in answered]}, size, seed, half=ANSWERED)
        pools: dict[str, list[str]] = {JUDGED_CORRECT: [], JUDGED_WRONG: [], ANSWERED: []}
        for row in answered:
            value = row.verdicts.get(judges[0])
            if value is None:
                pools[ANSWERED].append(row.id)  # the judge failed on it: still an answer people can label
            else:
                pools[JUDGED_CORRECT if judge_says_correct(judges[0], value) else JUDGED_WRONG].append(row.id)
        return draw({name: ids for name, ids in pools.items() if ids}, size, seed, half=JUDGED_CORRECT)

    return stored_or_drawn(eval_dir, size, seed, draw_new)
