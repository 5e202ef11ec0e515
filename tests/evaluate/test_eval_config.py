"""`EvalConfig`: the settings `evaluate` takes and `qagen evaluate` builds. Wrong settings are one
sentence naming the way forward; the command and the Python call given the same settings make the
same evaluation; the keyword form of earlier versions still runs, with a warning naming the new one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from qagen.call_policy import CallPolicy
from qagen.cli.app import main
from qagen.cli.evaluate import evaluate as evaluate_command
from qagen.cli.evaluate_settings import eval_config_from_options
from qagen.errors import ConfigError
from qagen.evaluate.api import evaluate
from qagen.evaluate.config import JUDGE_TOP_LOGPROBS, EvalConfig
from qagen.evaluate.report import UNMEASURED
from qagen.evaluate.stamp import STAMP_FILE
from qagen.evaluate.systems.answers_file import AnswersFileSystem
from qagen.llm.client import ModelSettings
from standins.llm.server import StandInLLM
from tests.evaluate.test_eval_stamp import _answers, _testset


def test_a_spec_is_model_settings_and_a_comma_text_is_the_metrics() -> None:
    config = EvalConfig(testset="run", judge="openai:stand-in", reader="openai:reader", metrics="text, retrieval")
    assert config.judge == ModelSettings(spec="openai:stand-in", top_logprobs=JUDGE_TOP_LOGPROBS)
    assert config.reader == ModelSettings(spec="openai:reader")
    assert config.metrics == ("text", "retrieval")
    assert EvalConfig(testset="run").judge == ModelSettings(spec="openai:gpt-4o-mini")  # as the command's default


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"metric": ["text"]}, "EvalConfig has no setting `metric` (did you mean `metrics`?); its settings are"),
        ({"judge_model": "x"}, "EvalConfig has no setting `judge_model` (did you mean `judge`?)"),
        ({"k": 0}, "`k` must be at least 1, got 0."),
        ({"k": "seven"}, "`k` cannot be 'seven' (input should be a valid integer"),
        ({"judge": 3}, "`judge` cannot be 3. It takes: The model of the LLM judges: a spec (`openai:gpt-4o-mini`)"),
        ({"concurrency": 0}, "`concurrency` must be at least 1, got 0."),
        ({"max_failure_rate": 2.0}, "`max_failure_rate` must be between 0 and 1, got 2.0."),
        ({"rpm": 0}, "`rpm` must be positive, got 0"),
        ({"interrupt_grace": -1}, "`interrupt_grace` must be 0 or more seconds, got -1"),
        ({"metrics": ["text", "fluency"]}, "Unknown metric 'fluency'; choose from "),
        ({"metrics": ["answer_relevancy"]}, "answer_relevancy compares embeddings: give an embeddings model"),
        ({"metrics": []}, "No metric to compute; choose some with `metrics`."),
    ],
)
def test_a_wrong_setting_is_one_sentence_naming_the_way_forward(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        EvalConfig(testset="run", **settings)
    assert str(caught.value).startswith(message)
    assert "validation error" not in str(caught.value)  # pydantic's list of union members is not shown


def test_a_setting_is_checked_when_changed_too() -> None:
    config = EvalConfig(testset="run", metrics=["text"])
    assert config.replace(k=3).k == 3 and config.k == 7
    with pytest.raises(ConfigError, match="`k` must be at least 1"):
        config.replace(k=0)


def _options(*args: str) -> dict[str, Any]:
    """The options `qagen evaluate set.jsonl --rag my_rag:answer ARGS` resolves (no command run)."""
    context = evaluate_command.make_context("evaluate", ["set.jsonl", "--rag", "my_rag:answer", *args])
    return dict(context.params)


def test_the_command_builds_the_settings_the_python_call_takes() -> None:
    options = _options(
        "--out", "eval", "--metrics", "correctness,text", "--judge-model", "openai:judge", "--base-url",
        "http://127.0.0.1:1/v1", "--judge-max-output-tokens", "512", "--concurrency", "3", "--rpm", "120",
        "--timeout", "30", "--max-retries", "2", "--answer-column", "reference", "--interrupt-grace", "1.5",
    )  # fmt: skip
    built = eval_config_from_options(options, k=3)
    assert built == EvalConfig(
        testset="set.jsonl",
        answer_column="reference",
        metrics=["correctness", "text"],
        judge=ModelSettings(
            spec="openai:judge", base_url="http://127.0.0.1:1/v1", max_output_tokens=512, timeout=30, max_retries=2
        ),
        reader=None,  # only the bundled baseline answers with the reader model
        k=3,
        concurrency=3,
        rpm=120,
        interrupt_grace=1.5,
        system_calls=CallPolicy(timeout=30, max_retries=2),
    )


def test_the_command_and_the_python_call_make_the_same_evaluation(tmp_path: Path) -> None:
    testset, answers = _testset(tmp_path / "set.jsonl"), _answers(tmp_path / "answers.jsonl")
    with StandInLLM() as llm:
        # Each value from another place: the file, a --set over the file, a flag over both.
        (tmp_path / "qagen.toml").write_text(
            f'[evaluate]\nmetrics = ["correctness"]\nk = 5\n[judge]\nbase_url = "{llm.base_url}"\n', encoding="utf-8"
        )
        args = [
            "evaluate", str(testset), "--answers", str(answers), "--out", str(tmp_path / "cli"), "-q",
            "--config", str(tmp_path / "qagen.toml"), "--set", "evaluate.k=3", "--set", "calls.concurrency=2",
            "--metrics", "correctness,retrieval,text", "--judge-model", "openai:stand-in",
        ]  # fmt: skip
        result = CliRunner().invoke(main, args, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        config = EvalConfig(
            testset=str(testset),
            metrics=["correctness", "retrieval", "text"],
            judge=ModelSettings(spec="openai:stand-in", base_url=llm.base_url),
            k=3,
            concurrency=2,
        )
        summary = evaluate(config, AnswersFileSystem(answers), tmp_path / "python", progress=False)
        calls = sum(entry["method"] == "POST" for entry in llm.log)

    assert calls == 2 * 12  # each evaluation judged every question once: none was left out or reused
    made = {name: json.loads((tmp_path / name / "summary.json").read_text()) for name in ("cli", "python")}
    # The command also says how far the judge can be trusted (`qagen.review.judge_reliability`): unmeasured yet.
    assert made["cli"].pop("judge_reliability") == {"correctness": UNMEASURED}
    assert made["cli"] == made["python"] == summary.model_dump(mode="json")
    assert summary.k == 3 and set(summary.judges) == {"correctness"} and "token_f1" in summary.metrics
    stamps = {name: json.loads((tmp_path / name / STAMP_FILE).read_text()) for name in ("cli", "python")}
    assert stamps["cli"]["made_from"] == stamps["python"]["made_from"]


def test_the_keyword_form_of_earlier_versions_warns_and_evaluates_the_same(tmp_path: Path) -> None:
    testset, answers = _testset(tmp_path / "set.jsonl", 3), _answers(tmp_path / "answers.jsonl", 3)
    with pytest.warns(DeprecationWarning, match=r"pass the settings as one EvalConfig, evaluate\(EvalConfig\("):
        old = evaluate(testset, AnswersFileSystem(answers), tmp_path / "old", metrics=["text"], k=2, progress=False)
    new = evaluate(
        EvalConfig(testset=testset, metrics=["text"], k=2), AnswersFileSystem(answers), tmp_path / "new", progress=False
    )
    assert old.model_dump() == new.model_dump() and old.k == 2
    with pytest.raises(ConfigError, match=r"set metrics there \(`EvalConfig\(testset=..., metrics=...\)`\)"):
        evaluate(EvalConfig(testset=testset), AnswersFileSystem(answers), tmp_path / "both", metrics=["text"])
