"""A RAG system that is a Python function (sync or async) or a LangChain `Runnable`.

`load_callable` finds the function named by `module:function` on the command line; `CallableSystem`
calls it once per question and reads what it returns with `parse_reply`. A failure of the function
on one question is recorded on that question, never a crash of the evaluation.

Ctrl-C always ends the run. A sync function runs in a daemon thread of its own (not the event
loop's executor, whose threads the interpreter waits for at exit): Python cannot stop a thread, so
a function that blocks (a hung socket, `time.sleep`) is given `interrupt_grace` seconds to return
and is then abandoned, its question recorded as failed (`interrupted: ...`).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import importlib
import inspect
import os
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from langchain_core.runnables import Runnable

from qagen.call_policy import CallPolicy
from qagen.errors import ConfigError
from qagen.evaluate.records import RagOutput
from qagen.evaluate.systems.protocol import AnswerInterrupted
from qagen.evaluate.systems.replies import BadReply, parse_reply
from qagen.llm.concurrency import INTERRUPT_GRACE_SECONDS, settle_within
from qagen.redaction import redact

__all__ = ["DEFAULT_INTERRUPT_GRACE", "CallableSystem", "RagCallable", "load_callable"]

RagCallable = Callable[[str], Any] | Runnable[Any, Any]

# Seconds a sync function still gets to return after Ctrl-C: enough for a call about to finish
# (its answer is kept), short enough that the user is not left waiting on a hung one.
DEFAULT_INTERRUPT_GRACE = INTERRUPT_GRACE_SECONDS


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

    The function may be sync (run in a thread of its own, so it never blocks the event loop and
    many questions can be in flight) or async. It returns anything `parse_reply` accepts. A Runnable
    is called with `ainvoke(question)`, or `ainvoke({input_key: question})` when `input_key` is given.
    Each call has `policy.timeout` seconds, and failures that may pass are retried (see `answer`).
    When the run is cancelled (Ctrl-C), a sync call still running gets `interrupt_grace` seconds to
    return before it is abandoned (see the module docstring).
    """

    def __init__(
        self,
        fn: RagCallable,
        *,
        name: str | None = None,
        input_key: str | None = None,
        interrupt_grace: float = DEFAULT_INTERRUPT_GRACE,
        policy: CallPolicy | None = None,
    ) -> None:
        if not (isinstance(fn, Runnable) or callable(fn)):
            raise ConfigError(f"A RAG system must be a function or a LangChain Runnable, got {type(fn).__name__}.")
        if interrupt_grace < 0:
            raise ConfigError(
                f"`interrupt_grace` must be 0 or more seconds, got {interrupt_grace}.", settings=("interrupt_grace",)
            )
        self._fn = fn
        self._input_key = input_key
        self._name = name or _callable_name(fn)
        self.interrupt_grace = interrupt_grace
        self.policy = policy or CallPolicy()

    @classmethod
    def from_spec(
        cls,
        spec: str,
        *,
        input_key: str | None = None,
        interrupt_grace: float = DEFAULT_INTERRUPT_GRACE,
        policy: CallPolicy | None = None,
    ) -> CallableSystem:
        """The system named by `module:function` (see `load_callable`)."""
        return cls(load_callable(spec), name=spec, input_key=input_key, interrupt_grace=interrupt_grace, policy=policy)

    @property
    def name(self) -> str:
        return self._name

    async def answer(self, question: str) -> RagOutput:
        """The function's answer, within `policy.timeout` seconds per call; a call that timed out or
        raised `TimeoutError` / `ConnectionError` (failures that may pass) is made again, up to
        `policy.max_retries` times. Any other exception, and `sys.exit`, is recorded on the question."""
        policy = self.policy
        error = ""
        for attempt in range(policy.attempts):
            try:
                result = await self._call(question, policy.timeout)
            except _NoReplyInTime:
                error = "timeout"  # as the endpoint records it: one reason, whatever the system
            except (TimeoutError, ConnectionError) as exc:
                error = _system_error(exc)
            except Exception as exc:  # noqa: BLE001 - deliberate: the system under test failing on one question is
                # one of the things an evaluation measures; it is recorded on that question (type and message
                # kept), not swallowed, and the other questions still run. Ctrl-C and cancellation are not
                # Exceptions and still stop the run.
                return RagOutput(answer=None, error=_system_error(exc))
            except SystemExit as exc:
                # `sys.exit` in the system under test is its failure, not the evaluation's exit code.
                return RagOutput(answer=None, error=f"system_error: SystemExit: sys.exit({exc.code!r}) was called")
            else:
                return _read(result)
            if attempt < policy.max_retries:
                await asyncio.sleep(policy.delay(attempt))
        return RagOutput(answer=None, error=error)

    async def _call(self, question: str, timeout: float) -> object:
        fn = self._fn
        if isinstance(fn, Runnable):
            payload: object = question if self._input_key is None else {self._input_key: question}
            return await _within(fn.ainvoke(payload), timeout)
        if _is_async_callable(fn):
            result = await _within(fn(question), timeout)
        else:
            result = await self._in_thread(fn, question, timeout)
        # A sync wrapper around an async function hands back the coroutine; finish it here.
        if inspect.isawaitable(result):
            result = await _within(result, timeout)
        return result

    async def _in_thread(self, fn: Callable[[str], Any], question: str, timeout: float) -> object:
        """`fn(question)` in a daemon thread, awaited `timeout` seconds (then abandoned: Python cannot
        stop a thread); on cancellation, its result if it comes within the grace period, else
        `AnswerInterrupted` with a failure: the thread is abandoned, never waited for."""
        call = _start_daemon_call(fn, question)
        try:
            done, _ = await asyncio.wait({call}, timeout=timeout)
        except asyncio.CancelledError:
            output = await _outcome_within(call, self.interrupt_grace)
            raise AnswerInterrupted(output) from None
        if not done:
            raise _NoReplyInTime
        return call.result()


class _NoReplyInTime(Exception):
    """The system gave no reply within the policy's timeout."""


async def _within(awaitable: Awaitable[object], timeout: float) -> object:
    """`awaitable`'s result, or `_NoReplyInTime` after `timeout` seconds (the call is cancelled)."""
    task = asyncio.ensure_future(awaitable)
    try:
        done, _ = await asyncio.wait({task}, timeout=timeout)
    except asyncio.CancelledError:
        task.cancel()  # the run is cancelled: so is the call
        raise
    if not done:
        task.cancel()
        # What the cancelled call ends with is nobody's to read; taken here so asyncio does not log it.
        task.add_done_callback(lambda ended: ended.cancelled() or ended.exception())
        raise _NoReplyInTime
    return task.result()


def _start_daemon_call(fn: Callable[[str], Any], question: str) -> asyncio.Future[object]:
    """A future of `fn(question)` run in a new daemon thread (with the caller's context variables)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[object] = loop.create_future()
    context = contextvars.copy_context()

    def settle(result: object, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    def work() -> None:
        try:
            result, error = context.run(fn, question), None
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting coroutine, which decides
            result, error = None, exc
        # RuntimeError: the loop is closed, the run ended (interrupted) and nobody waits for this answer any more.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(settle, result, error)

    threading.Thread(target=work, name="qagen-rag-call", daemon=True).start()
    return future


async def _outcome_within(call: asyncio.Future[object], grace: float) -> RagOutput:
    """What to record for an interrupted call: its output if it ends within `grace` seconds, else a
    failure (`settle_within`: the rule every call under way at an interrupt follows)."""
    await settle_within(call, grace)
    if not call.done():
        return RagOutput(answer=None, error=f"interrupted: no reply within {grace:g} s of the interrupt")
    if call.exception() is not None:
        error = call.exception()
        assert error is not None
        if not isinstance(error, Exception):
            raise error
        return RagOutput(answer=None, error=_system_error(error))
    return _read(call.result())


def _read(result: object) -> RagOutput:
    try:
        return parse_reply(result)
    except BadReply as exc:
        return RagOutput(answer=None, error=f"bad_response: {exc}")


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
