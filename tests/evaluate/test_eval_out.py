"""`qagen evaluate --out` writes only into a folder that is new, empty, or an evaluation of the
same kind (one evaluation, or a grid's folder of them), as `build` writes only into its own run:
never among the corpus's documents, never over a build run's summary."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from qagen.cli.app import main
from qagen.errors import QagenError
from qagen.evaluate.api import evaluate
from qagen.evaluate.config import EvalConfig
from qagen.evaluate.systems.answers_file import AnswersFileSystem

QUESTION = {"question": "What is x?", "answer": "X."}


def _invoke(*args: object) -> Result:
    return CliRunner().invoke(main, [str(arg) for arg in args], catch_exceptions=False)


def _files(folder: Path) -> dict[str, bytes]:
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


@pytest.fixture()
def inputs(tmp_path: Path) -> tuple[Path, Path]:
    testset = tmp_path / "set.jsonl"
    testset.write_text(json.dumps(QUESTION) + "\n", encoding="utf-8")
    answers = tmp_path / "answers.jsonl"
    answers.write_text(json.dumps(QUESTION) + "\n", encoding="utf-8")
    return testset, answers


def _evaluate_answers(inputs: tuple[Path, Path], out: Path) -> Result:
    testset, answers = inputs
    return _invoke("evaluate", testset, "--answers", answers, "--metrics", "text", "--out", out, "-q")


def test_an_evaluation_into_the_corpus_is_refused_and_writes_nothing(inputs: tuple[Path, Path], corpus: Path) -> None:
    before = _files(corpus)
    result = _evaluate_answers(inputs, corpus)
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"error: {corpus} holds files of its own and is no qagen evaluation (no eval.json)" in result.output
    assert "choose another --out" in result.output
    assert _files(corpus) == before


def test_an_evaluation_into_a_build_run_is_refused_and_keeps_its_summary(
    inputs: tuple[Path, Path], tmp_path: Path
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text("{}", encoding="utf-8")
    (run / "summary.json").write_text('{"funnel": {"kept": 3}}', encoding="utf-8")
    before = _files(run)
    result = _evaluate_answers(inputs, run)
    assert result.exit_code == 1
    assert f"error: {run} is a qagen build run (run.json), not an evaluation; choose another --out" in result.output
    assert _files(run) == before


def test_a_new_an_empty_and_an_existing_evaluation_folder_are_taken(inputs: tuple[Path, Path], tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    for out in (tmp_path / "new", empty, tmp_path / "new"):  # the last one: a re-run into its own evaluation
        result = _evaluate_answers(inputs, out)
        assert result.exit_code == 0, result.output
        assert (out / "eval.json").is_file() and (out / "summary.json").is_file()


def test_the_python_api_refuses_a_file_and_a_foreign_folder(inputs: tuple[Path, Path], tmp_path: Path) -> None:
    testset, answers = inputs
    with pytest.raises(QagenError, match=r"is a file; `out` must be a folder") as raised:
        evaluate(EvalConfig(testset=testset, metrics=["text"]), AnswersFileSystem(answers), testset, progress=False)
    assert raised.value.settings == ("out",)
    with pytest.raises(QagenError, match=r"is no qagen evaluation \(no eval.json\); choose another `out`"):
        evaluate(EvalConfig(testset=testset, metrics=["text"]), AnswersFileSystem(answers), tmp_path, progress=False)


def _grid(llm: Any, inputs: tuple[Path, Path], corpus: Path, out: Path) -> Result:
    testset, _ = inputs
    model = ["--reader-model", "openai:stand-in", "--base-url", llm.base_url]
    return _invoke(
        "evaluate", testset, "--baseline", "bm25", "--corpus", corpus, "--k", "1,2", *model, "--metrics", "retrieval",
        "--out", out, "-q",
    )  # fmt: skip


def test_a_grid_into_the_corpus_or_into_one_evaluation_is_refused(
    llm: Any, inputs: tuple[Path, Path], corpus: Path, tmp_path: Path
) -> None:
    before = _files(corpus)
    result = _grid(llm, inputs, corpus, corpus)
    assert result.exit_code == 1
    assert f"error: {corpus} holds files of its own and is no folder of qagen evaluations" in result.output
    assert _files(corpus) == before
    single = tmp_path / "single"
    assert _evaluate_answers(inputs, single).exit_code == 0
    result = _grid(llm, inputs, corpus, single)
    assert result.exit_code == 1
    assert f"error: {single} is one evaluation (eval.json), not a folder of them" in result.output
    assert not any(path.is_dir() for path in single.iterdir())
    assert llm.log == []


def test_a_grid_runs_again_into_its_own_folder(
    llm: Any, inputs: tuple[Path, Path], corpus: Path, tmp_path: Path
) -> None:
    grid = tmp_path / "grid"
    for _ in range(2):
        result = _grid(llm, inputs, corpus, grid)
        assert result.exit_code == 0, result.output
    assert sorted(path.name for path in grid.iterdir()) == ["chunk2000_k1", "chunk2000_k2"]
