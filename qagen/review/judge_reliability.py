"""How far an evaluation's judges can be trusted: their verdicts against people's `correct` labels of the
same answers (`qagen review EVAL`), as one line per judge, in `summary.json` and in `qagen compare`.

A score is only as good as the judge that gives it; small judges are lenient. Each judge whose value
is a verdict on the answer (`MetricSpec.reviewable`, at its cut `MetricSpec.correct_at`) is compared
with the labels (`qagen.review.agreement.measure_agreement`): the share of labels it agrees with, with
its 95% Wilson interval, and Cohen's kappa with its 95% bootstrap interval. Without labels the judge is
said to be unmeasured, never assumed right.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, Field

from qagen.evaluate.judges.registry import LLM_METRICS
from qagen.evaluate.report import JUDGE_RELIABILITY as SUMMARY_KEY
from qagen.evaluate.report import UNMEASURED, reliability_line
from qagen.evaluate.stamp import summary_edited
from qagen.review.agreement import measure_agreement
from qagen.review.estimate import wilson_interval
from qagen.review.eval_answers import judges_present, read_answers
from qagen.review.labels import LabelStore
from qagen.runs.store import write_json_atomic


class JudgeReliability(BaseModel):
    """One judge against people's labels of the same answers."""

    judge: str
    cut: float = Field(description="The value at or above which the judge says 'correct' (`MetricSpec.correct_at`).")
    labels: int = Field(description="Labels compared (one per reviewer and answer the judge has a verdict on).")
    accuracy: float | None = Field(description="Share of those labels the judge's verdict agrees with.")
    accuracy_low: float | None = Field(description="Lower end of its 95% Wilson interval.")
    accuracy_high: float | None = Field(description="Upper end of its 95% Wilson interval.")
    kappa: float | None = Field(description="Cohen's kappa (None: undefined, such as when every label is alike).")
    kappa_low: float | None = Field(description="Lower end of kappa's 95% bootstrap interval.")
    kappa_high: float | None = Field(description="Upper end of kappa's 95% bootstrap interval.")

    def line(self) -> str:
        """`answer_correct: agrees with 22 of 24 labels, 0.92 [0.74, 0.98], kappa +0.83 [+0.58, +1.00] (correct
        at >= 0.5)` (`qagen.evaluate.report.reliability_line`)."""
        return reliability_line(self.judge, self.model_dump(exclude={"judge"}))


def judge_reliability(eval_dir: Path) -> dict[str, JudgeReliability | None]:
    """Each reviewable judge of the evaluation with its reliability, or None when no label measures it."""
    judges = judges_present(read_answers(eval_dir))
    if not judges:
        return {}
    if not any(label.correct is not None for label in LabelStore(eval_dir).of_kind("answer")):
        return dict.fromkeys(judges)
    report = measure_agreement(eval_dir)
    found: dict[str, JudgeReliability | None] = {}
    for judge in judges:
        measure = report.measures.get(judge)
        if measure is None or not measure.n or measure.agreement is None:
            found[judge] = None
            continue
        agreed = measure.confusion["true_pass"] + measure.confusion["true_fail"]
        low, high = wilson_interval(agreed, measure.n)
        found[judge] = JudgeReliability(
            judge=judge,
            cut=LLM_METRICS.get(judge).correct_at,
            labels=measure.n,
            accuracy=measure.agreement,
            accuracy_low=low,
            accuracy_high=high,
            kappa=measure.kappa,
            kappa_low=measure.kappa_low,
            kappa_high=measure.kappa_high,
        )
    return found


def record_judge_reliability(eval_dir: Path) -> dict[str, JudgeReliability | None]:
    """Write each judge's reliability into `EVAL_DIR/summary.json` (`SUMMARY_KEY`: a judge's measure, or
    the sentence that says it is unmeasured), and return it. An evaluation without summary is left alone."""
    path = eval_dir / "summary.json"
    if not path.is_file():
        return {}
    found = judge_reliability(eval_dir)
    summary = json.loads(path.read_text(encoding="utf-8"))
    recorded = {
        judge: measured.model_dump(exclude={"judge"}) if measured else UNMEASURED for judge, measured in found.items()
    }
    if summary.get(SUMMARY_KEY) != recorded:  # unchanged: the file is left as it is
        with summary_edited(eval_dir):
            write_json_atomic(path, {**summary, SUMMARY_KEY: recorded})
    return found
