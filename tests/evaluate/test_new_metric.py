"""Issue 21's must-show for metrics: a new metric is one registry entry and its prompt files. A grader
registered from two prompt files, through a real `qagen build` and `qagen evaluate` against the
stand-in LLM, is judged on every answer, summarised in `summary.json` and reported by `qagen compare`;
`metrics` knows it by its name, its group and `all`, and `--metrics`' help lists it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from qagen.cli.app import main
from qagen.errors import ConfigError
from qagen.evaluate.config import select_metrics
from qagen.evaluate.judges.registry import LLM_METRICS, metric_groups, register_grader, unregister_metric
from qagen.review.eval_answers import judges

SYSTEM = """You are a grader. You will be given a STUDENT ANSWER.
Grade it true when it is one short sentence, false otherwise.
Reply with `Explanation: ...` on one line, then `Grade: true` or `Grade: false`."""
USER = """STUDENT ANSWER:
<answer>
{answer}
</answer>
"""


@pytest.fixture()
def concise(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "metric"
    folder.mkdir()
    (folder / "grader_concise_system.txt").write_text(SYSTEM, encoding="utf-8")
    (folder / "grader_concise.txt").write_text(USER, encoding="utf-8")
    register_grader("concise", help="true when the answer is one short sentence", prompt_folder=folder)
    yield folder
    unregister_metric("concise")


def _invoke(*args: object) -> Result:
    return CliRunner().invoke(main, [str(arg) for arg in args], catch_exceptions=False)


def test_a_registered_metric_is_named_grouped_and_listed(concise: Path) -> None:
    spec = LLM_METRICS.get("concise")
    assert (spec.needs_contexts, spec.needs_reference, spec.group) == (False, False, "graders")
    assert metric_groups()["graders"][-1] == "concise" and "concise" in metric_groups()["all"]
    assert select_metrics(["graders"], embeddings=False)[0][-1] == "concise"
    assert "concise" in judges()  # a verdict on the answer: the review compares it with people's labels
    help_text = " ".join(_invoke("evaluate", "--help").output.split())
    assert "concise: true when the answer is one short sentence" in help_text
    with pytest.raises(ConfigError, match="exists already"):
        register_grader("concise", help="again", prompt_folder=concise)


def test_a_registered_metric_reaches_the_summary_and_the_report(
    concise: Path, llm: Any, corpus: Path, tmp_path: Path
) -> None:
    model = ["--generator-model", "openai:stand-in", "--base-url", llm.base_url]
    reader = ["--reader-model", "openai:stand-in", "--base-url", llm.base_url]
    run, out = tmp_path / "run", tmp_path / "eval"
    built = _invoke("build", corpus, "--out", run, *model, "-n", "12", "--chunk-size", "400", "--seed", "7", "-q")
    assert built.exit_code == 0, built.output
    evaluated = _invoke(
        "evaluate", run, "--baseline", "bm25", "--corpus", corpus, *reader, "--out", out, "--chunk-size", "400",
        "--metrics", "correctness,concise", "-q",
    )  # fmt: skip
    assert evaluated.exit_code == 0, evaluated.output

    # Every verdict is the stand-in's reply to the grader's own prompt, recognised through the registry.
    graded = [entry for entry in llm.log if entry["kind"] == "grader" and entry["criterion"] == "concise"]
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    values = [row["concise"] for row in rows if row["concise"] is not None]
    assert graded and len(values) == sum(row["generated_answer"] is not None for row in rows)
    # Two answers alike ask the grader the same request: sent once when both are in flight at once, and
    # again when one is asked after the other has its reply (timing decides which; never more than one a value).
    assert len(graded) <= len(values)
    assert set(values) == {float(entry["score"]) for entry in graded}

    summary = json.loads((out / "summary.json").read_text())
    stats = summary["metrics"]["concise"]
    assert stats["n"] == len(values) and stats["mean"] == pytest.approx(sum(values) / len(values))
    prompts = summary["judges"]["concise"]["prompts"]
    assert set(prompts) == {"grader_concise_system", "grader_concise"}

    report = _invoke("compare", out)
    assert report.exit_code == 0, report.output
    [line] = [line for line in report.output.splitlines() if line.strip().startswith("concise")]
    assert f"{stats['mean']:.2f}"[:3] in line  # the mean, as the report rounds it
