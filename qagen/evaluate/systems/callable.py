"""A RAG system that is a Python function (sync or async) or a LangChain `Runnable`.

`load_callable` finds the function named by `module:function` on the command line; `CallableSystem`
calls it once per question and reads what it returns with `parse_reply`. A failure of the function
on one question is recorded on that question, never a crash of the evaluation.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import os
import sys
from collections.abc import Callable
from typing import Any

from langchain_core.runnables import Runnable

from qagen.errors import ConfigError
from qagen.evaluate.records import RagOutput
from qagen.evaluate.systems.replies import BadReply, parse_reply
from qagen.redaction import redact

__all__ = ["CallableSystem", "RagCallable", "load_callable"]

RagCallable = Callable[[str], Any] | Runnable[Any, Any]


def load_callable(spec: str) -> Any:
    """The object named by `module:attribute` (the attribute may be dotted: `module:obj.method`).

    The current directory is put on `sys.path` first, so `my_rag:answer` finds `./my_rag.py`.
    """
    module_name, colon, attribute = spec.partition(":")
    if not colon or not module_name or not attribute:
        raise ConfigError(f"Expected 'module:function' (e.g. 'my_rag:answer'), got '{spec}'.")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and module_name.startswith(exc.name):
            raise ConfigError(
                f"Cannot import '{module_name}': no such module in {cwd} or the installed packages."
            ) from None
        raise ConfigError(f"Importing '{module_name}' failed: {exc}.") from exc
    except Exception as exc:  # the user's module may raise anything on import: one sentence, the cause chained
        raise ConfigError(f"Importing '{module_name}' failed: {type(exc).__name__}: {exc}.") from exc
    target: Any = module
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise ConfigError(f"Module '{module_name}' has no attribute '{attribute}'.")
        target = getattr(target, part)
    if not (callable(target) or isinstance(target, Runnable)):
        raise ConfigError(f"'{spec}' is a {type(target).__name__}, not a function or a LangChain Runnable.")
    return target


class CallableSystem:
    """A RAG system that is a Python function `question -> answer` or a LangChain `Runnable`.

    The function may be sync (run in a worker thread, so it never blocks the event loop and many
    questions can be in flight) or async. It returns anything `parse_reply` accepts. A Runnable is
    called with `ainvoke(question)`, or `ainvoke({input_key: question})` when `input_key` is given.
    """

    def __init__(self, fn: RagCallable, *, name: str | None = None, input_key: str | None = None) -> None:
        if not (isinstance(fn, Runnable) or callable(fn)):
            raise ConfigError(f"A RAG system must be a function or a LangChain Runnable, got {type(fn).__name__}.")
        self._fn = fn
        self._input_key = input_key
        self._name = name or _callable_name(fn)

    @classmethod
    def from_spec(cls, spec: str, *, input_key: str | None = None) -> CallableSystem:
        """The system named by `module:function` (see `load_callable`)."""
        return cls(load_callable(spec), name=spec, input_key=input_key)

    @property
    def name(self) -> str:
        return self._name

    async def answer(self, question: str) -> RagOutput:
        try:
            result = await self._call(question)
        except Exception as exc:  # noqa: BLE001 - deliberate: the system under test failing on one question is
            # one of the things an evaluation measures; it is recorded on that question (type and message
            # kept), not swallowed, and the other questions still run. Ctrl-C and cancellation are not
            # Exceptions and still stop the run.
            return RagOutput(answer=None, error=_system_error(exc))
        try:
            return parse_reply(result)
        except BadReply as exc:
            return RagOutput(answer=None, error=f"bad_response: {exc}")

    async def _call(self, question: str) -> object:
        fn = self._fn
        if isinstance(fn, Runnable):
            payload: object = question if self._input_key is None else {self._input_key: question}
            return await fn.ainvoke(payload)
        if _is_async_callable(fn):
            result = await fn(question)
        else:
            result = await asyncio.to_thread(fn, question)
        # A sync wrapper around an async function hands back the coroutine; finish it here.
        if inspect.isawaitable(result):
            result = await result
        return result


def _is_async_callable(fn: object) -> bool:
    # An object whose `__call__` is `async def` is as async as a coroutine function.
    return inspect.iscoroutinefunction(fn) or (
        not inspect.isroutine(fn) and inspect.iscoroutinefunction(type(fn).__call__)
    )


def _callable_name(fn: object) -> str:
    if isinstance(fn, Runnable):
        return fn.get_name()
    module = getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", None) or type(fn).__qualname__
    return f"{module}:{qualname}" if module else str(qualname)


def _system_error(exc: BaseException) -> str:
    message = redact(" ".join(str(exc).split()))[:500]
    return f"system_error: {type(exc).__name__}: {message}" if message else f"system_error: {type(exc).__name__}"
