"""Calls to chat models, as values: a reply, or a recorded failure; or a stop when the run cannot go on.

Stages receive an `LLMClient`; they never build a model. The backend (`qagen.models`) owns
retries with backoff on 429/5xx, timeouts and dropped connections, honouring `Retry-After`; this
module adds the bound on calls in flight, the requests-per-minute limit, token accounting, and the
line between a failed call (recorded on its item) and a failed run (the key is wrong, the model
does not exist, the server is down: stop at once, not after thousands of failures).
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from qagen.errors import ConfigError, ErrorBudgetExceededError, LLMUnavailableError
from qagen.models import ChatBackend, MalformedCompletionError, ModelSettings, build_backend
from qagen.redaction import redact, strip_userinfo
from qagen.types import Usage

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
    ) -> None:
        if concurrency < 1:
            raise ConfigError(f"--concurrency must be at least 1, got {concurrency}.")
        self.backend = backend
        self.settings = settings
        self._rate_limiter = _rate_limiter(settings.rpm)
        self.stats = CallStats()
        # Clients of one run share `slots`, so --concurrency bounds all calls in flight together.
        self._slots = slots or asyncio.Semaphore(concurrency)
        self._max_failure_rate = max_failure_rate
        self._min_calls_for_budget = min_calls_for_budget

    @classmethod
    def connect(
        cls,
        settings: ModelSettings,
        *,
        concurrency: int = 16,
        max_failure_rate: float = 0.5,
        slots: asyncio.Semaphore | None = None,
    ) -> LLMClient:
        """A client for `settings`; call inside the event loop that will use it, and `aclose` it."""
        backend = build_backend(settings, connections=concurrency)
        return cls(backend, settings, concurrency=concurrency, max_failure_rate=max_failure_rate, slots=slots)

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
        if _is_connection_error(exc) and self.stats.succeeded == 0:
            raise LLMUnavailableError(
                f"Cannot reach {self.where} after {self.settings.max_retries} retries ({type(exc).__name__}); "
                "is the server running and is --base-url right?"
            ) from None
        reason = {429: "rate_limited", 400: "bad_request", 422: "bad_request"}.get(code or 0)
        if isinstance(exc, MalformedCompletionError):
            reason = "malformed_completion"
        if reason is None:
            reason = (
                "server_error"
                if code and code >= 500
                else "connection_error"
                if _is_connection_error(exc)
                else "api_error"
            )
        self.stats.failed += 1
        self.stats.by_error[reason] = self.stats.by_error.get(reason, 0) + 1
        self._check_budget()
        return CallResult(None, Usage(), reason, detail)

    def _check_budget(self) -> None:
        calls = self.stats.calls
        if calls >= self._min_calls_for_budget and self.stats.failed / calls > self._max_failure_rate:
            raise ErrorBudgetExceededError(
                f"{self.stats.failed} of {calls} calls to {self.where} failed even after retries "
                f"(more than --max-failure-rate {self._max_failure_rate:.0%}); stopped. Finished work is "
                "saved: re-run the same command to continue."
            )


def _rate_limiter(rpm: float | None) -> Any:
    """LangChain's token-bucket limiter for --rpm (None: no limit)."""
    if rpm is None:
        return None
    if rpm <= 0:
        raise ConfigError(f"--rpm must be positive, got {rpm}.")
    from langchain_core.rate_limiters import InMemoryRateLimiter

    return InMemoryRateLimiter(requests_per_second=rpm / 60.0, check_every_n_seconds=0.01, max_bucket_size=1)
