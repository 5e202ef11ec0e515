"""Calls to chat models, as values: a reply, or a recorded failure; or a stop when the run cannot go on.

Stages receive an `LLMClient`; they never build a model. The backend (`qagen.llm.backends`) owns
retries with backoff on 429/5xx, timeouts and dropped connections, honouring `Retry-After`; this
module adds the bound on calls in flight, the requests-per-minute limit, token accounting, and the
line between a failed call (recorded on its item) and a failed run (the key is wrong, the model
does not exist, the server is down: stop at once, not after thousands of failures).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import socket
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from qagen.errors import ErrorBudgetExceededError, LLMUnavailableError
from qagen.failures import Failure, FailureKind
from qagen.llm.backends import DEFAULT_KEY_ENV, ChatBackend, MalformedCompletionError, ModelSettings, build_backend
from qagen.llm.concurrency import despite_interrupt, interrupted
from qagen.llm.server_url import has_credentials
from qagen.llm.task import Outcome, Request
from qagen.redaction import redact, redact_url

__all__ = ["CallStats", "LLMClient", "ModelSettings", "build_backend"]


@dataclass
class CallStats:
    """Counts for the funnel and the error budget."""

    calls: int = 0
    failed: int = 0
    succeeded: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    with_tokens: int = 0
    """Replies that came with their tokens' probabilities (`Reply.tokens`)."""
    by_error: dict[FailureKind, int] = field(default_factory=dict)

    @property
    def no_token_probabilities(self) -> bool:
        """Replies came, none with token probabilities: a server that does not send them."""
        return self.succeeded > 0 and self.with_tokens == 0


_FAILURES_BEFORE_GIVING_UP = 3
"""Failed calls (after retries) with no success yet that stop a run."""

_STATUS_KINDS = {429: FailureKind.RATE_LIMITED, 400: FailureKind.BAD_REQUEST, 422: FailureKind.BAD_REQUEST}

STOPPING_STATUSES = frozenset({401, 403, 404})
"""Statuses every call of a model gets alike (the key, access, the model's name): they stop the run."""


def _status_code(exc: BaseException) -> int | None:
    code = getattr(exc, "status_code", None)
    if isinstance(code, int):
        return code
    response = getattr(exc, "response", None)
    code = getattr(response, "status_code", None)
    return code if isinstance(code, int) else None


def _is_connection_error(exc: BaseException) -> bool:
    names = {cls.__name__ for cls in type(exc).__mro__}
    return bool(
        names
        & {
            "APIConnectionError",
            "APITimeoutError",
            "ConnectError",
            "ConnectionError",
            "TimeoutError",
        }
    )


def _causes(exc: BaseException) -> list[BaseException]:
    """`exc` and the exceptions it was raised from, outermost first (cycles cut)."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not seen for seen in chain):
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


NO_REPLY = "no reply in time"


def server_name(settings: ModelSettings) -> str:
    """Where a model's calls go, as messages name it (its URL without credentials)."""
    base = settings.base_url or os.environ.get("OPENAI_BASE_URL")
    return redact_url(base) or f"the {settings.provider} API"


def connection_problem(exc: BaseException) -> str:
    """What went wrong on the wire, in words, from the innermost cause that tells.

    The outer type does not: a refused connection, an unknown host and a dropped connection all
    end as one connection error (`qagen.llm.transport`; the `openai` client's aiohttp transport,
    used for the Batch API, even calls them a connect *timeout*, which sends a user looking for a
    slow server when the server is not running).
    """
    for cause in reversed(_causes(exc)):
        if isinstance(cause, ConnectionRefusedError):
            return "connection refused"
        if isinstance(cause, socket.gaierror):
            return "the host name does not resolve"
        if isinstance(cause, (ConnectionResetError, BrokenPipeError)):
            return "the connection was reset"
        names = {cls.__name__ for cls in type(cause).__mro__}
        if names & {"ServerDisconnectedError", "RemoteProtocolError", "ClientOSError"}:
            return "the server closed the connection without a reply"
        if names & {"ReadTimeout", "SocketTimeoutError", "ServerTimeoutError"}:
            return NO_REPLY
    return type(exc).__name__


def _one_line(text: str) -> str:
    """An error detail fit for a one-sentence message (an HTML error page spans many lines)."""
    return " ".join(text.split())


class LLMClient:
    """A chat model with a bound on calls in flight, usage accounting and an error budget."""

    def __init__(
        self,
        backend: ChatBackend,
        settings: ModelSettings,
        *,
        concurrency: int = 16,
        max_failure_rate: float = 0.5,
        min_calls_for_budget: int = 20,
        slots: asyncio.Semaphore | None = None,
        rate_limiter: Any = None,
    ) -> None:
        """A client alone bounds its own calls in flight by `concurrency`; the clients of a run
        share `slots` and `rate_limiter` instead (`qagen.llm.clients.Clients.connect` makes them)."""
        self.backend = backend
        self.settings = settings
        self._rate_limiter = rate_limiter
        self.stats = CallStats()
        self._slots = slots or asyncio.Semaphore(concurrency)
        self._max_failure_rate = max_failure_rate
        self._min_calls_for_budget = min_calls_for_budget
        self._last_detail: dict[FailureKind, str] = {}
        # When each call in flight started (for "waiting N s for a reply" on the progress line).
        self._started: dict[int, float] = {}
        self._call_numbers = itertools.count()

    @classmethod
    def connect(cls, settings: ModelSettings, *, concurrency: int = 16) -> LLMClient:
        """A client of its own for `settings` (inside the event loop that will use it; `aclose` it)."""
        return cls(build_backend(settings, connections=concurrency), settings, concurrency=concurrency)

    def longest_wait(self) -> float:
        """Seconds the oldest call in flight has waited so far (retries included); 0 when none is."""
        started = min(self._started.values(), default=None)
        return 0.0 if started is None else time.monotonic() - started

    async def aclose(self) -> None:
        """Close the backend's HTTP connections (inside the event loop that used them)."""
        await self.backend.aclose()

    @property
    def where(self) -> str:
        return server_name(self.settings)

    def _rejected_key(self) -> LLMUnavailableError:
        """The 401 error, naming where the rejected key came from: the URL's user-info replaces the
        variable's key, a query key goes beside it."""
        rejected = f"{self.where} rejected the API key of '{self.settings.spec}' (401)"
        variable = self.settings.api_key_env or DEFAULT_KEY_ENV
        url = self.settings.base_url or os.environ.get("OPENAI_BASE_URL")
        if not has_credentials(url):
            return LLMUnavailableError(f"{rejected}; check {variable}.")
        if "@" in urlsplit(url or "").netloc:
            return LLMUnavailableError(f"{rejected}; check the credentials in `base_url`.", settings=("base_url",))
        return LLMUnavailableError(f"{rejected}; check {variable} and the key in `base_url`.", settings=("base_url",))

    async def complete(self, request: Request) -> Outcome:
        """Send one request; return its reply, or the failure of the call after the backend's
        retries. Raises only when the whole run cannot go on (see `_failure`)."""
        async with self._slots:
            if self._rate_limiter is not None:
                await self._rate_limiter.aacquire()
            if interrupted():  # the run is being stopped: a request not sent yet is not sent
                raise asyncio.CancelledError
            self.stats.calls += 1
            number = next(self._call_numbers)
            self._started[number] = time.monotonic()
            try:
                # A request on the wire at a Ctrl-C is paid for: its reply, if it comes within the
                # grace, is returned and recorded, so a re-run does not ask it again.
                reply = await despite_interrupt(self.backend.reply(request))
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - every provider raises its own types; each is classified below
                return self._failure(exc)
            finally:
                del self._started[number]
        self.stats.succeeded += 1
        self.stats.input_tokens += reply.usage.input_tokens
        self.stats.output_tokens += reply.usage.output_tokens
        self.stats.with_tokens += reply.tokens is not None
        return reply

    def stop_for_status(self, code: int | None) -> None:
        """Raise the error that stops the run for a status every call of this model would get alike
        (`STOPPING_STATUSES`): a rejected key, no access, an unknown model. Other statuses return."""
        if code == 401:
            raise self._rejected_key() from None
        if code == 403:
            raise LLMUnavailableError(f"{self.where} refused access to '{self.settings.spec}' (403).") from None
        if code == 404:
            raise LLMUnavailableError(
                f"{self.where} does not know the model '{self.settings.name}' (404); check `model`.",
                settings=("model",),
            ) from None

    def count(self, outcome: Outcome) -> None:
        """Count a call made elsewhere (a request of a batch) as this client counts its own, for the
        error budget (`check_error_budget`, `check_failure_rate`) and the run's counts."""
        self.stats.calls += 1
        if isinstance(outcome, Failure):
            self.stats.failed += 1
            self.stats.by_error[outcome.kind] = self.stats.by_error.get(outcome.kind, 0) + 1
            self._last_detail[outcome.kind] = outcome.detail
            return
        self.stats.succeeded += 1
        self.stats.input_tokens += outcome.usage.input_tokens
        self.stats.output_tokens += outcome.usage.output_tokens

    def check_error_budget(self) -> None:
        """During a run, after some calls counted with `count`: stop as a run of online calls would
        (a few failures and no success yet, or more than `max_failure_rate` of 20 calls or more)."""
        self._check_budget()

    def _failure(self, exc: Exception) -> Failure:
        code = _status_code(exc)
        detail = redact(f"{type(exc).__name__}: {exc}")[:500]
        self.stop_for_status(code)
        connection = _is_connection_error(exc)
        if connection and self.stats.succeeded == 0:
            tried = f"Cannot reach {self.where} after {self.settings.max_retries} retries"
            problem = connection_problem(exc)
            if problem == NO_REPLY:
                raise LLMUnavailableError(
                    f"{tried} (no reply within `timeout`); is the server running and is `base_url` right?",
                    settings=("timeout", "base_url"),
                ) from None
            raise LLMUnavailableError(
                f"{tried} ({problem}); is the server running and is `base_url` right?", settings=("base_url",)
            ) from None
        malformed = isinstance(exc, MalformedCompletionError)
        if code is None and not connection and not malformed and self.stats.succeeded == 0:
            # Raised on this side before any answer came back (a URL the HTTP client refuses, a
            # provider package that cannot build its request): every call will fail the same way,
            # so this stops the run instead of filling it with failed rows.
            raise LLMUnavailableError(
                f"Calls to {self.where} fail before any reply ({_one_line(detail)}); check `base_url` and `model`.",
                settings=("base_url", "model"),
            ) from None
        kind = _STATUS_KINDS.get(code or 0)
        if malformed:
            kind = FailureKind.MALFORMED_COMPLETION
        if kind is None:
            kind = (
                FailureKind.SERVER_ERROR
                if code and code >= 500
                else FailureKind.CONNECTION_ERROR
                if connection
                else FailureKind.API_ERROR
            )
        self.stats.failed += 1
        self.stats.by_error[kind] = self.stats.by_error.get(kind, 0) + 1
        self._last_detail[kind] = detail
        self._check_budget()
        return Failure.of(kind, detail)

    def check_failure_rate(self) -> None:
        """At the end of a run: its calls failed more often than allowed, however few there were."""
        self._check_budget(min_calls=1)

    def _check_budget(self, min_calls: int | None = None) -> None:
        calls = self.stats.calls
        if min_calls is None:
            # While nothing has worked yet, a few failures in a row say enough: the run stops in
            # seconds instead of failing every item (a broken server, a model that always errs).
            min_calls = _FAILURES_BEFORE_GIVING_UP if self.stats.succeeded == 0 else self._min_calls_for_budget
        enough = calls >= min_calls
        if enough and self.stats.failed / calls > self._max_failure_rate:
            # The commonest failure and its last message: what the user has to fix, in the sentence.
            commonest = max(self.stats.by_error, key=self.stats.by_error.__getitem__)
            example = _one_line(self._last_detail.get(commonest, ""))[:200]
            raise ErrorBudgetExceededError(
                f"{self.stats.failed} of {calls} calls to {self.where} failed even after retries, more than "
                f"`max_failure_rate={self._max_failure_rate:.0%}` (mostly {commonest.value}: {example}); stopped. "
                "Finished work is saved: re-run the same command to continue.",
                settings=("max_failure_rate",),
            )
