"""Fault injection in the stand-in LLM: which attempts of a request body fail, and how.

- ``fault_rate``: that share of request bodies (chosen by hash) fails on its *first* attempt with
  one of ``fault_kinds``: ``429`` (``Retry-After``), ``500``, ``drop`` (connection closed, no
  response) or ``timeout`` (the reply comes only after ``timeout_sleep`` seconds). A retry of the
  same body succeeds, so a retrying client ends with the same answers as without faults;
- ``fault_attempts``: how many first attempts of a faulty body fail (default 1). A number larger
  than the client's retries makes the fault persistent: every retry fails too, as when a provider
  is down for minutes; ``configure(fault_rate=0)`` is the provider recovering.

`AttemptCounter` decides; `fault_error` is the OpenAI-shaped answer of a ``429`` or ``500``. The
``drop`` and ``timeout`` faults are carried out by `standins.llm.routes`.
"""

from __future__ import annotations

import threading
from typing import Any

from standins.llm.outcomes import unit_interval
from standins.llm.payloads import error_body

FAULT_KINDS: tuple[str, ...] = ("429", "500", "drop", "timeout")


class _BodyState:
    """How often one request body arrived, and how many of those got a real reply."""

    __slots__ = ("attempts", "replies")

    def __init__(self) -> None:
        self.attempts = 0
        self.replies = 0


class AttemptCounter:
    """The attempts of every request body so far, and which of them are faults."""

    def __init__(self) -> None:
        # Short-held: never while a handler sleeps or writes to its socket.
        self._lock = threading.Lock()
        self._bodies: dict[str, _BodyState] = {}

    def count(
        self, sha: str, *, fault_rate: float, fault_attempts: int, fault_kinds: tuple[str, ...]
    ) -> tuple[int, int, str | None]:
        """Count an attempt of body `sha`; decide whether it is a fault (its first `fault_attempts`).

        Returns (attempt number, reply number, fault kind or None).
        """
        faulty = fault_rate > 0 and unit_interval("fault", sha) < fault_rate
        with self._lock:
            state = self._bodies.setdefault(sha, _BodyState())
            state.attempts += 1
            attempt = state.attempts
            fault = None
            if attempt <= fault_attempts and faulty:
                fault = fault_kinds[int(unit_interval("fault-kind", sha) * len(fault_kinds))]
            else:
                # Faulted attempts do not count as replies, so the n-th *answer* to a body is the
                # same with or without faults (malformed replies are chosen per answer).
                state.replies += 1
            return attempt, state.replies, fault

    def clear(self) -> None:
        """Forget every body (a body seen before counts from its first attempt again)."""
        with self._lock:
            self._bodies.clear()


def fault_error(fault: str, *, retry_after: float, quoted: str) -> tuple[int, dict[str, Any], dict[str, str]]:
    """Status, body and headers of an injected ``429`` or ``500``; `quoted` ends the message."""
    if fault == "429":
        header = str(int(retry_after)) if float(retry_after).is_integer() else repr(retry_after)
        error = error_body(
            "Rate limit reached for the stand-in model (injected fault)." + quoted,
            "requests",
            "rate_limit_exceeded",
        )
        return 429, error, {"Retry-After": header}
    if fault == "500":
        error = error_body(
            "The server had an error while processing your request (injected fault)." + quoted,
            "server_error",
            None,
        )
        return 500, error, {}
    raise ValueError(f"{fault!r} is not an error fault")
