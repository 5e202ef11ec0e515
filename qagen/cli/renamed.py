"""Old command and option names that keep working for the scripts that use them, hidden from `--help`:
each says once, on stderr, the name that replaces it, and does what the new name does (same options,
same output, same exit codes)."""

from __future__ import annotations

from typing import Any

import click


def say_renamed(old: str, new: str) -> None:
    """The one sentence an old name prints on stderr: what to write instead."""
    click.echo(f"note: {old} is deprecated; use {new} instead (it does the same).", err=True)


class RenamedCommand(click.Command):
    """`command` under its old name: its parameters and behaviour, hidden from the group's `--help`."""

    def __init__(self, old_name: str, command: click.Command, new_form: str) -> None:
        super().__init__(
            old_name,
            context_settings=command.context_settings,
            callback=command.callback,
            params=command.params,
            help=command.help,
            epilog=command.epilog,
            short_help=command.short_help,
            hidden=True,
        )
        self.new_form = new_form

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # Before parsing: a script that now fails on its arguments learns the new name too.
        if not ctx.resilient_parsing:
            typed = ctx.command_path.split(" ", 1)[1]  # without the program's name, which tests give another
            say_renamed(f"`qagen {typed}`", f"`{self.new_form}`")
        return super().parse_args(ctx, args)


def old_flag_name(param: str) -> str:
    """The parameter name of the hidden option that carries an old flag of the option `param`."""
    return f"{param}__old_flag"


def old_flag_option(old_flag: str, param: str, new_flag: str) -> Any:
    """The decorator of a hidden option `old_flag` whose value the option `param` takes (see
    `qagen.cli.option_spec.SettingOption`), saying `new_flag` replaces it."""

    def say(ctx: click.Context, _param: click.Parameter, value: Any) -> None:
        if value is not None and not ctx.resilient_parsing:
            say_renamed(old_flag, new_flag)

    return click.option(
        old_flag,
        old_flag_name(param),
        hidden=True,
        expose_value=False,
        default=None,
        callback=say,
        help=f"The earlier name of {new_flag}, deprecated.",
    )
