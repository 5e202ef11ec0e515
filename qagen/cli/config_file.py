"""`--config qagen.toml`: a run's settings in a file; the starter file `qagen init` writes; its documentation.

The file's keys (`qagen.cli.config_keys`) become the values of their options, as click's
`default_map`: a flag on the command line (or its environment variable) wins over the file, and
the file over the defaults. From there a key is its flag: the same checks, and the same place in
the settings a run records. Paths in the file are read from the directory qagen runs in, as flags
are (a value such as `evaluate.dataset` may be a Hub id, which no folder could be relative to).
"""

from __future__ import annotations

import difflib
import functools
import json
import os
import sys
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import click
from click.core import ParameterSource
from pydantic import TypeAdapter, ValidationError

from qagen.cli.config_keys import (
    ANY_NAME,
    SECTION_HELP,
    STAGE_COMMANDS,
    Command,
    ConfigKey,
    config_keys,
    keys_by_name,
    keys_for,
)
from qagen.cli.option_spec import CHOSEN_KEYS
from qagen.cli.paths import UserPath
from qagen.redaction import redact

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the package supports 3.10, where tomli is the same parser
    import tomli as tomllib

F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_CONFIG_NAME = "qagen.toml"
DOCS_PAGE = "docs/configuration.md"
MORE_SETTINGS = (
    f"Every setting listed in {DOCS_PAGE} is a key of a --config file or one --set SECTION.KEY=VALUE "
    "(`qagen init` writes a starter file explaining every one); --help lists those set most often."
)
"""The epilog of a command whose --help leaves options out."""


class ConfigFileError(click.BadParameter):
    """A config file that cannot be used: one sentence naming the file and the key."""


def read_config(path: Path, command: Command) -> dict[str, Any]:
    """The option values `path` gives `command`, by click parameter name (keys of other commands left out).

    Raises `ConfigFileError` for a file that is no TOML, an unknown key (with the closest known one),
    or a value of the wrong type or out of range.
    """
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigFileError(f"{path} is not valid TOML: {exc}.") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigFileError(f"{path} cannot be read: {exc}.") from exc
    values: dict[str, Any] = {}
    written = dict(_flatten(document))
    for dotted, value in written.items():
        _add(values, _key(dotted, command, where=f"{path}:"), dotted, value, command, where=f"{path}:")
    for key in keys_for(command):
        # A key the file leaves out takes the value of the one it falls back to (a build's run directory
        # is the test set its evaluation reads), checked as the key's own.
        if key.falls_back_to in written and key.param not in values and key.dotted not in written:
            where = f"{path}: `{key.falls_back_to}`, as `{key.dotted}`:"
            _add(values, key, key.dotted, written[key.falls_back_to], command, where=where)
    return values


def read_assignments(assignments: tuple[str, ...], command: Command) -> dict[str, Any]:
    """The option values of `--set SECTION.KEY=VALUE ...`, as `read_config` gives a file's.

    VALUE is read as a TOML value (`400`, `true`, `["bm25", "dense"]`, `"text"`), else as the text it is
    (`openai:gpt-4o-mini`); a key that holds text takes it as text either way (`build.audience=1`).
    """
    values: dict[str, Any] = {}
    for assignment in assignments:
        dotted, equals, raw = assignment.partition("=")
        dotted = dotted.strip()
        where = f"--set {assignment}:"
        if not equals or not dotted:
            raise ConfigFileError(f"{where} write SECTION.KEY=VALUE, such as chunking.chunk_size=400.")
        key = _key(dotted, command, where=where)
        if command not in key.commands:
            # In a file it would be another command's setting; given to this command, it would do nothing.
            readers = ", ".join(f"`qagen {name}`" for name in key.commands)
            verb = "reads" if len(key.commands) == 1 else "read"
            raise ConfigFileError(f"{where} `qagen {command}` has no setting `{key.dotted}`; {readers} {verb} it.")
        _add(values, key, dotted, _typed_text(key, raw.strip()), command, where=where)
    return values


def _typed_text(key: ConfigKey, raw: str) -> Any:
    """`raw` as the value it writes in TOML, when that is a value of the key's type; else the text."""
    try:
        value = tomllib.loads(f"value = {raw}")["value"]
    except tomllib.TOMLDecodeError:
        return raw
    try:
        TypeAdapter(key.type).validate_python(value, strict=True)
    except ValidationError:
        return raw
    return value


def _key(dotted: str, command: Command, *, where: str) -> ConfigKey:
    section = dotted.rpartition(".")[0]
    key = keys_by_name().get(dotted) or keys_by_name().get(f"{section}.{ANY_NAME}")
    if key is None:
        raise ConfigFileError(f"{where} unknown key `{dotted}`{_did_you_mean(dotted, command)}")
    return key


def _add(values: dict[str, Any], key: ConfigKey, dotted: str, value: Any, command: Command, *, where: str) -> None:
    """Check `value` for `key` and, when `command` reads the key, put it in `values` as its option takes it."""
    checked = _checked(where, key, value)
    if key.any_name:
        # Which names exist is the library's to say (a critic of the run's own is named in the run).
        checked = (f"{dotted.rpartition('.')[2]}={checked}",)
    if command in key.commands:
        checked = _in_range(where, key, checked, written=value)
        values[key.param] = (*values.get(key.param, ()), *checked) if key.any_name else checked


def _flatten(table: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted key, value) of every value; a table inside a section is a section of its own, unless it is
    the value of a key (`question_types = {factoid = 60, multi_hop = 40}`)."""
    for name, value in table.items():
        dotted = f"{prefix}{name}"
        if isinstance(value, dict) and dotted not in keys_by_name():  # a key may hold a table of its own
            yield from _flatten(value, f"{dotted}.")
        else:
            yield dotted, value


def _did_you_mean(dotted: str, command: Command) -> str:
    """The closest known key, the command's own first, as the end of a sentence."""
    own = keys_for(command)
    ranked = [*own, *(key for key in config_keys() if key not in own)]
    close: list[str] = []
    for keys in (own, ranked[len(own) :]):
        close = close or difflib.get_close_matches(dotted, [key.dotted for key in keys], n=1, cutoff=0.6)
    if not close:
        # A key in the wrong table (`chunk_size` at the top, `[generator] min_score`): its own name says where.
        leaf = dotted.rsplit(".", 1)[-1]
        by_leaf: dict[str, str] = {}
        for key in ranked:
            by_leaf.setdefault(key.name, key.dotted)
        near = difflib.get_close_matches(leaf, list(by_leaf), n=1, cutoff=0.75)
        close = [by_leaf[near[0]]] if near else []
    if close:
        return f"; did you mean `{close[0]}`?"
    return f" (every key is in `qagen init`'s starter file and {DOCS_PAGE})."


def _checked(where: str, key: ConfigKey, value: Any) -> Any:
    """`value` as its option takes it (a list as a comma list), its type checked by pydantic strictly:
    "8" is no number. Ranges and choices are the option's own (`_in_range`)."""
    try:
        typed = TypeAdapter(key.type).validate_python(value, strict=True)
    except ValidationError as exc:
        reason = exc.errors()[0]["msg"]
        raise ConfigFileError(f"{where} `{key.dotted}` is not valid: {reason[0].lower()}{reason[1:]}.") from exc
    if key.comma_list:
        typed = ",".join(str(item) for item in (typed if isinstance(typed, list) else [typed]))
    if isinstance(typed, dict):  # a table is the option's NAME=VALUE,... (`--question-types factoid=60,...`)
        typed = ",".join(f"{name}={item}" for name, item in typed.items())
    return typed


def _in_range(where: str, key: ConfigKey, typed: Any, *, written: Any) -> Any:
    """`typed`, checked by its option's own type and callback (ranges, choices, files that must exist,
    key variables), so a key and its flag refuse the same values. Only for the keys of the command
    run: a file named by a key of another command may not exist yet."""
    option = key.option()
    ctx = click.Context(click.Command(key.commands[0]))
    try:
        converted = (
            tuple(option.type.convert(item, option, ctx) for item in typed)
            if getattr(option, "multiple", False)
            else option.type.convert(typed, option, ctx)
        )
        if option.callback is not None:
            option.callback(ctx, option, converted)
    except click.BadParameter as exc:
        # The value is not repeated: a key pasted as `api_key_env` would be shown.
        hint = _path_hint(written) if isinstance(option.type, click.Path) else ""
        raise ConfigFileError(f"{where} `{key.dotted}` is not valid: {exc.message.rstrip('.')}{hint}.") from exc
    if key.must_exist and not Path(os.path.expanduser(typed)).exists():
        found = Path(os.path.expanduser(typed))
        raise ConfigFileError(f"{where} `{key.dotted}` is not valid: {found} does not exist{_path_hint(written)}.")
    return typed


def _path_hint(written: Any) -> str:
    """How a path in the file was read: `~` as the home directory, a relative path from where qagen runs."""
    if not isinstance(written, str):
        return ""
    if written.startswith("~"):
        return f" (`~` is read as your home directory, {Path.home()})"
    if not Path(written).is_absolute():
        return f" (a relative path is read from the directory qagen runs in, {Path.cwd()}, not the file's)"
    return ""


@dataclass
class ConfigSources:
    """What `--config` and `--set` gave the command running (kept in its context's `meta`)."""

    META: ClassVar[str] = "qagen.config"
    command: Command
    path: Path | None = None
    file: dict[str, Any] = field(default_factory=dict)
    """The file's values, by parameter."""
    assigned: dict[str, Any] = field(default_factory=dict)
    """The values of `--set`, by parameter."""


def config_origins(ctx: click.Context | None) -> dict[str, tuple[str, str]]:
    """Flag -> (key, where) of each option of the running command whose value came from `--config`
    (where: the file) or `--set` (where: "--set"), so a message names the key the user wrote."""
    given = ctx.meta.get(ConfigSources.META) if ctx is not None else None
    if not isinstance(given, ConfigSources):
        return {}
    origins: dict[str, tuple[str, str]] = {}
    for key in keys_for(given.command):
        if ctx is None or ctx.get_parameter_source(key.param) is not ParameterSource.DEFAULT_MAP:
            continue
        if key.param in given.assigned:
            where = "--set"
        elif key.param in given.file:
            where = str(given.path)
        else:
            continue
        origins[key.spec.flag] = (key.section if key.any_name else key.dotted, where)
    return origins


def server_notes(ctx: click.Context, command: Command) -> list[str]:
    """Which server each model of `command` calls, where an environment variable had a say: used
    (nothing on the command line or in the file set it), or set and not used (the file or a flag did)."""
    notes: list[str] = []
    origins = config_origins(ctx)
    for key in keys_for(command):
        variable = key.spec.attrs.get("envvar")
        if key.name != "base_url" or not isinstance(variable, str) or key.param not in ctx.params:
            continue
        value, ambient = ctx.params[key.param], os.environ.get(variable)
        source = ctx.get_parameter_source(key.param)
        if source is ParameterSource.ENVIRONMENT:
            notes.append(f"{key.section}'s server: {value} (from {variable})")
        elif ambient and value and ambient != value:
            origin = origins.get(key.spec.flag)
            if origin is None:
                given = key.spec.flag
            else:
                given = f"--set {origin[0]}" if origin[1] == "--set" else f"`{origin[0]}` in {origin[1]}"
            notes.append(f"{key.section}'s server: {value} (from {given}; {variable}={ambient} is not used)")
    return notes


def say_servers(ctx: click.Context, command: Command) -> None:
    """Say once, at the start, which server a model calls when an environment variable had a say."""
    for note in server_notes(ctx, command):
        click.echo(f"note: {redact(note)}", err=True)


def config_option(command: Command) -> Callable[[F], F]:
    """`--config FILE` and `--set SECTION.KEY=VALUE` of `command`: read before every other option, so each
    can take its value from them. A `--set` wins over the file, a flag over both."""

    def sources(ctx: click.Context) -> ConfigSources:
        found = ctx.meta.get(ConfigSources.META)
        if not isinstance(found, ConfigSources):
            found = ctx.meta[ConfigSources.META] = ConfigSources(command)
        return found

    def merge(ctx: click.Context, given: ConfigSources) -> None:
        ctx.default_map = {**(ctx.default_map or {}), **given.file, **given.assigned}
        # An ambient environment variable (OPENAI_BASE_URL left set in a shell) gives way to a key the
        # user wrote for this run: the file's or a --set.
        ctx.meta[CHOSEN_KEYS] = {*given.file, *given.assigned}

    def load(ctx: click.Context, _param: click.Parameter, path: Path | None) -> None:
        if path is not None:
            given = sources(ctx)
            given.path, given.file = path, read_config(path, command)
            merge(ctx, given)

    def assign(ctx: click.Context, _param: click.Parameter, assignments: tuple[str, ...]) -> None:
        if assignments:
            given = sources(ctx)
            given.assigned = read_assignments(assignments, command)
            merge(ctx, given)

    file_option = click.option(
        "--config",
        "config",
        type=UserPath(path_type=Path, exists=True, dir_okay=False),
        is_eager=True,
        expose_value=False,
        callback=load,
        help=f"A TOML file of settings (`qagen init` writes one, every key explained; {DOCS_PAGE} lists them); "
        "flags on the command line win over it.",
    )
    set_option = click.option(
        "--set",
        "set",
        metavar="SECTION.KEY=VALUE",
        multiple=True,
        is_eager=True,
        expose_value=False,
        callback=assign,
        help=f"Set one key of the config file, repeatable (`--set chunking.chunk_overlap=100`): every setting "
        f"this command reads, listed in {DOCS_PAGE}; wins over --config.",
    )

    def apply(function: F) -> F:
        return file_option(set_option(function))

    return apply


def show_only(command: click.Command, shown: tuple[str, ...]) -> None:
    """List only `shown` in the command's `--help`; the other options keep working, and are config keys."""
    names = {param.name for param in command.params}
    missing = set(shown) - names
    assert not missing, f"{command.name} has no option {sorted(missing)}"
    for param in command.params:
        if isinstance(param, click.Option) and param.name not in shown:
            param.hidden = True


# --- the starter file and the documentation -----------------------------------------------------------
def _toml(value: Any) -> str:
    """A value as TOML writes it (the few types a key holds; JSON's string escapes are TOML's too)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(item) for item in value) + "]"
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(str(value), ensure_ascii=False)


def _note(key: ConfigKey) -> str:
    """What the key is when absent."""
    if key.required:
        return f"required: set it here ({key.required})"
    if key.inherits:
        return f"not set: `{key.inherits}`"
    return "not set"


def _wrap(text: str, width: int = 100) -> list[str]:
    return textwrap.wrap(text, width=width, initial_indent="# ", subsequent_indent="# ", break_on_hyphens=False)


@functools.cache
def precedence() -> str:
    """Where a setting's value comes from, in order (the starter file and the documentation say it)."""
    variables = ", ".join(
        dict.fromkeys(
            str(key.spec.attrs["envvar"]) for key in config_keys() if isinstance(key.spec.attrs.get("envvar"), str)
        )
    )
    return (
        "a flag on the command line, then `--set SECTION.KEY=VALUE`, then the config file, then an environment "
        f"variable ({variables}), then the default. A key written in the file wins over a variable left set in "
        "your shell; when a variable had a say in which server a model calls (used, or set and not used), the "
        "command says which server it calls, and why, when it starts."
    )


def starter_file() -> str:
    """The commented `qagen.toml` that `qagen init` writes: every key, with its help and its default.

    A key with a default is written with it, so the file reads back as the defaults; a key with none
    (or one that follows another setting, such as the critics' model) is shown commented out.
    """
    lines = [
        "# qagen settings: `qagen build --config qagen.toml` and `qagen evaluate --config qagen.toml`.",
        "# Each key is the setting of the flag named beside it in " + DOCS_PAGE + ".",
        *_wrap(f"Which value counts: {precedence()}"),
        "# Paths are read from the directory you run qagen in, as flags are; `~` is your home directory.",
        "# Each command reads its own tables and ignores the others: [calls] applies to both. A key shown",
        "# commented out is not set (what its help calls None).",
    ]
    section = None
    for key in config_keys():
        if key.section != section:
            section = key.section
            lines += ["", *_wrap(SECTION_HELP[section]), f"[{section}]"]
        default = key.default()
        lines += _wrap(key.describe())
        if key.any_name:
            lines.append(f"# <name> = {_toml(key.example)}    # {_note(key)}")
        elif default is None:
            lines.append(f"# {key.name} = {_toml(key.example)}    # {_note(key)}")
        elif isinstance(key.spec.attrs.get("envvar"), str):
            # Written, the default would override the variable (a key wins over it): shown, not set.
            variable = key.spec.attrs["envvar"]
            lines.append(f"# {key.name} = {_toml(default)}    # not set: ${variable} if set, else this default")
        else:
            lines.append(f"{key.name} = {_toml(default)}")
    return "\n".join(lines) + "\n"


def reference_markdown() -> str:
    """docs/configuration.md: every key, its flag, its default and its help (a test keeps the page equal)."""
    lines = [
        "# Configuration file",
        "",
        "`qagen build --config qagen.toml` and `qagen evaluate --config qagen.toml` read their settings from",
        "a TOML file; `qagen init` writes a starter file with every key below, its default and its help.",
        "Every key is the setting of one flag. Paths are read from the directory qagen runs in, as flags are;",
        "`~` is your home directory. Each command reads its own tables and ignores the others, so one file",
        "serves both; `[calls]` applies to both. An unknown key is an error naming the closest known one; a",
        "value of the wrong type or out of range is an error naming the key and the file.",
        "",
        *textwrap.wrap(f"Which value counts: {precedence()}", width=100, break_on_hyphens=False),
        "",
        "In `[evaluate]`, `answers`, `rag`, `endpoint` and `baseline` are one choice, the system under test:",
        "one given on the command line replaces the file's (`--rag my_rag:answer` with an example file that",
        "sets `baseline`).",
        "",
        "One key can be set on the command line too, without a file: `--set SECTION.KEY=VALUE`, repeatable",
        "(`--set chunking.chunk_overlap=100 --set generator.spec=openai:gpt-4o-mini`). The value is read as",
        "TOML (`400`, `true`, `[3, 7]`), else as the text it is; a `--set` wins over the file, a flag over",
        "both. The stage commands (`qagen stage chunk`, `generate`, `critique`, `filter`, and `qagen batch",
        "export`) take `--config` and `--set` too, each reading the keys of the flags it takes.",
        "",
        "The settings a build resolves (file, flags and defaults together) are recorded in the run",
        "directory's `run.json`, as when they are all given as flags. `--help` lists the flags set most",
        "often; every flag below keeps working. Secrets have no key: the keys name the environment",
        "variables that hold them (`api_key_env`), and the Hub token is read from `HF_TOKEN`.",
        "",
        "From Python the same settings are the fields of `qagen.BuildConfig` and `qagen.EvalConfig`, which",
        "`qagen.build` and `qagen.evaluate` take ([From Python](python.md)). An `EvalConfig` is one evaluation:",
        "the test set, the metrics, the reader, the judge and the calls; the keys that choose the system under",
        "test, a grid of settings and where the results go are the command's.",
        "",
        "This page is generated from the settings (`python -m qagen.cli.config_file`); a test keeps it so.",
        "",
        # A link to a file outside docs/ would not resolve on the documentation site (mkdocs --strict).
        "Example: `examples/qagen.toml` in the repository, the first build of",
        "[Getting started](index.md#a-first-test-set) as a file.",
    ]
    section = None
    for key in config_keys():
        if key.section != section:
            section = key.section
            commands = " and ".join(f"`qagen {command}`" for command in key.commands if command not in STAGE_COMMANDS)
            lines += ["", f"## `[{section}]`", "", f"{SECTION_HELP[section]} Read by {commands}.", ""]
            lines += ["| key | flag | default | what it sets |", "| --- | --- | --- | --- |"]
        default = key.default()
        shown = f"`{_toml(default)}`" if default is not None else _note(key)
        help_text = key.describe().replace("|", "\\|")
        name = "`<name>`" if key.any_name else f"`{key.name}`"
        flag = f"{key.spec.flag} NAME=SCORE" if key.any_name else key.spec.flag
        lines.append(f"| {name} | `{flag}` | {shown} | {help_text} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(reference_markdown())
