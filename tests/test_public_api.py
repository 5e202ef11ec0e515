"""The public API: the names `qagen` exports, what each one is, and that importing it stays light."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
import typing
from pathlib import Path

import pytest

import qagen

EXPORTED = [
    "BatchOptions",
    "BuildConfig",
    "BuildResult",
    "BuildSummary",
    "ChunkSettings",
    "CorpusSettings",
    "EvalConfig",
    "EvalSummary",
    "ModelSettings",
    "PushResult",
    "QagenError",
    "Report",
    "__version__",
    "build",
    "evaluate",
    "push",
    "rag_baseline",
    "report",
]
# Libraries that take seconds to import: `import qagen` (and the CLI's help) must not load them.
HEAVY = ("langchain", "langchain_core", "langchain_openai", "datasets", "huggingface_hub", "pyarrow", "openai")


def test_the_exported_names_are_pinned() -> None:
    assert qagen.__all__ == EXPORTED


def test_each_exported_name_is_the_object_it_stands_for() -> None:
    from qagen.config import BuildConfig
    from qagen.corpus.settings import ChunkSettings, CorpusSettings
    from qagen.errors import QagenError
    from qagen.evaluate.api import evaluate
    from qagen.evaluate.config import EvalConfig
    from qagen.evaluate.records import EvalSummary
    from qagen.evaluate.report import Report, report
    from qagen.evaluate.systems.bundled import rag_baseline
    from qagen.generation.pipeline import BuildResult, build
    from qagen.llm.client import ModelSettings
    from qagen.publish.push import PushResult, push_run
    from qagen.records import BuildSummary
    from qagen.runs.batch.rounds import BatchOptions

    expected = {
        "BatchOptions": BatchOptions,
        "BuildConfig": BuildConfig,
        "BuildResult": BuildResult,
        "BuildSummary": BuildSummary,
        "ChunkSettings": ChunkSettings,
        "CorpusSettings": CorpusSettings,
        "EvalConfig": EvalConfig,
        "EvalSummary": EvalSummary,
        "ModelSettings": ModelSettings,
        "PushResult": PushResult,
        "QagenError": QagenError,
        "Report": Report,
        "build": build,
        "push": push_run,
        "rag_baseline": rag_baseline,
        "report": report,
    }
    assert set(expected) | {"evaluate", "__version__"} == set(qagen.__all__)
    for name, target in expected.items():
        assert getattr(qagen, name) is target, name
    # `qagen.evaluate` is also the package's name: the package is callable as the function.
    assert callable(qagen.evaluate) and inspect.unwrap(qagen.evaluate) is evaluate
    assert inspect.signature(qagen.evaluate) == inspect.signature(evaluate)
    assert isinstance(qagen.__version__, str)
    with pytest.raises(AttributeError, match="no attribute 'bm25_baseline'"):
        _ = qagen.bm25_baseline  # type: ignore[attr-defined]


def test_the_functions_return_the_typed_results() -> None:
    hints = {name: typing.get_type_hints(inspect.unwrap(getattr(qagen, name))) for name in ("build", "report")}
    assert hints["build"]["return"] is qagen.BuildResult
    assert typing.get_type_hints(qagen.BuildResult)["summary"] is qagen.BuildSummary
    assert hints["report"]["return"] is qagen.Report
    assert typing.get_type_hints(qagen.push)["return"] is qagen.PushResult
    assert inspect.signature(qagen.evaluate).return_annotation == "EvalSummary"


def test_qagen_evaluate_runs_an_evaluation_and_returns_its_summary(tmp_path: Path) -> None:
    testset = tmp_path / "set.jsonl"
    rows = [{"question": f"What is item {i}?", "answer": f"Item {i} is a lamp."} for i in range(3)]
    testset.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")

    def system(question: str) -> str:
        return "Item 0 is a lamp." if "0" in question else "I do not know."

    summary = qagen.evaluate(
        qagen.EvalConfig(testset=testset, metrics=["text"], judge=None), system, tmp_path / "eval", progress=False
    )
    assert isinstance(summary, qagen.EvalSummary)
    assert (summary.questions, summary.answered) == (3, 3)
    assert summary.metrics["token_f1"].mean == pytest.approx(1 / 3)
    # The summary is what `summary.json` holds, read back the same.
    saved = (tmp_path / "eval" / "summary.json").read_text(encoding="utf-8")
    assert qagen.EvalSummary.model_validate_json(saved) == summary
    assert summary.model_dump(mode="json") == json.loads(saved)

    compared = qagen.report([tmp_path / "eval"])
    assert isinstance(compared, qagen.Report) and compared.chart is None and compared.paired == ()
    assert compared.table.splitlines()[0].split() == ["metric", "eval"]
    with pytest.raises(qagen.QagenError, match="give `chart` too"):
        qagen.report([tmp_path / "eval"], metric="token_f1")


def test_build_and_push_take_str_paths_as_evaluate_and_report_do(
    llm: typing.Any, corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    model = qagen.ModelSettings(spec="openai:stand-in", base_url=llm.base_url)
    config = qagen.BuildConfig(
        corpus=qagen.CorpusSettings(path=str(corpus)),
        chunking=qagen.ChunkSettings(chunk_size=400, chunk_overlap=40),
        generator=model,
        critic=model,
        n_generations=4,
    )
    result = qagen.build(config, "run", progress=False)
    assert result.run_dir == Path("run") and (tmp_path / "run" / "summary.json").is_file()
    # A push reads the run first: a str path gets as far as the token it needs.
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    with pytest.raises(qagen.QagenError, match="No Hugging Face token"):
        qagen.push("run", "alice/never-pushed")


def test_build_refuses_settings_that_are_no_build_config_in_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(TypeError) as raised:
        qagen.build({"corpus": {"path": "docs"}}, tmp_path / "run")  # type: ignore[arg-type]
    assert str(raised.value) == (
        "`config` is a dict, not a BuildConfig: pass qagen.BuildConfig(...), or "
        "qagen.BuildConfig.model_validate(your_dict)."
    )
    assert not (tmp_path / "run").exists()


def test_model_settings_refuse_a_key_without_echoing_it() -> None:
    with pytest.raises(qagen.QagenError) as raised:
        qagen.ModelSettings(spec="openai:gpt-4o-mini", api_key="sk-not-a-real-key-123")  # type: ignore[call-arg]
    message = str(raised.value)
    assert "sk-not-a-real-key" not in message
    assert message == (
        "`ModelSettings` takes no key (`api_key`): settings are saved in run.json and summary.json. Put the key "
        "in an environment variable and give its name as `api_key_env`."
    )
    assert raised.value.settings == ("api_key_env",)
    with pytest.raises(ValueError, match="temprature"):  # a misspelt setting is no longer dropped either
        qagen.ModelSettings(spec="openai:gpt-4o-mini", temprature=0.2)  # type: ignore[call-arg]


def _python(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_import_qagen_loads_no_heavy_library() -> None:
    code = (
        "import sys, qagen\n"
        "assert set(qagen.__all__) <= set(dir(qagen))\n"  # listed (tab completion) without importing them
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r}))"
    )
    assert _python(code).strip() == "[]"


FIRST_IMPORTS = ["import qagen.evaluate.report", "from qagen import report", "import qagen.evaluate", "pass"]


@pytest.fixture(scope="module")
def evaluate_after_each_first_import() -> dict[str, str]:
    """Whether `qagen.evaluate` is the callable after each first import: "ok", or the traceback.

    One interpreter runs them all, importing qagen afresh for each (every `qagen` module dropped from
    `sys.modules` first): the libraries qagen imports load once instead of once per case."""
    check = (
        "import inspect, qagen\n"
        "from qagen import evaluate\n"
        "from qagen.evaluate.api import evaluate as function\n"
        "assert evaluate is qagen.evaluate and callable(evaluate), evaluate\n"
        "assert inspect.unwrap(evaluate) is function\n"
        "import qagen.evaluate.records as records\n"  # the package is still a package
        "assert records.EvalSummary is qagen.EvalSummary\n"
    )
    script = (
        "import json, sys, traceback\n"
        "outcomes = {}\n"
        "for first in json.loads(sys.argv[1]):\n"
        "    for name in [m for m in sys.modules if m == 'qagen' or m.startswith('qagen.')]:\n"
        "        del sys.modules[name]\n"
        "    try:\n"
        "        exec(first + '\\n' + sys.argv[2], {})\n"
        "        outcomes[first] = 'ok'\n"
        "    except Exception:\n"
        "        outcomes[first] = traceback.format_exc()\n"
        "print(json.dumps(outcomes))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, json.dumps(FIRST_IMPORTS), check],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    outcomes: dict[str, str] = json.loads(done.stdout)
    return outcomes


@pytest.mark.parametrize("first", FIRST_IMPORTS)
def test_qagen_evaluate_is_callable_whatever_was_imported_first(
    first: str, evaluate_after_each_first_import: dict[str, str]
) -> None:
    # Importing any module of the package `qagen.evaluate` binds that name in `qagen` to the package.
    assert evaluate_after_each_first_import[first] == "ok"
