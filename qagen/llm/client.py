"""Calls to chat models, as values: a reply, or a recorded failure; or a stop when the run cannot go on.

Stages receive an `LLMClient`; they never build a model. The backend (`qagen.llm.backends`) owns
retries with backoff on 429/5xx, timeouts and dropped connections, honouring `Retry-After`; this
module adds the bound on calls in flight, the requests-per-minute limit, token accounting, and the
line between a failed call (recorded on its item) and a failed run (the key is wrong, the model
does not exist, the server is down: stop at once, not after thousands of failures).
"""

from __future__ import annotations

import asyncio
import os
import socket
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from qagen.errors import ConfigError, ErrorBudgetExceededError, LLMUnavailableError
from qagen.llm.backends import ChatBackend, MalformedCompletionError, ModelSettings, build_backend
from qagen.records import Usage
from qagen.redaction import redact, strip_userinfo

__all__ = ["CallResult", "CallStats", "LLMClient", "ModelSettings", "build_backend"]


class CallResult(NamedTuple):
    """One call's outcome: the reply text, or the reason it failed after all retries."""

    text: str | None
    usage: Usage
    error: str
    """Empty when the call succeeded; else a short reason (`rate_limited`, `server_error`, ...)."""
    detail: str


@dataclass
class CallStats:
    """Counts for the funnel and the error budget."""

    calls: int = 0
    failed: int = 0
    succeeded: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    by_error: dict[str, int] = field(default_factory=dict)


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


def _connection_problem(exc: BaseException) -> str:
    """What went wrong on the wire, in words, from the innermost cause that tells.

    The outer type does not: on the aiohttp transport the HTTP layer reports a refused
    connection, an unknown host and a dropped connection alike as a connect *timeout*, and
    "APITimeoutError" sends a user looking for a slow server when the server is not running.
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
            return "no reply within --timeout"
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
        if concurrency < 1:
            raise ConfigError(f"--concurrency must be at least 1, got {concurrency}.")
        self.backend = backend
        self.settings = settings
        # Clients of one run share one limiter too, so --rpm bounds their requests together.
        self._rate_limiter = rate_limiter if rate_limiter is not None else new_rate_limiter(settings.rpm)
        self.stats = CallStats()
        # Clients of one run share `slots`, so --concurrency bounds all calls in flight together.
        self._slots = slots or asyncio.Semaphore(concurrency)
        self._max_failure_rate = max_failure_rate
        self._min_calls_for_budget = min_calls_for_budget
        self._last_detail: dict[str, str] = {}

    @classmethod
    def connect(
        cls,
        settings: ModelSettings,
        *,
        concurrency: int = 16,
        max_failure_rate: float = 0.5,
        slots: asyncio.Semaphore | None = None,
        rate_limiter: Any = None,
    ) -> LLMClient:
        """A client for `settings`; call inside the event loop that will use it, and `aclose` it."""
        backend = build_backend(settings, connections=concurrency)
        return cls(
            backend,
            settings,
            concurrency=concurrency,
            max_failure_rate=max_failure_rate,
            slots=slots,
            rate_limiter=rate_limiter,
        )

    async def aclose(self) -> None:
        """Close the backend's HTTP connections (inside the event loop that used them)."""
        await self.backend.aclose()

    @property
    def where(self) -> str:
        base = self.settings.base_url or os.environ.get("OPENAI_BASE_URL")
        return strip_userinfo(base) or f"the {self.settings.provider} API"

    async def complete(self, prompt: str, *, system: str | None = None) -> CallResult:
        """Send one user message (after an optional system message); return its reply or a recorded
        failure. Raises only when the whole run cannot go on (see `_failure`)."""
        async with self._slots:
            if self._rate_limiter is not None:
                await self._rate_limiter.aacquire()
            self.stats.calls += 1
            try:
                reply = await self.backend.reply(prompt, system)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - every provider raises its own types; each is classified below
                return self._failure(exc)
        self.stats.succeeded += 1
        self.stats.input_tokens += reply.usage.input_tokens
        self.stats.output_tokens += reply.usage.output_tokens
        return CallResult(reply.text, reply.usage, "", "")

    def _failure(self, exc: Exception) -> CallResult:
        code = _status_code(exc)
        detail = redact(f"{type(exc).__name__}: {exc}")[:500]
        model = self.settings.spec
        if code == 401:
            raise LLMUnavailableError(f"{self.where} rejected the API key (401); check OPENAI_API_KEY.") from None
        if code == 403:
            raise LLMUnavailableError(f"{self.where} refused access to '{model}' (403).") from None
        if code == 404:
            raise LLMUnavailableError(
                f"{self.where} does not know the model '{self.settings.name}' (404); check --model."
            ) from None
        connection = _is_connection_error(exc)
        if connection and self.stats.succeeded == 0:
            raise LLMUnavailableError(
                f"Cannot reach {self.where} after {self.settings.max_retries} retries ({_connection_problem(exc)}); "
                "is the server running and is --base-url right?"
            ) from None
        malformed = isinstance(exc, MalformedCompletionError)
        if code is None and not connection and not malformed and self.stats.succeeded == 0:
            # Raised on this side before any answer came back (a URL the HTTP client refuses, a
            # provider package that cannot build its request): every call will fail the same way,
            # so this stops the run instead of filling it with failed rows.
            raise LLMUnavailableError(
                f"Calls to {self.where} fail before any reply ({_one_line(detail)}); check --base-url and --model."
            ) from None
        reason = {429: "rate_limited", 400: "bad_request", 422: "bad_request"}.get(code or 0)
        if malformed:
            reason = "malformed_completion"
        if reason is None:
            reason = "server_error" if code and code >= 500 else "connection_error" if connection else "api_error"
        self.stats.failed += 1
        self.stats.by_error[reason] = self.stats.by_error.get(reason, 0) + 1
        self._last_detail[reason] = detail
        self._check_budget()
        return CallResult(None, Usage(), reason, detail)

    def _check_budget(self) -> None:
        calls = self.stats.calls
        if calls >= self._min_calls_for_budget and self.stats.failed / calls > self._max_failure_rate:
            # The commonest failure and its last message: what the user has to fix, in the sentence.
            commonest = max(self.stats.by_error, key=self.stats.by_error.__getitem__)
            example = _one_line(self._last_detail.get(commonest, ""))[:200]
            raise ErrorBudgetExceededError(
                f"{self.stats.failed} of {calls} calls to {self.where} failed even after retries, more than "
                f"--max-failure-rate {self._max_failure_rate:.0%} (mostly {commonest}: {example}); stopped. "
                "Finished work is saved: re-run the same command to continue."
            )


def new_rate_limiter(rpm: float | None) -> Any:
    """LangChain's token-bucket limiter for --rpm (None: no limit)."""
    if rpm is None:
        return None
    if rpm <= 0:
        raise ConfigError(f"--rpm must be positive, got {rpm}.")
    from langchain_core.rate_limiters import InMemoryRateLimiter

    return InMemoryRateLimiter(requests_per_second=rpm / 60.0, check_every_n_seconds=0.01, max_bucket_size=1)
