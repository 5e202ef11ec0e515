"""What the clients' own retries are doing, for the progress line.

Chat calls to OpenAI-compatible servers (`qagen.llm.transport`) and the `openai` client (the Batch
API's calls) retry 429s, 5xx, timeouts and dropped connections themselves (with backoff that
honours `Retry-After`) and say so only in their logs ("Retrying request in 0.8 seconds"). A handler
on those loggers counts the retries, so that a run whose calls are all waiting on retries says so
instead of showing a bar that does not move.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from dataclasses import dataclass

_RETRY_LOGGERS = ("qagen.llm.transport", "openai._base_client")
_RETRYING = re.compile(r"Retrying request (?:to \S+ )?in ([\d.]+) seconds")


@dataclass
class RetryCount:
    """Retries seen so far in this process, and when the last one was scheduled."""

    retries: int = 0
    last_at: float = 0.0
    last_delay: float = 0.0


class _RetryWatcher(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.INFO)
        self.count = RetryCount()
        self._lock = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        match = _RETRYING.match(record.getMessage())
        if match is None:
            return
        with self._lock:
            self.count.retries += 1
            self.count.last_at = time.monotonic()
            self.count.last_delay = float(match.group(1))


_watcher: _RetryWatcher | None = None


def retry_count() -> RetryCount:
    """The process's retry count (the watcher is installed on first use)."""
    global _watcher
    if _watcher is None:
        _watcher = _RetryWatcher()
        for name in _RETRY_LOGGERS:
            logger = logging.getLogger(name)
            # Retries are logged at INFO; the logger must let them through to this handler. Nothing
            # is printed unless the application itself shows INFO records (the root logger's
            # default level is WARNING).
            if logger.getEffectiveLevel() > logging.INFO:
                logger.setLevel(logging.INFO)
            logger.addHandler(_watcher)
    return _watcher.count
