"""The evaluation stamp: a re-run with nothing changed since a settled run makes no call and scores
nothing; a touched input or output, another metric set or k, or a run that left work takes the full path."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fake_llm import FakeLLM

from qagen.cli.app import main
from qagen.evaluate import results as results_module
from qagen.evaluate.api import evaluate
from qagen.evaluate.config import EvalConfig
from qagen.evaluate.metrics.scoring import Reported
from qagen.evaluate.records import EvalSummary, JudgeVerdict, RagOutput
from qagen.evaluate.stamp import STAMP_FILE, question_settled
from qagen.evaluate.systems.answers_file import AnswersFileSystem
from qagen.failures import Failure, FailureKind
from qagen.llm.client import ModelSettings
from qagen.records import RetrievedContext
from standins.llm.log import LogEntry
from standins.llm.server import StandInLLM

QUESTIONS = 12


def _testset(path: Path, n: int = QUESTIONS, *, answer: str = "Answer {i} here.") -> Path:
    item = {"source_doc": "a.md", "start_index": 0, "end_index": 10}
    rows = [item | {"id": f"q{i}", "question": f"Q{i}?", "answer": answer.format(i=i)} for i in range(n)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _answers(path: Path, n: int = QUESTIONS) -> Path:
    context = {"text": "Answer {i} here.", "source": "a.md", "start_index": 0, "end_index": 10}
    rows = [
        {"question": f"Q{i}?", "answer": f"Answer {i}.", "contexts": [{**context, "text": f"Answer {i} here."}]}
        for i in range(n)
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.fixture
def scored(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ids of the questions scored (deterministic metrics computed) since the test began."""
    seen: list[str] = []
    real = results_module.deterministic_metrics

    def counting(item: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(item.id)
        return real(item, *args, **kwargs)

    monkeypatch.setattr(results_module, "deterministic_metrics", counting)
    return seen


class Setup:
    """An evaluation of an answers file by `judge`, whose requests `log` lists."""

    def __init__(self, tmp: Path, judge: Any, log: Callable[[], list[LogEntry]]) -> None:
        self.testset = _testset(tmp / "set.jsonl")
        self.answers = _answers(tmp / "answers.jsonl")
        self.out = tmp / "eval"
        self.judge = judge
        self.log = log

    def evaluate(self, **settings: Any) -> EvalSummary:
        config = EvalConfig(
            testset=self.testset, metrics=["correctness", "retrieval", "text"], judge=self.judge, concurrency=1
        )
        return evaluate(config.replace(**settings), AnswersFileSystem(self.answers), self.out, progress=False)

    def calls(self) -> int:
        return sum(entry["method"] == "POST" for entry in self.log())


@pytest.fixture
def setup(tmp_path: Path, fake_llm: FakeLLM) -> Setup:
    return Setup(tmp_path, fake_llm.client(), lambda: fake_llm.log)


def test_a_rerun_with_nothing_changed_makes_no_call_and_scores_nothing(setup: Setup, scored: list[str]) -> None:
    first = setup.evaluate()
    assert (setup.out / STAMP_FILE).exists()
    assert len(scored) == QUESTIONS and setup.calls() == QUESTIONS
    rows = (setup.out / "results.jsonl").read_bytes()
    scored.clear()

    assert setup.evaluate() == first
    assert scored == [] and setup.calls() == QUESTIONS
    assert (setup.out / "results.jsonl").read_bytes() == rows


@pytest.mark.parametrize(
    "touched", ["answers file", "answers.jsonl", "judgements.jsonl", "results.jsonl", "summary.json"]
)
def test_touching_an_input_or_an_output_takes_the_full_path(setup: Setup, scored: list[str], touched: str) -> None:
    first = setup.evaluate()
    path = setup.answers if touched == "answers file" else setup.out / touched
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))  # same bytes, another time
    scored.clear()

    assert setup.evaluate() == first
    assert len(scored) == QUESTIONS  # every question scored again: the full path
    assert setup.calls() == QUESTIONS  # ... which still pays for no verdict twice
    scored.clear()
    assert setup.evaluate() == first and scored == []  # stamped again by the full run


def test_an_edited_test_set_takes_the_full_path(setup: Setup, scored: list[str]) -> None:
    first = setup.evaluate()
    _testset(setup.testset, answer="Reference {i} changed.")
    scored.clear()
    again = setup.evaluate()
    assert len(scored) == QUESTIONS and setup.calls() == 2 * QUESTIONS  # new references, new verdicts
    assert again.metrics["token_f1"] != first.metrics["token_f1"]


@pytest.mark.parametrize("change", [{"metrics": ["correctness", "retrieval"]}, {"k": 3}])
def test_another_metric_set_or_k_takes_the_full_path(setup: Setup, scored: list[str], change: dict[str, Any]) -> None:
    first = setup.evaluate()
    scored.clear()
    again = setup.evaluate(**change)
    assert len(scored) == QUESTIONS
    assert again != first
    assert set(again.metrics) != set(first.metrics) or again.k != first.k


def test_a_run_with_failed_calls_to_redo_is_not_stamped(tmp_path: Path, scored: list[str]) -> None:
    with StandInLLM(fault_rate=0.3, fault_kinds=("500",), fault_attempts=1000) as llm:
        judge = ModelSettings(spec="openai:stand-in", base_url=llm.base_url, max_retries=0)
        setup = Setup(tmp_path, judge, lambda: llm.log)
        setup.evaluate()
        judges = json.loads((setup.out / "summary.json").read_text())["judges"]["correctness"]
        assert judges["failures"] == {"api_error:server_error": judges["failed"]} and judges["failed"] > 0
        assert not (setup.out / STAMP_FILE).exists()

        llm.configure(fault_rate=0.0)
        calls = setup.calls()
        setup.evaluate()  # the failed verdicts asked again: now settled
        assert setup.calls() - calls == judges["failed"]
        assert (setup.out / STAMP_FILE).exists()


def test_a_system_that_failed_to_answer_is_asked_again_not_stamped(tmp_path: Path) -> None:
    testset = _testset(tmp_path / "set.jsonl", 4)
    down = {"Q1?"}

    def system(question: str) -> str:
        if question in down:
            raise RuntimeError("server down")
        return "Answer."

    config = EvalConfig(testset=testset, metrics=["text"], judge=None)
    assert evaluate(config, system, tmp_path / "eval", progress=False).answered == 3
    assert not (tmp_path / "eval" / STAMP_FILE).exists()
    down.clear()
    assert evaluate(config, system, tmp_path / "eval", progress=False).answered == 4
    assert (tmp_path / "eval" / STAMP_FILE).exists()


def test_an_answers_file_without_some_answers_is_settled(setup: Setup, scored: list[str]) -> None:
    _answers(setup.answers, QUESTIONS - 2)  # the file says the same every time it is read
    first = setup.evaluate()
    assert first.answered == QUESTIONS - 2 and (setup.out / STAMP_FILE).exists()
    scored.clear()
    assert setup.evaluate() == first and scored == []


def test_the_cli_prints_the_same_after_a_stamped_rerun(llm: StandInLLM, tmp_path: Path) -> None:
    testset, answers = _testset(tmp_path / "set.jsonl"), _answers(tmp_path / "answers.jsonl")
    args = ["evaluate", str(testset), "--answers", str(answers), "--out", str(tmp_path / "eval"),
            "--reader-model", "openai:stand-in", "--base-url", llm.base_url, "-q"]  # fmt: skip
    first = CliRunner().invoke(main, args, catch_exceptions=False)
    assert first.exit_code == 0 and (tmp_path / "eval" / STAMP_FILE).exists()
    again = CliRunner().invoke(main, args, catch_exceptions=False)
    assert (again.exit_code, again.output) == (0, first.output)


# --------------------------------------------------------------------------- one question


def _verdict(failure: Failure | None = None) -> JudgeVerdict:
    return JudgeVerdict(metric="correctness", value=None if failure else 4.0, failure=failure)


ANSWERED = RagOutput(answer="A.", contexts=[RetrievedContext(text="A context.")])
NOTHING_RETRIEVED = RagOutput(answer="A.", contexts=[])
NO_ANSWER = RagOutput(answer=None, error="timeout")
CALL_FAILED = Failure.of(FailureKind.SERVER_ERROR, "500")
UNREADABLE = Failure.of(FailureKind.PARSE_FAILURE, "no score")


@pytest.mark.parametrize(
    ("output", "verdicts", "contexts_reported", "answers_reread", "settled"),
    [
        (ANSWERED, {"correctness": _verdict()}, True, False, True),
        (ANSWERED, {"correctness": _verdict(UNREADABLE)}, True, False, True),  # asked; read as it will be
        (ANSWERED, {"correctness": _verdict(CALL_FAILED)}, True, False, False),  # no reply: asked again
        (ANSWERED, {"correctness": None}, True, False, False),  # not judged yet
        (ANSWERED, {}, True, False, True),  # no LLM metric
        (NO_ANSWER, {"correctness": None}, True, False, False),  # the system is asked again
        (NO_ANSWER, {"correctness": None}, True, True, True),  # the answers file says the same again
        # A judge of contexts is never asked about an empty retrieval of a system that reports none.
        (NOTHING_RETRIEVED, {"faithfulness": None}, False, False, True),
        (NOTHING_RETRIEVED, {"faithfulness": None}, True, False, False),
        (NOTHING_RETRIEVED, {"correctness": None}, False, False, False),  # correctness needs no contexts
    ],
)
def test_a_question_is_settled_when_a_rerun_would_make_no_call_for_it(
    output: RagOutput,
    verdicts: dict[str, JudgeVerdict | None],
    contexts_reported: bool,
    answers_reread: bool,
    settled: bool,
) -> None:
    run = Reported(contexts=contexts_reported)
    assert question_settled(output, verdicts, k=7, run=run, answers_reread=answers_reread) is settled
