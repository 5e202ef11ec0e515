"""What a finished evaluation was made from, so that a re-run with nothing to do does nothing.

`evaluation.stamp.json` records what `results.jsonl` and `summary.json` were made from: the qagen
version, the system's identity (and, for an answers file, the file's size and modification time as
it was read), the test set's contents (a digest of its questions, so a Hub or in-memory test set is
covered as well as a file), the metrics, k, the judge's model and prompts, and the settings written
into the summary; and the size and modification time of what the run left: both record logs,
`results.jsonl` and `summary.json`.

A stamp is written only for a settled run: one a re-run would make no call for (every question
answered, or read from the answers file; every verdict in, or never to be asked; no failed call to
redo). A re-run whose stamp holds skips answering, judging and scoring: the stored summary stands.
Anything else (an input touched, another metric set or k, a log appended to by another process)
takes the full path, which removes the stamp first and writes a new one when it ends settled.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qagen._version import __version__
from qagen.evaluate.judges.registry import LLM_METRICS
from qagen.evaluate.metrics.scoring import Reported
from qagen.evaluate.records import EvalSummary, JudgeVerdict, RagOutput
from qagen.evaluate.systems.answers_file import AnswersFileSystem
from qagen.evaluate.testset import TestSet
from qagen.runs.store import write_json_atomic

if TYPE_CHECKING:
    from qagen.evaluate.runner import Evaluation

STAMP_FILE = "evaluation.stamp.json"
_OUTPUTS = ("answers.jsonl", "judgements.jsonl", "results.jsonl", "summary.json")


def question_settled(
    output: RagOutput, verdicts: Mapping[str, JudgeVerdict | None], *, k: int, run: Reported, answers_reread: bool
) -> bool:
    """Whether a re-run would make no call for this question (its stored answer and verdicts).

    `answers_reread`: the system's answers are read afresh every run (an answers file), so a row
    without an answer stays so; any other system is asked again for it.
    """
    if output.answer is None:
        return answers_reread
    for metric, verdict in verdicts.items():
        if verdict is None:
            # Never asked for (see `Evaluation.run`): a judge of contexts on a question that
            # retrieved nothing, from a system that reports no contexts at all. Else still to ask.
            never = output.retrieved_nothing(k) and not run.contexts and LLM_METRICS.get(metric).needs_contexts
            if not never:
                return False
        elif verdict.failure is not None and verdict.failure.retryable:
            return False
    return True


class EvalStamp:
    """The stamp of one evaluation directory, for what the evaluation is about to be made from."""

    def __init__(self, out: Path, made_from: dict[str, Any]) -> None:
        self.out = out
        # Through JSON, so both sides compare as JSON sees them (tuples are lists, keys strings).
        self.made_from = json.loads(json.dumps(made_from, default=str))

    @classmethod
    def of(cls, evaluation: Evaluation, about: Mapping[str, Any]) -> EvalStamp:
        """The stamp for `evaluation` with `about` (what `write_results` puts in the summary)."""
        system = evaluation.system
        made_from = {
            "qagen_version": __version__,
            "system": evaluation.identity,
            "answers_file": system.read_stat if isinstance(system, AnswersFileSystem) else None,
            "testset": testset_digest(evaluation.testset),
            "metrics": {"groups": sorted(evaluation.groups), "llm": evaluation.llm_metrics},
            "k": evaluation.k,
            "judge_model": evaluation.judge_model,
            "judge_prompts": {
                metric: [prompt.hash for prompt in task.prompts] for metric, task in evaluation.judges.items()
            },
            "about": dict(about),
        }
        return cls(evaluation.out, made_from)

    @property
    def path(self) -> Path:
        return self.out / STAMP_FILE

    def settled_summary(self) -> EvalSummary | None:
        """The stored summary when the stamp holds (nothing changed since a settled run); else None."""
        try:
            stamp = json.loads(self.path.read_text(encoding="utf-8"))
            wanted = {"made_from": self.made_from, "outputs": self._outputs()}
            if not isinstance(stamp, dict) or any(stamp.get(key) != value for key, value in wanted.items()):
                return None
            # A summary that is no `EvalSummary` (edited by hand) is a ValueError: scored again.
            return EvalSummary.model_validate_json((self.out / "summary.json").read_bytes())
        except (OSError, ValueError):
            return None

    def clear(self) -> None:
        """Remove the stamp (before a run that will change what it vouches for)."""
        self.path.unlink(missing_ok=True)

    def write(self) -> None:
        """Stamp the outputs as they are now (after a settled run has written them)."""
        write_json_atomic(self.path, {"made_from": self.made_from, "outputs": self._outputs()})

    def _outputs(self) -> dict[str, list[int] | None]:
        return _outputs(self.out)


def _outputs(out: Path) -> dict[str, list[int] | None]:
    """Each output's size and modification time (ns); None when missing."""
    stats: dict[str, list[int] | None] = {}
    for name in _OUTPUTS:
        try:
            stat = (out / name).stat()
        except OSError:
            stats[name] = None
            continue
        stats[name] = [stat.st_size, stat.st_mtime_ns]
    return stats


@contextlib.contextmanager
def summary_edited(out: Path) -> Iterator[None]:
    """An edit of `summary.json` that changes no score (the judges' reliability from people's labels,
    `qagen.review.judge_reliability`): a stamp that held before the edit holds after it."""
    path = out / STAMP_FILE
    try:
        stamp = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        stamp = None
    held = isinstance(stamp, dict) and stamp.get("outputs") == _outputs(out)
    yield
    if held and isinstance(stamp, dict):
        write_json_atomic(path, {**stamp, "outputs": _outputs(out)})


def testset_digest(testset: TestSet) -> dict[str, str]:
    """The test set's origin and a SHA-256 of its questions (every field) and skipped rows."""
    digest = hashlib.sha256()
    for item in testset.items:
        digest.update(item.model_dump_json().encode("utf-8") + b"\n")
    digest.update(b"skipped\n")
    for skipped in testset.skipped:
        digest.update(skipped.model_dump_json().encode("utf-8") + b"\n")
    return {"origin": testset.origin, "answer_column": testset.answer_column, "sha256": digest.hexdigest()}
