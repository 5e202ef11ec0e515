"""`--config qagen.toml`: a file gives the same run as its flags, flags win over it, its mistakes are
named, `qagen init` writes every key, and `--help` lists only the options set most often."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result
from datasets import load_from_disk

from qagen.cli.app import main
from qagen.cli.build_settings import config_from_options
from qagen.cli.config_file import (
    _toml,
    precedence,
    read_config,
    reference_markdown,
    server_notes,
    starter_file,
    tomllib,
)
from qagen.cli.config_keys import COMMAND_OPTIONS, NOT_KEYS, Command, ConfigKey, config_keys
from qagen.cli.evaluate import _system_options
from qagen.cli.evaluate import evaluate as evaluate_command
from qagen.cli.options import batch_from_options
from qagen.config import BuildConfig

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "qagen.toml"
DOCS = ROOT / "docs" / "configuration.md"
# examples/qagen.toml as flags (the first build of docs/index.md).
EXAMPLE_FLAGS = ["examples/corpus", "--out", "run", "--chunk-size", "400", "--n-generations", "20"]
# The options of `build` that are no setting of the run (`build` itself takes them out).
NOT_BUILD_SETTINGS = ("out", "quiet", "push_repo", "public", "dry_run", "update_corpus")


def _invoke(*args: object) -> Result:
    return CliRunner().invoke(main, [str(arg) for arg in args], catch_exceptions=False)


def _resolved(*args: object) -> BuildConfig:
    """The settings `qagen build ARGS` would run with, resolved as the command resolves them."""
    command = main.commands["build"]
    with command.make_context("build", [str(arg) for arg in args]) as ctx:
        options = {name: value for name, value in ctx.params.items() if name not in NOT_BUILD_SETTINGS}
        batch_from_options(options)
        return config_from_options(ctx, options, stored=None)


def _evaluate_params(*args: object) -> dict[str, Any]:
    command = evaluate_command
    with command.make_context("evaluate", [str(arg) for arg in args]) as ctx:
        return dict(ctx.params)


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture()
def in_example_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory holding the repository's examples/, as a newcomer's checkout does."""
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    return tmp_path


# --- must-show: the file's run is its flags' run ----------------------------------------------------
def test_example_config_gives_the_same_run_as_the_equivalent_flags(
    llm: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    runs: dict[str, Path] = {}
    for name, args in {"file": ["--config", "examples/qagen.toml"], "flags": EXAMPLE_FLAGS}.items():
        work = tmp_path / name
        shutil.copytree(ROOT / "examples", work / "examples")
        monkeypatch.chdir(work)
        result = _invoke("build", *args, "-q")
        assert result.exit_code == 0, result.output
        runs[name] = work / "run"
    by_file, by_flags = (json.loads((runs[name] / "run.json").read_text()) for name in ("file", "flags"))
    assert by_file["fingerprint"] == by_flags["fingerprint"]
    assert by_file["config"] == by_flags["config"]  # every resolved setting, recorded alike
    # ... and that is the file's run, not two runs at the defaults.
    assert by_file["config"]["chunking"]["chunk_size"] == 400 and by_file["config"]["n_generations"] == 20
    assert by_file["config"]["corpus"]["path"] == "examples/corpus"
    assert list(load_from_disk(str(runs["file"] / "candidates"))) == list(
        load_from_disk(str(runs["flags"] / "candidates"))
    )
    assert max(llm.requests_by_body().values()) == 2  # each call once per run


def test_example_config_is_valid_for_build_and_evaluate(in_example_checkout: Path) -> None:
    assert read_config(EXAMPLE, "build")["chunk_size"] == 400
    assert read_config(EXAMPLE, "evaluate")["baseline"] == "bm25"
    params = _evaluate_params("--config", "examples/qagen.toml")
    assert (params["dataset"], params["out"], params["corpus"]) == ("run", Path("eval"), Path("examples/corpus"))


# --- flags win over the file, the file over the defaults ---------------------------------------------
def test_a_flag_wins_over_the_file_and_the_file_over_the_defaults(tmp_path: Path) -> None:
    config = _write(
        tmp_path / "q.toml",
        """
[corpus]
path = "docs"
[chunking]
chunk_size = 400
chunk_overlap = 40
[generator]
spec = "openai:local"
base_url = "http://127.0.0.1:9/v1"
temperature = 0.3
[critic]
spec = "openai:critic"
[filter]
min_score = 3
[filter.min_scores]
groundedness = 5
[calls]
timeout = 30
max_retries = 2
""",
    )
    from_file = _resolved("--config", config, "--out", tmp_path / "run")
    assert from_file.corpus.path == "docs"
    assert (from_file.chunking.chunk_size, from_file.chunking.chunk_overlap) == (400, 40)
    assert from_file.generator.spec == "openai:local" and from_file.generator.temperature == 0.3
    # The critics' keys not set are the generator's, as with flags.
    assert from_file.critic.spec == "openai:critic" and from_file.critic.base_url == "http://127.0.0.1:9/v1"
    assert from_file.critic.temperature == 0.3 and from_file.critic.timeout == 30.0
    every = ("groundedness", "relevance", "standalone", "clear", "reader", "supported")
    assert from_file.thresholds() == {name: 5 if name == "groundedness" else 3 for name in every}
    assert from_file.generator.max_retries == 2 and from_file.seed == 42  # a key not in the file: the default

    flagged = _resolved(
        "--config", config, "other", "--out", tmp_path / "run", "--chunk-size", "900", "--critic-model", "openai:x"
    )
    assert flagged.corpus.path == "other" and flagged.chunking.chunk_size == 900
    assert flagged.chunking.chunk_overlap == 40 and flagged.critic.spec == "openai:x"


def test_the_file_wins_over_an_environment_variable_and_the_command_says_which_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _write(tmp_path / "q.toml", '[generator]\nbase_url = "http://127.0.0.1:9/v1"\n')
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8/v1")
    assert _resolved("--config", config, "docs", "--out", "run").generator.base_url == "http://127.0.0.1:9/v1"
    assert _server_notes("--config", config, "docs", "--out", "run") == [
        f"generator's server: http://127.0.0.1:9/v1 (from `generator.base_url` in {config}; "
        "OPENAI_BASE_URL=http://127.0.0.1:8/v1 is not used)"
    ]
    assert _server_notes("docs", "--out", "run", "--set", "generator.base_url=http://127.0.0.1:7/v1") == [
        "generator's server: http://127.0.0.1:7/v1 (from --set generator.base_url; "
        "OPENAI_BASE_URL=http://127.0.0.1:8/v1 is not used)"
    ]
    flagged = ("--config", config, "docs", "--out", "run", "--base-url", "http://127.0.0.1:6/v1")
    assert _resolved(*flagged).generator.base_url == "http://127.0.0.1:6/v1"  # a flag wins over both
    # Only the variable: it is used, and said.
    assert _resolved("docs", "--out", "run").generator.base_url == "http://127.0.0.1:8/v1"
    assert _server_notes("docs", "--out", "run") == ["generator's server: http://127.0.0.1:8/v1 (from OPENAI_BASE_URL)"]
    monkeypatch.delenv("OPENAI_BASE_URL")
    assert _server_notes("--config", config, "docs", "--out", "run") == []  # nothing ambiguous, nothing said
    # The order is written where users read it.
    assert precedence() in " ".join(line.lstrip("# ") for line in starter_file().splitlines())
    assert "then the config file, then an environment variable (OPENAI_BASE_URL" in " ".join(
        DOCS.read_text(encoding="utf-8").split()
    )


def test_build_says_once_which_server_it_calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    corpus = tmp_path / "docs"
    corpus.mkdir()
    (corpus / "a.txt").write_text("Tides are driven by the moon. " * 20, encoding="utf-8")
    config = _write(tmp_path / "q.toml", '[generator]\nbase_url = "http://127.0.0.1:9/v1"\n')
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8/v1")
    result = _invoke("build", corpus, "--out", tmp_path / "run", "--config", config, "--dry-run", "-q")
    assert result.exit_code == 0, result.output
    assert result.stderr.count("note: generator's server: http://127.0.0.1:9/v1 (from `generator.base_url`") == 1


def _server_notes(*args: object) -> list[str]:
    command = main.commands["build"]
    with command.make_context("build", [str(arg) for arg in args]) as ctx:
        return server_notes(ctx, "build")


def test_evaluate_reads_its_tables_and_its_flags_win(tmp_path: Path) -> None:
    config = _write(
        tmp_path / "q.toml",
        """
[evaluate]
dataset = "run"
out = "eval"
baseline = ["bm25", "dense"]
k = [3, 7]
metrics = "correctness"
[reader]
spec = "openai:reader"
[judge]
spec = "openai:judge"
max_output_tokens = 512
[chunking]
chunk_size = 400
""",
    )
    params = _evaluate_params("--config", config)
    assert (params["baseline"], params["k_values"], params["metrics"]) == ("bm25,dense", "3,7", "correctness")
    assert (params["reader_model"], params["judge_model"], params["judge_max_output_tokens"]) == (
        "openai:reader",
        "openai:judge",
        512,
    )
    assert params["chunk_size"] == "2000"  # the build's chunking is not the baseline's
    flagged = _evaluate_params("--config", config, "other-run", "--k", "5", "--reader-model", "openai:m")
    assert (flagged["dataset"], flagged["k_values"], flagged["reader_model"]) == ("other-run", "5", "openai:m")


# --- mistakes in the file: one sentence naming the file and the key ---------------------------------
@pytest.mark.parametrize(
    ("text", "named", "suggested"),
    [
        ("[chunking]\nchunk_sise = 400\n", "`chunking.chunk_sise`", "`chunking.chunk_size`"),
        ("chunk_size = 400\n", "`chunk_size`", "`chunking.chunk_size`"),
        ('[generater]\nspec = "openai:x"\n', "`generater.spec`", "`generator.spec`"),
        ("[filter]\nmin_scor = 3\n", "`filter.min_scor`", "`filter.min_score`"),
    ],
)
def test_an_unknown_key_is_named_with_the_closest_known_one(
    tmp_path: Path, text: str, named: str, suggested: str
) -> None:
    config = _write(tmp_path / "q.toml", text)
    result = _invoke("build", "docs", "--out", tmp_path / "run", "--config", config)
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert f"{config}: unknown key {named}; did you mean {suggested}?" in " ".join(result.output.split())
    assert not (tmp_path / "run").exists()


def test_min_scores_takes_any_critic_and_the_library_names_the_unknown_ones(tmp_path: Path) -> None:
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    (prompts / "critique_specificity.txt").write_text(
        "Rate {question}.\nAnswer:::\nEvaluation: (why)\nTotal rating: (1-5)\n", encoding="utf-8"
    )
    config = _write(
        tmp_path / "q.toml",
        f'[build]\ncritics = ["specificity"]\nprompts_dir = "{prompts}"\n'
        "[filter.min_scores]\ngroundedness = 5\nspecificity = 3\n",
    )
    resolved = _resolved("--config", config, "docs", "--out", "run")
    assert resolved.critics == ("specificity",)
    assert resolved.min_scores == {"groundedness": 5, "specificity": 3}
    # The same as its flags.
    flags = [
        "--critic",
        "specificity",
        "--prompts",
        prompts,
        "--min-groundedness",
        "5",
        "--min-critic",
        "specificity=3",
    ]
    assert _resolved("docs", "--out", "run", *flags) == resolved

    typo = _write(tmp_path / "typo.toml", "[filter.min_scores]\ngroundednes = 5\n")
    result = _invoke("build", "docs", "--out", tmp_path / "run", "--config", typo)
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert (
        f"`filter.min_scores` in {typo} names groundednes, which is no critic of this build; the critics are "
        "groundedness" in " ".join(result.output.split())
    )


def test_a_key_with_nothing_close_points_to_the_list_of_keys(tmp_path: Path) -> None:
    config = _write(tmp_path / "q.toml", "[zzz]\nqqq = 1\n")
    result = _invoke("evaluate", "run", "--out", "eval", "--config", config)
    assert result.exit_code == 2 and "unknown key `zzz.qqq` (every key is in `qagen init`" in result.output


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[chunking]\nchunk_size = "400"\n', "`chunking.chunk_size` is not valid: input should be a valid integer."),
        ("[filter]\nmin_score = 9\n", "`filter.min_score` is not valid: 9 is not in the range 1<=x<=5."),
        ('[chunking]\nlength_unit = "words"\n', "`chunking.length_unit` is not valid: input should be 'characters' or"),
        ("[calls]\nconcurrency = 0\n", "`calls.concurrency` is not valid: 0 is not in the range x>=1."),
        ('[generator]\napi_key_env = "sk-abc 123"\n', "`generator.api_key_env` is not valid: give the name of the"),
        ("[chunking\n", "is not valid TOML"),
    ],
)
def test_a_wrong_value_is_named_by_file_and_key(tmp_path: Path, text: str, message: str) -> None:
    config = _write(tmp_path / "q.toml", text)
    result = _invoke("build", "docs", "--out", tmp_path / "run", "--config", config)
    assert result.exit_code in (1, 2) and "Traceback" not in result.output
    assert str(config) in " ".join(result.output.split()) and message in " ".join(result.output.split())
    assert "sk-abc" not in result.output


def test_a_key_of_the_other_command_is_type_checked_but_its_files_need_not_exist(tmp_path: Path) -> None:
    missing = _write(tmp_path / "q.toml", '[evaluate]\nanswers = "not-yet.jsonl"\n')
    assert "answers" not in read_config(missing, "build")
    wrong = _write(tmp_path / "w.toml", '[evaluate]\nk = ["three"]\n')
    result = _invoke("build", "docs", "--out", tmp_path / "run", "--config", wrong)
    assert result.exit_code == 2 and "`evaluate.k" in result.output


def test_a_value_from_the_file_or_a_set_is_named_by_its_key_not_a_flag(tmp_path: Path) -> None:
    corpus = _write(tmp_path / "doc.txt", "A sentence to chunk.\n")
    config = _write(tmp_path / "q.toml", "[chunking]\nchunk_overlap = 5000\n")
    by_file = CliRunner().invoke(
        main, ["stage", "chunk", str(corpus), "--out", str(tmp_path / "r1"), "--config", str(config)]
    )
    assert by_file.exit_code == 1
    assert by_file.stderr == (
        f"error: `chunking.chunk_overlap` in {config} must be at least 0 and smaller than --chunk-size (2000), "
        "got 5000.\n"
    )
    by_set = CliRunner().invoke(
        main, ["stage", "chunk", str(corpus), "--out", str(tmp_path / "r2"), "--set", "chunking.chunk_overlap=5000"]
    )
    assert by_set.stderr.startswith("error: `chunking.chunk_overlap` (--set) must be at least 0")
    evaluate_file = _write(tmp_path / "e.toml", "[evaluate]\nk = 0\n")
    answers = _write(tmp_path / "answers.jsonl", "")
    result = CliRunner().invoke(
        main,
        ["evaluate", "run", "--out", str(tmp_path / "e"), "--answers", str(answers), "--config", str(evaluate_file)],
    )
    assert (
        result.exit_code == 1
        and result.stderr == f"error: `evaluate.k` in {evaluate_file} must be at least 1, got '0'.\n"
    )
    flagged = CliRunner().invoke(
        main, ["evaluate", "run", "--out", str(tmp_path / "e"), "--answers", str(answers), "--k", "0"]
    )
    assert flagged.stderr == "error: --k must be at least 1, got '0'.\n"


def test_the_system_under_test_on_the_command_line_replaces_the_files(tmp_path: Path) -> None:
    config = _write(tmp_path / "q.toml", '[evaluate]\nbaseline = "bm25"\ncorpus = "."\n')
    command = evaluate_command
    with command.make_context("evaluate", ["--config", str(config), "run", "--out", "e", "--rag", "m:f"]) as ctx:
        options = dict(ctx.params)
        assert _system_options(ctx, options) == "rag_callable"
        assert options["rag_callable"] == "m:f" and options["baseline"] is None
    with command.make_context("evaluate", ["--config", str(config), "run", "--out", "e"]) as ctx:
        assert _system_options(ctx, dict(ctx.params)) == "baseline"  # the file's, when nothing else is given
    two = _write(tmp_path / "two.toml", '[evaluate]\nbaseline = "bm25"\nendpoint = "http://127.0.0.1:1/ask"\n')
    result = _invoke("evaluate", "run", "--out", tmp_path / "e", "--config", two)
    assert result.exit_code == 1
    assert (
        "exactly one of --answers, --rag, --endpoint or --baseline, not both "
        f"`evaluate.endpoint` in {two} and `evaluate.baseline` in {two}." in " ".join(result.output.split())
    )


def test_question_types_take_a_table_as_the_flag_takes_a_list(tmp_path: Path) -> None:
    table = _write(tmp_path / "q.toml", "[build]\nquestion_types = {factoid = 60, multi_hop = 40}\n")
    as_flag = _resolved("docs", "--out", "run", "--question-types", "factoid=60,multi_hop=40")
    assert _resolved("--config", table, "docs", "--out", "run") == as_flag
    assert as_flag.question_types == {"factoid": 60, "multi_hop": 40}
    assert _resolved("docs", "--out", "run", "--set", "build.question_types={factoid=60, multi_hop=40}") == as_flag
    # A bare name is the whole mix from a file or a --set as from the flag.
    bare = _write(tmp_path / "b.toml", '[build]\nquestion_types = "multi_hop"\n')
    assert _resolved("--config", bare, "docs", "--out", "run").question_types == {"multi_hop": 100}
    assert _resolved("docs", "--out", "run", "--set", "build.question_types=multi_hop").question_types == {
        "multi_hop": 100
    }
    wrong = _write(tmp_path / "w.toml", "[build]\nquestion_types = {factoid = 60, multi_hop = 30}\n")
    result = _invoke("build", "docs", "--out", tmp_path / "run", "--config", wrong)
    assert result.exit_code == 2 and "`build.question_types` is not valid" in " ".join(result.output.split())
    assert "did you mean" not in result.output


def test_a_path_with_a_tilde_is_the_home_directory_and_a_missing_one_says_how_it_was_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "docs").mkdir()
    found = _write(tmp_path / "q.toml", '[corpus]\npath = "~/docs"\n')
    assert _resolved("--config", found, "--out", "run").corpus.path == str(tmp_path / "docs")
    missing = _write(tmp_path / "m.toml", '[corpus]\npath = "~/nodocs"\n')
    result = _invoke("build", "--out", tmp_path / "run", "--config", missing)
    assert result.exit_code == 2
    assert (
        f"{missing}: `corpus.path` is not valid: {tmp_path / 'nodocs'} does not exist (`~` is read as your home "
        f"directory, {tmp_path})." in " ".join(result.output.split())
    )
    monkeypatch.chdir(tmp_path)
    relative = _write(tmp_path / "r.toml", '[corpus]\npath = "nodocs"\n')
    result = _invoke("build", "--out", tmp_path / "run", "--config", relative)
    assert "nodocs does not exist (a relative path is read from the directory qagen runs in" in " ".join(
        result.output.split()
    )
    assert not (tmp_path / "run").exists()


# --- qagen init ---------------------------------------------------------------------------------------
def test_init_writes_every_key_and_reads_back_as_the_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = _invoke("init")
    assert result.exit_code == 0, result.output
    written = (tmp_path / "qagen.toml").read_text()
    assert written == starter_file()
    tomllib.loads(written)
    for key in config_keys():  # every key is there, set to its default or shown commented out
        name = "<name>" if key.any_name else key.name
        # A key whose option reads an environment variable is shown, not set: set, it would override it.
        line = f"{name} = " if key.default() is not None and not _reads_a_variable(key) else f"# {name} = "
        section = written.split(f"\n[{key.section}]\n", 1)[1].split("\n[", 1)[0]
        assert line in section, key.dotted
    for command in ("build", "evaluate"):
        values = read_config(tmp_path / "qagen.toml", command)  # type: ignore[arg-type]
        defaults = {
            key.param: key.default() for key in config_keys() if command in key.commands and not _reads_a_variable(key)
        }
        expected = {param: value for param, value in defaults.items() if value is not None}
        as_options = {param: value for param, value in values.items()}
        assert {param: _listed(value) for param, value in as_options.items()} == {
            param: _listed(value) for param, value in expected.items()
        }
    # A build from the starter file is a build at the defaults.
    assert _resolved("--config", "qagen.toml", "docs", "--out", "run") == _resolved("docs", "--out", "run")
    assert _evaluate_params("--config", "qagen.toml", "run", "--out", "e") == _evaluate_params("run", "--out", "e")


def _reads_a_variable(key: ConfigKey) -> bool:
    return "envvar" in key.spec.attrs


def _listed(value: Any) -> Any:
    # A list key reaches its option as the comma list the flag takes.
    return ",".join(str(item) for item in value) if isinstance(value, list) else value


def test_init_refuses_to_overwrite_without_force(tmp_path: Path) -> None:
    target = _write(tmp_path / "mine.toml", "[chunking]\nchunk_size = 400\n")
    refused = _invoke("init", target)
    assert refused.exit_code == 1 and "exists; give --force" in refused.output
    assert target.read_text() == "[chunking]\nchunk_size = 400\n"
    assert _invoke("init", target, "--force").exit_code == 0
    assert target.read_text() == starter_file()


# --- --help lists the options set most often; every key is documented -------------------------------
def _commands(group: click.Group = main, prefix: str = "") -> dict[str, click.Command]:
    """Every command of `qagen`, by its name as typed (`batch export`)."""
    found: dict[str, click.Command] = {}
    context = click.Context(group)
    for name in group.list_commands(context):  # `qagen`'s commands are imported when named: not all in `commands`
        command = group.get_command(context, name)
        assert command is not None, name
        if isinstance(command, click.Group):
            found |= _commands(command, f"{prefix}{name} ")
        else:
            found[f"{prefix}{name}"] = command
    return found


COMMANDS = _commands()


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_help_lists_at_most_20_options(name: str) -> None:
    command = COMMANDS[name]
    listed = [param for param in command.get_params(click.Context(command)) if isinstance(param, click.Option)]
    shown = [param for param in listed if not param.hidden]
    assert len(shown) <= 20, [param.opts for param in shown]
    help_text = _invoke(*name.split(), "--help").output
    options_part = help_text.split("\nOptions:\n", 1)[1].split("\n\n", 1)[0]
    assert sum(1 for line in options_part.splitlines() if line.startswith(("  -", "  --"))) == len(shown)
    if name in COMMAND_OPTIONS:  # options left out of --help stay reachable, and --help says how
        assert {"--config", "--set"} <= {opt for param in shown for opt in param.opts}
        assert "--set SECTION.KEY=VALUE" in " ".join(help_text.split())


def test_build_and_evaluate_help_leave_the_rare_options_out() -> None:
    for name in ("build", "evaluate"):
        options = [param for param in COMMANDS[name].params if isinstance(param, click.Option)]
        shown = {opt for param in options if not param.hidden for opt in param.opts}
        assert "--config" in shown and not shown & {"--critic-base-url", "--judge-base-url", "--chunk-overlap"}


def test_hidden_options_keep_working_and_stay_listed_on_the_stage_commands(tmp_path: Path) -> None:
    config = _resolved("docs", "--out", "run", "--chunk-overlap", "10", "--critic-base-url", "http://127.0.0.1:9/v1")
    assert config.chunking.chunk_overlap == 10 and config.critic.base_url == "http://127.0.0.1:9/v1"
    assert "--chunk-overlap" in _invoke("stage", "chunk", "--help").output
    assert "--critic-base-url" in _invoke("stage", "critique", "--help").output


# The options of a stage command that are no setting of a key: its run directory, and where `qagen stage chunk`
# writes (`build.out` is the build's; a stage works on the run it is given).
_STAGE_OWN = {"run_dir", "out"}


@pytest.mark.parametrize("command", sorted(COMMAND_OPTIONS))
def test_every_setting_with_a_flag_has_a_key(command: Command) -> None:
    keyed = {key.param for key in config_keys() if command in key.commands}
    # `--config`, `--set` and an option's old name (`--model`) give their values to other options.
    params = {param.name for param in COMMANDS[command].params if param.expose_value}
    own = _STAGE_OWN if command not in ("build", "evaluate") else set()
    unkeyed = params - keyed - set(NOT_KEYS) - own
    assert not unkeyed, f"options of `qagen {command}` with no config key (add them to config_keys): {unkeyed}"
    assert not keyed - params
    # The command is decorated with the very options its keys are read from.
    assert {spec.param for spec in COMMAND_OPTIONS[command]} <= params


# --- --set SECTION.KEY=VALUE: every key, on every command that reads it -----------------------------------
@pytest.fixture()
def in_a_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder holding what the keys' examples name (a corpus, an answers file, a run, prompts)."""
    for folder in ("docs", "run", "my-prompts"):
        (tmp_path / folder).mkdir()
    (tmp_path / "answers.jsonl").write_text("", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _required(command: str, key: ConfigKey) -> list[str]:
    """What `command` needs besides the key (a run directory, an --out), unless the key gives it."""
    if command == "evaluate":
        return [*([] if key.param == "dataset" else ["run"]), *([] if key.param == "out" else ["--out", "e"])]
    if command == "stage chunk":
        return ["--out", "run2"]
    return [] if command == "build" else ["run"]


def _params(command: str, args: list[str]) -> click.Context:
    cmd = COMMANDS[command]
    return cmd.make_context(command, args)


_KEY_COMMANDS = [(key, command) for key in config_keys() for command in key.commands]


@pytest.mark.parametrize(("key", "command"), _KEY_COMMANDS, ids=[f"{k.dotted}-{c}" for k, c in _KEY_COMMANDS])
def test_set_reaches_every_key(in_a_project: Path, key: ConfigKey, command: str) -> None:
    value = key.example if key.example is not None else key.default()
    dotted = f"{key.section}.specificity" if key.any_name else key.dotted
    required = _required(command, key)
    with _params(command, [*required, "--set", f"{dotted}={_toml(value)}"]) as ctx:
        assert ctx.get_parameter_source(key.param) == click.core.ParameterSource.DEFAULT_MAP, key.dotted
        given = ctx.params[key.param]
    if key.example is not None and key.example != key.default() and key.required is None:
        with _params(command, required) as ctx:
            assert ctx.params[key.param] != given, f"--set {dotted} changed nothing"


def test_set_gives_the_run_its_flag_gives(tmp_path: Path) -> None:
    by_set = _resolved(
        "docs", "--out", "run", "--set", "chunking.chunk_overlap=100", "--set", "generator.spec=openai:local",
        "--set", "filter.cuts.clear=0.8", "--set", 'build.critics=["clear"]',
        "--set", "build.audience=1", "--set", "filter.check_evidence=false",
    )  # fmt: skip
    by_flags = _resolved(
        "docs", "--out", "run", "--chunk-overlap", "100", "--generator-model", "openai:local", "--cut",
        "clear=0.8",
        "--critic", "clear", "--audience", "1", "--no-evidence-check",
    )  # fmt: skip
    assert by_set == by_flags
    assert by_set.chunking.chunk_overlap == 100 and by_set.audience == "1" and not by_set.check_evidence


def test_set_wins_over_the_file_and_a_flag_over_both(tmp_path: Path) -> None:
    config = _write(tmp_path / "q.toml", "[chunking]\nchunk_size = 400\nchunk_overlap = 40\n")
    for order in (
        ["--config", config, "--set", "chunking.chunk_size=500"],
        ["--set", "chunking.chunk_size=500", "--config", config],
    ):
        resolved = _resolved("docs", "--out", "run", *order)
        assert (resolved.chunking.chunk_size, resolved.chunking.chunk_overlap) == (500, 40)
    flagged = _resolved("docs", "--out", "run", "--set", "chunking.chunk_size=500", "--chunk-size", "600")
    assert flagged.chunking.chunk_size == 600


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--set", "chunking.chunk_sise=4"],
         "--set chunking.chunk_sise=4: unknown key `chunking.chunk_sise`; did you mean `chunking.chunk_size`?"),
        (["--set", "chunking.chunk_size=abc"],
         "--set chunking.chunk_size=abc: `chunking.chunk_size` is not valid: input should be a valid integer."),
        (["--set", "filter.min_score=9"], "`filter.min_score` is not valid: 9 is not in the range 1<=x<=5."),
        (["--set", "evaluate.k=3"],
         "--set evaluate.k=3: `qagen build` has no setting `evaluate.k`; `qagen evaluate` reads it."),
        (["--set", "chunking.chunk_size"],
         "--set chunking.chunk_size: write SECTION.KEY=VALUE, such as chunking.chunk_size=400."),
    ],
)  # fmt: skip
def test_a_wrong_set_is_named(tmp_path: Path, args: list[str], message: str) -> None:
    result = _invoke("build", "docs", "--out", tmp_path / "run", *args)
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert message in " ".join(result.output.split())
    assert not (tmp_path / "run").exists()


def test_every_key_is_documented() -> None:
    names = [key.dotted for key in config_keys()]
    assert len(names) == len(set(names))
    for key in config_keys():
        assert len(key.describe()) > 15, f"{key.dotted} has no help"
        assert key.default() is not None or key.example is not None, f"{key.dotted}: give an example"
    page = DOCS.read_text(encoding="utf-8")
    assert page == reference_markdown(), "regenerate it: python -m qagen.cli.config_file > docs/configuration.md"
    for key in config_keys():
        name = "<name>" if key.any_name else key.name
        assert f"| `{name}` |" in page.split(f"## `[{key.section}]`", 1)[1]


def test_a_key_set_by_a_library_field_has_the_field_default() -> None:
    """The option's default is what the key documents; it must be the library's own default."""
    for key in config_keys():
        if key.setting is None or key.inherits:
            continue
        model, name = key.setting
        field = model.model_fields[name]
        if field.is_required():
            continue
        default = field.get_default(call_default_factory=True)
        written = list(default) if isinstance(default, tuple) else default  # a tuple is a list in TOML
        assert key.default() == (written or None if written == [] else written), key.dotted  # [] is not set


def test_a_build_from_the_starter_file_names_the_keys_left_to_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    written = _invoke("init")
    assert "set your documents (`path` in [corpus]) and the run directory (`out` in [build])" in written.output
    starter = (tmp_path / "qagen.toml").read_text()
    assert '# path = "docs"    # required: set it here (or `hf_dataset`, or CORPUS on the command line)' in starter
    assert '# out = "run"    # required: set it here (or --out on the command line)' in starter
    result = _invoke("build", "--config", "qagen.toml")
    assert result.exit_code == 2
    assert "Missing --out: give the run directory as --out DIR, or as `out` in the [build] table" in result.output
    (tmp_path / "qagen.toml").write_text(starter.replace('# out = "run"', 'out = "run"'), encoding="utf-8")
    result = _invoke("build", "--config", "qagen.toml")
    assert result.exit_code == 2
    assert "Missing the corpus: give CORPUS (a file or folder) or --hf-dataset, or set `path`" in result.output
    assert not (tmp_path / "run").exists()


def test_one_file_serves_a_build_and_its_evaluation(tmp_path: Path) -> None:
    """`qagen evaluate --config` reads the test set from the file's `build.out` and the baseline's corpus from
    its `corpus.path` when the file names no `evaluate.dataset` or `evaluate.corpus`; those win when given."""
    docs, other_docs = tmp_path / "docs", tmp_path / "other-docs"
    docs.mkdir()
    other_docs.mkdir()
    file = tmp_path / "qagen.toml"
    file.write_text(f'[build]\nout = "run"\n\n[corpus]\npath = "{docs}"\n\n[evaluate]\nbaseline = "bm25"\n')
    values = read_config(file, "evaluate")
    assert (values["dataset"], values["corpus"]) == ("run", str(docs))
    file.write_text(file.read_text() + f'dataset = "other-run"\ncorpus = "{other_docs}"\n')
    values = read_config(file, "evaluate")
    assert (values["dataset"], values["corpus"]) == ("other-run", str(other_docs))
    built = read_config(file, "build")  # the build reads its own keys alone
    assert "dataset" not in built and built["corpus"] == str(docs)


def test_evaluate_without_a_test_set_names_the_argument_and_the_key(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["evaluate", "--baseline", "bm25", "--out", str(tmp_path / "eval")])
    assert result.exit_code == 2
    assert "Missing DATASET" in result.output and "`evaluate.dataset`" in result.output
    assert "`build.out`" in result.output
