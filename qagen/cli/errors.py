"""How every `qagen` command fails: one clear sentence and a non-zero exit, never a traceback."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from qagen.errors import QagenError
from qagen.redaction import redact

F = TypeVar("F", bound=Callable[..., Any])


def friendly_errors(function: F) -> F:
    """One clear sentence and a non-zero exit instead of a traceback, for every expected failure."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except QagenError as exc:
            click.echo(f"error: {redact(str(exc))}", err=True)
            sys.exit(1)
        except KeyboardInterrupt:
            click.echo(
                "\ninterrupted: finished calls are saved; run the same command again to continue.",
                err=True,
            )
            sys.exit(130)
        except OSError as exc:
            where = f" ({exc.filename})" if exc.filename else ""
            click.echo(f"error: {exc.strerror or exc}{where}.", err=True)
            sys.exit(1)

    return wrapper  # type: ignore[return-value]
