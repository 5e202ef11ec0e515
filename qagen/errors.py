"""Errors that reach the user as one clear sentence (the CLI prints them without a traceback)."""

from __future__ import annotations


class QagenError(Exception):
    """A failure the user can act on; its message is a complete sentence.

    A message that refers to a setting names it as a Python user knows it (the parameter or config
    field), in backticks: "`concurrency` must be at least 1, got 0." `settings` lists those names,
    so the CLI, whose users typed flags instead, can show each one as the flag that sets it.
    A setting given a value is written "`name=value`" (e.g. "`private=False`").
    """

    def __init__(self, *args: object, settings: tuple[str, ...] = ()) -> None:
        super().__init__(*args)
        self.settings = settings


class CorpusError(QagenError):
    """The corpus is missing, empty, or has nothing usable in it."""


class ConfigError(QagenError):
    """An option or a combination of options is invalid."""


class RunMismatchError(QagenError):
    """The run directory was made with settings that differ from the ones asked for now."""


class RunInUseError(QagenError):
    """Another process holds the run directory's lock."""


class CorpusChangedError(RunMismatchError):
    """The corpus is not the one the run directory's chunks were made from."""


class LLMUnavailableError(QagenError):
    """The model cannot be used at all (no key, wrong key, unknown model, server unreachable)."""


class ErrorBudgetExceededError(QagenError):
    """Too many calls failed; the run stopped instead of failing item after item."""


class NothingUsableError(QagenError):
    """A run finished and nothing in it succeeded: no draft could be read, no question answered."""


class CorruptRecordError(QagenError):
    """A line of a run directory's record file cannot be read as a record."""


class RunWriteError(QagenError):
    """A file of a run directory could not be written (a full disk, no permission); finished records are kept."""
