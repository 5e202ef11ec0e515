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
    model = ["--generator-model", "openai:stand-in", "--base-url", llm.base_url]
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
    model = ["--generator-model", "openai:stand-in", "--base-url", llm.base_url]
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


# --- one option name per role: --generator-model, --critic-model, --reader-model, --judge-model ----------
ROLE_OPTIONS = {
    "build": ("--generator-model", "--critic-model"),
    "stage generate": ("--generator-model",),
    "stage critique": ("--critic-model",),
    "batch export": ("--generator-model", "--critic-model"),
    "evaluate": ("--reader-model", "--judge-model"),
}


def _command(typed: str) -> click.Command:
    command: click.Command = main
    for name in typed.split():
        assert isinstance(command, click.Group)
        command = command.commands[name]
    return command


def _shown_flags(command: click.Command) -> set[str]:
    return {
        opt for param in command.params if isinstance(param, click.Option) and not param.hidden for opt in param.opts
    }


@pytest.mark.parametrize("typed", sorted(ROLE_OPTIONS))
def test_each_role_has_one_option_name_and_help_shows_it(typed: str) -> None:
    command = _command(typed)
    shown = _shown_flags(command)
    assert set(ROLE_OPTIONS[typed]) <= shown and "--model" not in shown
    assert all(flag in _invoke(*typed.split(), "--help").output for flag in ROLE_OPTIONS[typed])
    # No command names a role's model by another name.
    assert {flag for flag in shown if flag.endswith("model")} <= {
        "--generator-model", "--critic-model", "--reader-model", "--judge-model"
    }  # fmt: skip


def _model_of(typed: str, *args: str) -> tuple[str, str, str]:
    """The generator's (or for `evaluate` the reader's) model `typed ARGS` resolves, how it was given, and
    what the command said on stderr while its options were read."""
    runner = CliRunner()
    with runner.isolation() as (_, _, err):
        with _command(typed).make_context(typed, list(args)) as ctx:
            param = "reader_model" if typed == "evaluate" else "generator_model"
            value, source = ctx.params[param], ctx.get_parameter_source(param)
        said = err.getvalue().decode()
    assert source is not None
    return value, source.name, said


@pytest.mark.parametrize(
    ("typed", "args", "new"),
    [
        ("build", ["docs", "--out", "run"], "--generator-model"),
        ("stage generate", ["run"], "--generator-model"),
        ("batch export", ["run", "--out", "requests.jsonl"], "--generator-model"),
        ("evaluate", ["run", "--out", "eval"], "--reader-model"),
    ],
)
def test_the_old_model_flag_sets_the_role_it_meant_and_says_its_new_name(
    typed: str, args: list[str], new: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "run").mkdir()  # the run directory a stage command checks exists
    said = f"note: --model is deprecated; use {new} instead (it does the same).\n"
    assert _model_of(typed, *args, "--model", "openai:old") == ("openai:old", "COMMANDLINE", said)
    assert _model_of(typed, *args, new, "openai:new") == ("openai:new", "COMMANDLINE", "")
    value, source, _ = _model_of(typed, *args)
    assert source == "DEFAULT" and value == "openai:gpt-4o-mini"
    # A flag wins over the config file, the old name too.
    section = "reader" if typed == "evaluate" else "generator"
    config = tmp_path / "q.toml"
    config.write_text(f'[{section}]\nspec = "openai:file"\n', encoding="utf-8")
    assert _model_of(typed, *args, "--config", str(config))[:2] == ("openai:file", "DEFAULT_MAP")
    assert _model_of(typed, *args, "--config", str(config), "--model", "openai:old")[:2] == (
        "openai:old",
        "COMMANDLINE",
    )
    assert _model_of(typed, *args, "--model", "openai:old", "--config", str(config))[:2] == (
        "openai:old",
        "COMMANDLINE",
    )
    # Both given: the new name wins, and the old one is still said to be deprecated.
    assert _model_of(typed, *args, "--model", "openai:old", new, "openai:new")[:3] == (
        "openai:new",
        "COMMANDLINE",
        said,
    )


def test_a_build_given_the_old_flag_records_the_model_it_names(llm: Any, corpus: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    built = _invoke(
        "build", corpus, "--out", run, "--model", "openai:stand-in", "--base-url", llm.base_url, "-n", 4, *SMALL
    )
    assert built.exit_code == 0, built.output
    assert built.stderr.count("--model is deprecated; use --generator-model") == 1
    stored = json.loads((run / "run.json").read_text())
    assert "openai:stand-in" in json.dumps(stored) and "gpt-4o-mini" not in json.dumps(stored["config"]["generator"])


def test_a_model_a_server_does_not_know_is_named_by_the_role_the_command_gives_it() -> None:
    from qagen.cli.flags import in_cli_terms

    for typed, flag in (("build", "--generator-model"), ("evaluate", "--reader-model")):
        with click.Context(_command(typed)):
            assert in_cli_terms("unknown (404); check `model`.", ("model",)) == f"unknown (404); check {flag}."
