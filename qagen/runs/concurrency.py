"""Running coroutines from synchronous code, and running workers together."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from typing import Any


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
