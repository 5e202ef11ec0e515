"""Running coroutines from synchronous code, running workers together, and the rule for work under
way when the run is interrupted (Ctrl-C cancels the run's tasks): a call already sent, or a
blocking user function already running, gets `INTERRUPT_GRACE_SECONDS` to come back, and what it
brings is recorded, so a re-run does not pay for it again; nothing new starts (`interrupted`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from typing import Any, TypeVar

T = TypeVar("T")

INTERRUPT_GRACE_SECONDS = 5.0
"""How long work under way at an interrupt is waited for: a call the server is answering, a
blocking RAG function of the user's. A second Ctrl-C cuts it short."""


def interrupted() -> bool:
    """Whether the current task is being cancelled (Ctrl-C): then it starts nothing new."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


async def settle_within(future: asyncio.Future[Any], grace: float) -> bool:
    """Wait until `future` is done or `grace` seconds have passed; whether it is done.

    Further cancellations (the event loop cancels every task again while it shuts down) do not
    cut the wait short; a second Ctrl-C does, as `asyncio.run` raises KeyboardInterrupt then.
    """
    deadline = time.monotonic() + grace
    while not future.done() and (left := deadline - time.monotonic()) > 0:
        try:
            await asyncio.wait({future}, timeout=left)
        except asyncio.CancelledError:
            continue
    return future.done()


async def despite_interrupt(work: Awaitable[T], grace: float = INTERRUPT_GRACE_SECONDS) -> T:
    """The result of `work`; when the caller is cancelled meanwhile, `work` goes on for up to
    `grace` seconds and its result (or exception) is the caller's, which then carries on as
    cancelled (`interrupted()`); past the grace, `work` is cancelled and so is the caller."""
    running = asyncio.ensure_future(work)
    try:
        return await asyncio.shield(running)
    except asyncio.CancelledError:
        if not await settle_within(running, grace):
            running.cancel()
            raise
    return running.result()


async def run_all(jobs: Iterable[Callable[[], Awaitable[None]]]) -> None:
    """Run coroutines together; the first exception cancels the rest and is raised."""
    tasks = [asyncio.ensure_future(job()) for job in jobs]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    finally:
        for task in tasks:
            if not task.done():
                task.cancel()
        # Also when this coroutine is itself cancelled (Ctrl-C): the jobs finish their cleanup (record
        # what they were doing) while the files they write to are still open.
        await asyncio.gather(*tasks, return_exceptions=True)
    for task in done:
        if task.exception() is not None:
            raise task.exception()  # type: ignore[misc]


def run_coroutine(coroutine: Coroutine[Any, Any, None]) -> None:
    """`asyncio.run`, also where an event loop already runs (Jupyter): then in a thread of its own.

    Ctrl-C (a notebook's interrupt) reaches this thread, not the loop's: the loop's main task is
    then cancelled, as `asyncio.run` does for Ctrl-C, and waited for (the jobs record what they were
    doing, a blocked user function gets its grace period) before KeyboardInterrupt goes on up.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(coroutine)
        return
    import concurrent.futures
    import threading

    started = threading.Event()
    running: list[tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]]] = []

    async def main() -> None:
        task = asyncio.current_task()
        assert task is not None
        running.append((asyncio.get_running_loop(), task))
        started.set()
        await coroutine

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        future = pool.submit(asyncio.run, main())
        try:
            future.result()
        except KeyboardInterrupt:
            if started.wait(timeout=1):
                loop, task = running[0]
                loop.call_soon_threadsafe(task.cancel)
            # The cancellation is the outcome here; whatever else it raised is less than the interrupt.
            with contextlib.suppress(BaseException):
                future.result()
            raise
