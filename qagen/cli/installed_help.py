"""Options whose help, when shown, names the extensions installed packages bring (`qagen.registry`).

The help fixed when the CLI is imported lists qagen's own choices: the configuration page is made
from it, the same whatever is installed, and importing the CLI loads no package of anyone else's.
The help `--help` shows adds the installed packages' extensions of the option's kind.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

import click

from qagen.cli.option_spec import SettingOption
from qagen.registry import Registry


class Described(Protocol):
    """A spec with a name and a line of help, as every kind of extension has."""

    @property
    def name(self) -> str: ...

    @property
    def help(self) -> str: ...


SpecT = TypeVar("SpecT", bound=Described)


def installed(registry: Registry[SpecT], form: Callable[[SpecT], str] = lambda spec: spec.name) -> str:
    """A sentence naming the registry's extensions installed packages bring (each as `form` writes it,
    with its help); empty when there is none."""
    brought = [spec for spec in registry if registry.installed_by(spec.name) is not None]
    if not brought:
        return ""
    return "From installed packages: " + "; ".join(f"{form(spec)} ({spec.help})" for spec in brought) + "."


class ListsInstalled(SettingOption):
    """An option whose shown help ends with `installed()`: the extensions installed packages bring
    (a `SettingOption`, so its value is chosen as every other option's is)."""

    def __init__(self, *args: Any, installed: Callable[[], str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._installed = installed

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        own = self.help
        extra = self._installed()
        self.help = f"{own} {extra}" if own and extra else own
        try:
            return super().get_help_record(ctx)
        finally:
            self.help = own
