"""The type of every path option: `~` is the home directory, wherever the value comes from."""

from __future__ import annotations

import os
from typing import Any

import click


class UserPath(click.Path):
    """`click.Path` that expands `~` first. A shell expands it only at the start of an unquoted word,
    never inside a config file's string (`out = "~/run"`) or after `--out=`; left as it is, every
    call would be paid into a folder named `~` in the working directory."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str | os.PathLike):
            value = os.path.expanduser(value)
        return super().convert(value, param, ctx)
