"""Old command and option names keep working for users' scripts: hidden from `--help`, each says its
new name in one sentence on stderr and does what the new name does, exit codes included."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result

from qagen.cli.app import main

STAGES = ("chunk", "generate", "critique", "filter")
SMALL = ["--chunk-size", "400", "--chunk-overlap", "40", "--seed", "7", "-q"]


def _invoke(*args: object) -> Result:
    return CliRunner().invoke(main, [str(arg) for arg in args])


def _listed(help_text: str) -> set[str]:
    """The command names a group's `--help` lists under "Commands:"."""
    listing = help_text.split("\nCommands:\n", 1)[1]
    return {line.split()[0] for line in listing.splitlines() if line.startswith("  ") and line.split()}


def test_the_top_level_help_lists_the_stage_group_not_the_stages() -> None:
    listed = _listed(_invoke("--help").output)
    assert "stage" in listed and "build" in listed
    assert not listed & set(STAGES)
    assert _listed(_invoke("stage", "--help").output) == set(STAGES)
    assert "qagen stage chunk" in _invoke("--help").output


@pytest.mark.parametrize("name", STAGES)
def test_an_old_stage_name_takes_the_same_options_and_says_its_new_name(name: str) -> None:
    old, new = main.commands[name], main.commands["stage"]
    assert isinstance(new, click.Group)
    assert old.hidden and old.params == new.commands[name].params and old.callback is new.commands[name].callback
    result = _invoke(name, "--help")
    assert result.exit_code == 0
    said = f"note: `qagen {name}` is deprecated; use `qagen stage {name}` instead (it does the same).\n"
    assert result.stderr == said


def test_an_old_stage_name_runs_the_stage_with_the_same_output_and_exit_codes(corpus: Path, tmp_path: Path) -> None:
    old = _invoke("chunk", corpus, "--out", tmp_path / "old", *SMALL)
    new = _invoke("stage", "chunk", corpus, "--out", tmp_path / "new", *SMALL)
    assert (old.exit_code, new.exit_code) == (0, 0)
    assert old.stdout.replace(str(tmp_path / "old"), str(tmp_path / "new")) == new.stdout
    assert old.stderr.count("deprecated") == 1 and "`qagen stage chunk`" in old.stderr and not new.stderr
    assert (tmp_path / "old" / "chunks.jsonl").read_bytes() == (tmp_path / "new" / "chunks.jsonl").read_bytes()
    # An error (exit 1) and wrong usage (exit 2) keep their codes, and their messages follow the note.
    missing = _invoke("filter", tmp_path / "nothing-here")
    assert missing.exit_code == 2 and missing.stderr.startswith("note: `qagen filter` is deprecated")
    unchunked = tmp_path / "empty"
    unchunked.mkdir()
    refused = _invoke("generate", unchunked)
    assert refused.exit_code == 1 and refused.stderr.splitlines()[0].startswith("note: `qagen generate`")
    assert "error:" in refused.stderr.splitlines()[1]


def test_an_old_stage_name_resumes_a_run_as_the_new_name_does(llm: Any, corpus: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert _invoke("stage", "chunk", corpus, "--out", run, *SMALL).exit_code == 0
    model = ["--model", "openai:stand-in", "--base-url", llm.base_url]
    drafted = _invoke("generate", run, *model, "-n", 4, "-q")
    assert drafted.exit_code == 0, drafted.output
    assert "next: qagen stage critique" in drafted.stdout  # the hint names the new form
    assert len((run / "drafts.jsonl").read_text().splitlines()) == 4


def _evaluation(path: Path, correctness: float) -> Path:
    """A finished evaluation directory of two questions."""
    path.mkdir(parents=True)
    stats = {"mean": correctness, "low": correctness, "high": correctness, "n": 2, "missing": 0}
    (path / "summary.json").write_text(json.dumps({"k": 7, "metrics": {"correctness": stats}}))
    rows = [{"id": str(i), "correctness": 1 + 4 * correctness} for i in range(2)]
    (path / "results.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_profile_and_compare_are_listed_and_report_is_not() -> None:
    listed = _listed(_invoke("--help").output)
    assert {"profile", "compare"} <= listed and "report" not in listed
    assert "qagen profile" in _invoke("--help").output and "qagen compare" in _invoke("--help").output


def test_report_on_evaluations_is_compare_and_says_so(tmp_path: Path) -> None:
    a, b = _evaluation(tmp_path / "a", 0.5), _evaluation(tmp_path / "b", 1.0)
    old, new = _invoke("report", a, b), _invoke("compare", a, b)
    assert (old.exit_code, new.exit_code) == (0, 0)
    assert old.stdout == new.stdout and "correctness" in new.stdout and not new.stderr
    said = (
        "note: `qagen report EVAL_DIR...` is deprecated; use `qagen compare EVAL_DIR...` instead (it does the same).\n"
    )
    assert old.stderr == said
    wrong = _invoke("report", a, "--metric", "correctness")  # wrong usage keeps its code
    assert wrong.exit_code == 2 and wrong.stderr.startswith(said)


def test_report_on_a_build_run_is_profile_and_says_so(llm: Any, corpus: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    model = ["--model", "openai:stand-in", "--base-url", llm.base_url]
    assert _invoke("build", corpus, "--out", run, *model, "-n", 6, *SMALL).exit_code == 0
    old, new = _invoke("report", run), _invoke("profile", run)
    assert (old.exit_code, new.exit_code) == (0, 0)
    assert old.stdout == new.stdout and "| question type | kept |" in new.stdout and not new.stderr
    assert old.stderr == "note: `qagen report RUN` is deprecated; use `qagen profile RUN` instead (it does the same).\n"
    # Profile takes one build's run directory; compare names it when given one.
    assert _invoke("report", run, run).exit_code == 2
    evaluation = _evaluation(tmp_path / "eval", 0.5)
    refused = _invoke("profile", evaluation)
    assert refused.exit_code == 1 and "`qagen compare` compares evaluation directories" in refused.stderr
    assert f"`qagen profile {run}`" in _invoke("compare", evaluation, run).stderr
