"""An option (or argument) declared once, as a value: the commands are decorated with it, and the
config keys read its flag, type, default and help from it, never from the commands built with it.

`option(...)` and `argument(...)` take what `click.option` and `click.argument` take; the result
decorates a command as those do. `option_group(...)` joins options into one decorator that also
lists them, so which options a command takes is known without building the command.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import click
from click.core import ParameterSource

from qagen.cli.renamed import old_flag_name, old_flag_option

F = TypeVar("F", bound=Callable[..., Any])

CHOSEN_KEYS = "qagen.chosen_keys"
"""`ctx.meta` entry: the parameters given a value by `--set` for this command (`qagen.cli.config_file`)."""


class SettingOption(click.Option):
    """An option whose environment variable gives way to a value chosen for this command: an ambient
    variable (OPENAI_BASE_URL left in a shell) must not undo a `--set` typed for this run.

    `old_flag` is the option's earlier name (`--model` of `--generator-model`): a hidden option of its
    own (`qagen.cli.renamed`) that says it is deprecated, whose value this option takes as typed.
    """

    def __init__(self, *args: Any, old_flag: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.old_flag = old_flag

    def consume_value(self, ctx: click.Context, opts: Mapping[str, Any]) -> tuple[Any, ParameterSource]:
        value, source = super().consume_value(ctx, opts)
        if self.old_flag is not None and source is not ParameterSource.COMMANDLINE and self.name is not None:
            typed = opts.get(old_flag_name(self.name))
            if typed is not None:
                return typed, ParameterSource.COMMANDLINE
        if source is ParameterSource.ENVIRONMENT and self.name in ctx.meta.get(CHOSEN_KEYS, ()):
            return ctx.lookup_default(self.name, call=True), ParameterSource.DEFAULT_MAP
        return value, source


@dataclass(frozen=True, eq=False)
class OptionSpec:
    """What `click.option(*decls, **attrs)` (or `click.argument`) would be given."""

    decls: tuple[str, ...]
    attrs: Mapping[str, Any] = field(default_factory=dict)
    argument: bool = False

    def make(self) -> click.Parameter:
        """A fresh parameter, attached to no command: for reading its metadata and checking a value."""
        kind = click.Argument if self.argument else self.attrs.get("cls", SettingOption)
        return kind(list(self.decls), **{name: value for name, value in self.attrs.items() if name != "cls"})

    @property
    def param(self) -> str:
        name = self.make().name
        assert name is not None, f"{self.decls} has no name"
        return name

    @property
    def flag(self) -> str:
        """How a user writes it: the long flag, or the argument's metavar (CORPUS)."""
        made = self.make()
        if isinstance(made, click.Argument):
            return made.make_metavar(click.Context(click.Command(None)))
        return next(opt for opt in made.opts if opt.startswith("--"))

    def __call__(self, function: F) -> F:
        decorate = click.argument if self.argument else click.option
        old_flag = self.attrs.get("old_flag")
        if isinstance(old_flag, str):
            function = old_flag_option(old_flag, self.param, self.flag)(function)
        return decorate(*self.decls, **self.attrs)(function)


def option(*decls: str, **attrs: Any) -> OptionSpec:
    return OptionSpec(decls, {"cls": SettingOption, **attrs})


def argument(*decls: str, **attrs: Any) -> OptionSpec:
    return OptionSpec(decls, attrs, argument=True)


class OptionGroup:
    """Options applied together, in order; iterating gives each `OptionSpec`."""

    def __init__(self, *parts: OptionSpec | OptionGroup) -> None:
        self.specs: tuple[OptionSpec, ...] = tuple(
            spec for part in parts for spec in (part.specs if isinstance(part, OptionGroup) else (part,))
        )

    def __iter__(self) -> Iterator[OptionSpec]:
        return iter(self.specs)

    def __call__(self, function: F) -> F:
        for spec in reversed(self.specs):
            function = spec(function)
        return function

    def by_param(self) -> dict[str, OptionSpec]:
        return {spec.param: spec for spec in self.specs}


def option_group(*parts: OptionSpec | OptionGroup) -> OptionGroup:
    return OptionGroup(*parts)
