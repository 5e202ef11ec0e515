"""Library settings as the CLI names them: `concurrency` is `--concurrency` to whoever typed it.

Library messages name a setting as a Python user knows it, in backticks, and list it in
`QagenError.settings` (see `qagen.errors`). A CLI user set it with a flag, so the CLI shows the flag.
The flags come from the click options themselves, so a new or renamed option needs no entry here;
only settings whose library name differs from the click parameter's name are listed by hand.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator

import click

# Library settings set by a click parameter of another name.
_RENAMED: dict[str, str] = {
    "k": "--k",  # the click parameter is `k_values`: the CLI takes a list (a grid) of k
    "retriever": "--baseline",  # `rag_baseline(retriever=...)`: the CLI names the baseline by its retriever
    "license": "--license",  # `license_id`, so as not to shadow the built-in
    "judge": "--judge-model",  # `evaluate(judge=ModelSettings(...))`
    "reader": "--model",  # `evaluate(reader=...)`: the CLI's --model is the baseline's reader
    "generator": "--model",  # `BuildConfig.generator`
    "critic": "--critic-model",  # `BuildConfig.critic`
    "min_scores": "--min-critic",  # `BuildConfig.min_scores`: any critic's threshold, as NAME=SCORE
}
# A setting given one value that a flag stands for as a whole (a flag that turns a setting off).
_VALUED: dict[str, str] = {
    "private=False": "--public",
    "allow_calls=False": "--no-calls",  # qagen review: the critics the early stop skipped are not asked
}


def _options(command: click.Command) -> Iterator[click.Option]:
    for parameter in command.params:
        if isinstance(parameter, click.Option):
            yield parameter
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            yield from _options(sub)


def _long_flag(option: click.Option) -> str | None:
    return next((opt for opt in option.opts if opt.startswith("--")), None)


@functools.cache
def setting_flags() -> dict[str, str]:
    """Every setting with a flag, as setting name -> flag, e.g. {"base_url": "--base-url", ...}.

    Raises AssertionError when two options of one name have different flags: a setting would then
    be shown as the wrong one of them (a bug in the CLI, never the user's input).
    """
    from qagen.cli.app import main  # here, not at the top: the commands import this module

    flags: dict[str, str] = {}
    for option in _options(main):
        flag = _long_flag(option)
        if option.name is None or flag is None:
            continue
        if flags.setdefault(option.name, flag) != flag:
            raise AssertionError(f"option {option.name!r} is both {flags[option.name]} and {flag}")
        if option.is_bool_flag and not option.secondary_opts:
            flags[f"{option.name}=True"] = flag  # "`force=True`" is "--force"
    for setting, flag in {**_RENAMED, **_VALUED}.items():
        flags[setting] = flag
    return flags


def in_cli_terms(message: str, settings: Iterable[str]) -> str:
    """`message` with each backticked setting of `settings` shown as its flag.

    "`concurrency`" becomes "--concurrency", "`max_tokens=8,000`" "--max-tokens 8,000", and
    "`force=True`" "--force". A setting with no flag keeps its name, backticks included.
    """
    flags = setting_flags()

    def replace(match: re.Match[str]) -> str:
        setting, value = match.group(1), match.group(2)
        if value is not None and f"{setting}={value}" in flags:
            return flags[f"{setting}={value}"]
        if setting not in flags:
            return match.group(0)
        return flags[setting] if value is None else f"{flags[setting]} {value}"

    for setting in settings:
        message = re.sub(rf"`({re.escape(setting)})(?:=([^`]*))?`", replace, message)
    return message
