"""The library names settings as Python users know them; only the CLI shows them as its flags."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import qagen
from qagen.cli.app import main
from qagen.cli.flags import in_cli_terms, setting_flags
from qagen.corpus.chunk import make_splitter
from qagen.errors import ConfigError, QagenError
from qagen.generation.estimate import Estimate
from qagen.llm.cost import Budget

PACKAGE = Path(qagen.__file__).resolve().parent
# Where flags belong: the command line itself, and the stand-ins tests start as commands.
CLI_PARTS = ("cli", "testing")
# Being rewritten by someone else right now; their messages are fixed there. Take a file off this
# list once it speaks in settings, so the rule holds for it again.
NOT_YET: tuple[str, ...] = ()
# Text that is about the command line on purpose: the dataset card shows readers the shell
# command that evaluates a RAG system on the pushed test set.
CLI_TEXT = {("publish/card.py", "_usage")}
# The options of `build` that are no setting of the run (`build` itself takes them out).
NOT_BUILD_SETTINGS = (
    "out",
    "quiet",
    "push_repo",
    "public",
    "dry_run",
    "update_corpus",
    "batch",
    "no_wait",
    "batch_poll",
)
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def _library_files() -> Iterator[tuple[str, Path]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        if name.split("/")[0] in CLI_PARTS or any(name.startswith(prefix) for prefix in NOT_YET):
            continue
        yield name, path


def _strings(tree: ast.AST, function: str = "") -> Iterator[tuple[str, int, str]]:
    """(enclosing function, line, text) of every string literal, f-string parts and docstrings included."""
    for node in ast.iter_child_nodes(tree):
        inner = node.name if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) else function
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield function, node.lineno, node.value
        yield from _strings(node, inner)


def _text(node: ast.expr) -> str:
    """The literal parts of a message expression (its `{...}` fields left out)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(_text(value) for value in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _text(node.left) + _text(node.right)
    return ""


def _settings_calls(tree: ast.AST) -> Iterator[tuple[int, str, ast.expr]]:
    """(line, message text, settings) of every error raised with `settings=` (a `...Error(...)` call)."""
    for node in ast.walk(tree):
        name = node.func.id if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) else ""
        if isinstance(node, ast.Call) and name.endswith("Error"):
            for keyword in node.keywords:
                if keyword.arg == "settings":
                    message = _text(node.args[0]) if node.args else ""
                    yield node.lineno, message, keyword.value


def test_library_strings_name_no_flag() -> None:
    found = [
        f"qagen/{name}:{line}: {flag.group()} in ...{text[max(0, flag.start() - 40) : flag.end() + 40]!r}..."
        for name, path in _library_files()
        for function, line, text in _strings(ast.parse(path.read_text(encoding="utf-8")))
        if (name, function) not in CLI_TEXT
        for flag in FLAG.finditer(text)
    ]
    assert not found, "name the setting (`concurrency`, settings=(...)), not the flag:\n" + "\n".join(found)


def test_every_named_setting_is_in_its_message_and_has_a_flag() -> None:
    flags = setting_flags()
    calls = 0
    for name, path in _library_files():
        for line, message, settings in _settings_calls(ast.parse(path.read_text(encoding="utf-8"))):
            calls += 1
            where = f"qagen/{name}:{line}"
            assert isinstance(settings, ast.Tuple), f"{where}: settings must be a literal tuple"
            for element in settings.elts:
                assert isinstance(element, ast.Constant) and isinstance(element.value, str), where
                setting = element.value
                # Backticked, so the CLI rewrites exactly the setting and not a word that looks like it.
                mentions = re.findall(rf"`({re.escape(setting)}(?:=[^`]*)?)`", message)
                assert mentions, f"{where}: `{setting}` is not in the message"
                for mention in mentions:
                    known = mention in flags or mention.split("=")[0] in flags
                    assert known, f"{where}: the CLI has no flag for `{mention}`"
    assert calls >= 10  # the scan does see the messages (a broken walk would pass vacuously)
    for setting in (*Estimate.settings, *Budget.settings):
        assert setting in flags


def test_a_library_error_names_the_setting_in_python_and_the_flag_in_the_cli(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        make_splitter(chunk_size=100, chunk_overlap=200)
    assert str(caught.value) == "`chunk_overlap` must be at least 0 and smaller than `chunk_size` (100), got 200."
    assert caught.value.settings == ("chunk_overlap", "chunk_size")

    corpus = tmp_path / "doc.txt"
    corpus.write_text("A sentence to chunk.\n", encoding="utf-8")
    args = [
        "stage",
        "chunk",
        str(corpus),
        "--out",
        str(tmp_path / "run"),
        "--chunk-size",
        "100",
        "--chunk-overlap",
        "200",
    ]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1
    assert result.stderr == "error: --chunk-overlap must be at least 0 and smaller than --chunk-size (100), got 200.\n"


def test_a_setting_given_a_value_is_shown_as_the_flag_and_value(tmp_path: Path) -> None:
    corpus = tmp_path / "doc.txt"
    corpus.write_text("A sentence.\n", encoding="utf-8")
    result = CliRunner().invoke(
        main, ["stage", "chunk", str(corpus), "--hf-dataset", "x", "--out", str(tmp_path / "run")]
    )
    assert result.exit_code == 1
    assert result.stderr == "error: Give exactly one corpus: a path, or --hf-dataset NAME_OR_PATH.\n"


def test_in_cli_terms() -> None:
    assert in_cli_terms("`concurrency` must be at least 1.", ("concurrency",)) == "--concurrency must be at least 1."
    # Only the settings named are rewritten: other backticked text (a command, a file) stays.
    assert in_cli_terms("check `base_url` or `hf auth login`", ("base_url",)) == "check --base-url or `hf auth login`"
    assert in_cli_terms("check `base_url`", ()) == "check `base_url`"
    # Settings named differently in the CLI, flags that stand for a value, and values.
    assert in_cli_terms("`k` and `judge`", ("k", "judge")) == "--k and --judge-model"
    assert in_cli_terms("pass `force=True`", ("force",)) == "pass --force"
    assert in_cli_terms("pass `private=False`", ("private",)) == "pass --public"
    assert in_cli_terms("reaching `max_tokens=8,000`", ("max_tokens",)) == "reaching --max-tokens 8,000"
    # A setting the CLI has no flag for keeps its name rather than turning into a wrong flag.
    assert in_cli_terms("`index_dir` is gone", ("index_dir",)) == "`index_dir` is gone"


def test_qagen_errors_carry_their_settings() -> None:
    error = QagenError("`rpm` must be positive, got 0.", settings=("rpm",))
    assert str(error) == "`rpm` must be positive, got 0." and error.settings == ("rpm",)
    assert QagenError("no setting here").settings == ()


def test_flags_come_from_the_config_keys_and_each_is_an_option_of_a_command() -> None:
    flags = setting_flags()
    assert flags["concurrency"] == "--concurrency" and flags["base_url"] == "--base-url"
    assert flags["max_failure_rate"] == "--max-failure-rate" and flags["n_generations"] == "--n-generations"
    assert flags["embeddings"] == "--embeddings" and flags["metrics"] == "--metrics"
    assert flags["k"] == "--k" and flags["judge"] == "--judge-model" and flags["license"] == "--license"
    # Read without the command tree, so each must be checked against it: a renamed option would
    # otherwise leave a message naming a flag no command takes.
    taken = {opt for command in _all_commands(main) for param in command.params for opt in param.opts}
    assert not set(flags.values()) - taken


def _all_commands(command: click.Command) -> Iterator[click.Command]:
    yield command
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            yield from _all_commands(sub)


def test_the_critic_has_its_own_output_cap(tmp_path: Path) -> None:
    from qagen.cli.build_settings import config_from_options

    args = ["docs", "--out", str(tmp_path / "run"), "--max-output-tokens", "300", "--critic-max-output-tokens", "64"]
    with main.commands["build"].make_context("build", args) as ctx:
        options = {name: value for name, value in ctx.params.items() if name not in NOT_BUILD_SETTINGS}
        config = config_from_options(ctx, options, stored=None)
    assert (config.generator.max_output_tokens, config.critic.max_output_tokens) == (300, 64)
