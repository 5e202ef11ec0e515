"""`~` in a path setting is the home directory, whether the path is a flag, a config-file key or a
Python argument: never a folder named `~` in the working directory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from qagen.cli.app import main
from qagen.cli.evaluate import evaluate as evaluate_command
from qagen.config import BuildConfig, CorpusSettings
from qagen.runs.rundir import RunDir

SMALL = ["--chunk-size", "400", "--chunk-overlap", "40", "--seed", "7"]


@pytest.fixture()
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home directory of its own, and a working directory elsewhere (where a literal `~` would go)."""
    home = tmp_path / "home"
    (home / "folder").mkdir(parents=True)
    (home / "file").write_text("x", encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    return home


def _path_params(group: click.Group, prefix: str = "") -> list[tuple[str, click.Parameter]]:
    found: list[tuple[str, click.Parameter]] = []
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            found += _path_params(command, f"{prefix}{name} ")
            continue
        paths = [param for param in command.params if isinstance(param.type, click.Path)]
        found += [(f"{prefix}{name} {param.name}", param) for param in paths]
    return found


PATH_PARAMS = _path_params(main)


def test_every_command_has_path_options_to_check() -> None:
    names = {name for name, _ in PATH_PARAMS}
    assert {"build out", "build corpus", "evaluate out", "evaluate cache_dir", "build prompts_dir"} <= names


@pytest.mark.parametrize(("name", "param"), PATH_PARAMS, ids=[name for name, _ in PATH_PARAMS])
def test_every_path_option_reads_tilde_as_the_home_directory(home: Path, name: str, param: click.Parameter) -> None:
    assert isinstance(param.type, click.Path)
    target = "folder" if param.type.dir_okay else "file"
    converted = param.type.convert(f"~/{target}", param, click.Context(click.Command(name)))
    assert Path(converted) == home / target


def test_a_build_to_a_home_path_from_the_config_file_writes_there(home: Path, llm: Any, corpus: Path) -> None:
    (home / "docs").symlink_to(corpus)
    config = home / "q.toml"
    config.write_text(
        '[corpus]\npath = "~/docs"\n[build]\nout = "~/run"\n'
        f'[generator]\nspec = "openai:stand-in"\nbase_url = "{llm.base_url}"\n',
        encoding="utf-8",
    )
    result = CliRunner().invoke(
        main, ["build", "--config", str(config), "-n", "10", *SMALL, "-q"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    assert (home / "run" / "dataset").is_dir() and (home / "run" / "summary.json").is_file()
    assert not Path("~").exists()


def test_the_evaluation_cache_dir_from_the_config_file_is_under_home(home: Path) -> None:
    config = home / "q.toml"
    config.write_text('[evaluate]\ncache_dir = "~/.cache/qagen"\n', encoding="utf-8")
    command = evaluate_command
    with command.make_context("evaluate", ["--config", str(config), "run", "--out", "eval"]) as ctx:
        assert ctx.params["cache_dir"] == home / ".cache" / "qagen"


def test_python_settings_and_run_directories_expand_tilde(home: Path) -> None:
    assert RunDir(Path("~/run")).root == home / "run"
    assert CorpusSettings(path="~/docs").path == str(home / "docs")
    settings = BuildConfig(corpus=CorpusSettings(path="docs"), prompts_dir="~/prompts")
    assert settings.prompts_dir == str(home / "prompts")


def test_a_python_evaluation_into_a_home_path_writes_there(home: Path) -> None:
    from qagen.evaluate.api import evaluate
    from qagen.evaluate.config import EvalConfig
    from qagen.evaluate.systems.answers_file import AnswersFileSystem

    testset = home / "set.jsonl"
    testset.write_text(json.dumps({"question": "What is x?", "answer": "X."}) + "\n", encoding="utf-8")
    answers = home / "answers.jsonl"
    answers.write_text(json.dumps({"question": "What is x?", "answer": "X."}) + "\n", encoding="utf-8")
    summary = evaluate(
        EvalConfig(testset=str(testset), metrics=["text"]), AnswersFileSystem(answers), "~/eval", progress=False
    )
    assert summary.answered == 1
    assert (home / "eval" / "summary.json").is_file() and not Path("~").exists()


def test_the_python_baseline_reads_a_home_corpus(home: Path, fake_llm: Any, corpus: Path) -> None:
    from qagen.evaluate.api import evaluate
    from qagen.evaluate.config import EvalConfig
    from qagen.evaluate.systems.bundled import rag_baseline

    (home / "docs").symlink_to(corpus)
    testset = home / "set.jsonl"
    testset.write_text(json.dumps({"question": "What is x?", "answer": "X."}) + "\n", encoding="utf-8")
    baseline = rag_baseline("~/docs", chunk_size=400, progress=False, index_dir=home / "indexes")
    summary = evaluate(
        EvalConfig(testset=testset, metrics=["retrieval"], reader=fake_llm.client()),
        baseline,
        home / "eval",
        progress=False,
    )
    assert summary.answered == 1
