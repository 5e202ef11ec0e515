"""What `--help` shows agrees with what the commands accept and with the first pages a newcomer reads."""

from __future__ import annotations

import re
from pathlib import Path

import click
from click.testing import CliRunner

from qagen.cli.app import BUILD_SHOWN, main
from tests.test_readme import _blocks, _commands

ROOT = Path(__file__).resolve().parents[2]
# The pages of a first hour: what they run uses only the options `--help` lists. The other pages
# document the rest (each key of a config file is a flag too, listed or not).
FIRST_PAGES = (ROOT / "README.md", ROOT / "docs" / "index.md")
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*|-[a-z])\b")


def _shown(command: click.Command) -> set[str]:
    """The option strings `--help` lists for `command`."""
    shown = {"--help", "-h"}
    for param in command.params:
        if isinstance(param, click.Option) and not param.hidden:
            shown.update(param.opts)
            shown.update(param.secondary_opts)
    return shown


def test_build_help_lists_at_most_twenty_options() -> None:
    assert len(BUILD_SHOWN) <= 20


def _command(words: list[str]) -> tuple[str, click.Command] | None:
    """The command a `qagen ...` line runs, as typed (`stage chunk`), and the command itself."""
    command: click.Command = main
    typed: list[str] = []
    for word in words[1:]:
        if not isinstance(command, click.Group) or word not in command.commands:
            break
        command = command.commands[word]
        typed.append(word)
    return (" ".join(typed), command) if typed and not isinstance(command, click.Group) else None


def test_the_first_pages_run_only_options_their_help_lists() -> None:
    checked = 0
    for page in FIRST_PAGES:
        for block in _blocks(page, "bash"):
            for line in _commands(block):
                words = line.split()
                found = _command(words) if words[0] == "qagen" else None
                if found is None:
                    continue
                typed, command = found
                assert not command.hidden, f"{page.name}: `{line}` runs `qagen {typed}`, a deprecated name"
                unlisted = sorted(set(FLAG.findall(line)) - _shown(command))
                assert not unlisted, f"{page.name}: `{line}` uses {unlisted}, which `qagen {typed} --help` hides"
                checked += 1
    assert checked >= 5  # the README's builds and evaluations were found


def test_the_chunk_size_help_states_the_bound_it_enforces(tmp_path: Path) -> None:
    help_text = " ".join(CliRunner().invoke(main, ["build", "--help"]).output.split())
    shown = re.search(r"--chunk-size INTEGER (.*?\])", help_text)  # its text, up to its default and range
    assert shown is not None, help_text
    assert "at least 50 characters or 12 tokens" in shown.group(1)
    assert "x>=" not in shown.group(1)  # no second bound that disagrees with the text
    (tmp_path / "doc.txt").write_text("The lighthouse was built in 1871 on the northern cape.", encoding="utf-8")
    for size, unit in (("0", "characters"), ("49", "characters"), ("11", "tokens")):
        result = CliRunner().invoke(
            main, ["build", str(tmp_path / "doc.txt"), "--out", str(tmp_path / "run"), "--chunk-size", size,
                   "--length-unit", unit, "--dry-run"],
        )  # fmt: skip
        assert result.exit_code == 1, result.output
        smallest = "50 characters" if unit == "characters" else "12 tokens"
        assert f"--chunk-size {size} is too small" in result.output
        assert f"smallest accepted is {smallest}" in result.output
