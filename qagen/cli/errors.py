"""How every `qagen` command fails: one clear sentence and a non-zero exit, never a traceback."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from qagen.cli.flags import in_cli_terms
from qagen.errors import QagenError
from qagen.redaction import redact
from qagen.runs.batch.executor import BatchesRunningError

BATCHES_RUNNING_EXIT = 4
"""`--batch --no-wait`: the batches are submitted or still running (see `qagen --help`)."""

PIPE_CLOSED_EXIT = 141
"""The reader of the output stopped reading (`qagen profile RUN | head`): 128 + SIGPIPE, the code a
shell reports for a command its pipe's reader left, as for any tool that stops there."""

F = TypeVar("F", bound=Callable[..., Any])


def friendly_errors(function: F) -> F:
    """One clear sentence and a non-zero exit instead of a traceback, for every expected failure."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except BatchesRunningError as exc:
            click.echo(f"waiting: {exc}", err=True)
            sys.exit(BATCHES_RUNNING_EXIT)
        except QagenError as exc:
            # The library names its settings as Python users know them; CLI users typed flags.
            click.echo(f"error: {redact(in_cli_terms(str(exc), exc.settings))}", err=True)
            sys.exit(1)
        except KeyboardInterrupt:
            click.echo(
                "\ninterrupted: finished calls are saved; run the same command again to continue.",
                err=True,
            )
            sys.exit(130)
        except BrokenPipeError:
            # What the reader read is all it wanted: nothing to say. Later writes (the interpreter's
            # final flush) go nowhere instead of failing again.
            _silence_stdout()
            sys.exit(PIPE_CLOSED_EXIT)
        except OSError as exc:
            where = f" ({exc.filename})" if exc.filename else ""
            click.echo(f"error: {exc.strerror or exc}{where}.", err=True)
            sys.exit(1)

    return wrapper  # type: ignore[return-value]


def _silence_stdout() -> None:
    try:
        descriptor = sys.stdout.fileno()
    except (OSError, ValueError):  # not a file (a test's captured output): nothing left to flush
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, descriptor)
    os.close(devnull)
