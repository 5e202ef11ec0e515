"""The one place that builds chat models and makes calls to them.

Stages receive an `LLMClient`; they never build a model. Retries with backoff on 429/5xx,
timeouts and dropped connections (honouring `Retry-After`) are the OpenAI client's own
(`max_retries`); the rate limit is LangChain's `InMemoryRateLimiter`; this module adds the bound on
calls in flight, token accounting, and the line between a failed call (recorded on its item) and a
failed run (the key is wrong, the model does not exist, the server is down: stop at once).
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.rate_limiters import InMemoryRateLimiter
from pydantic import BaseModel, ConfigDict

from qagen.errors import ConfigError, ErrorBudgetExceededError, LLMUnavailableError
from qagen.redaction import redact, strip_userinfo
from qagen.types import Usage

# A key that OpenAI-compatible servers without authentication accept (vLLM, Ollama, llama.cpp).
_NO_KEY_PLACEHOLDER = "EMPTY"


class ModelSettings(BaseModel):
    """How to reach one model."""

    model_config = ConfigDict(frozen=True)

    spec: str
    base_url: str | None = None
    temperature: float | None = None
    max_output_tokens: int | None = None
    timeout: float = 120.0
    max_retries: int = 6
    rpm: float | None = None

    @property
    def provider(self) -> str:
        return self.spec.split(":", 1)[0] if ":" in self.spec else "openai"

    @property
    def name(self) -> str:
        return self.spec.split(":", 1)[1] if ":" in self.spec else self.spec


def build_chat_model(settings: ModelSettings, *, connections: int = 100) -> BaseChatModel:
    """A LangChain chat model from a `provider:model` spec (LangChain's `init_chat_model`).

    OpenAI models get an HTTP client of their own, sized for `connections` calls in flight:
    langchain-openai otherwise shares one cached client per process, whose connections belong to
    the event loop of the first build and break every later build in the same process
    ("Event loop is closed"), e.g. two builds in one notebook.
    """
    from langchain.chat_models import init_chat_model

    kwargs: dict[str, Any] = {"timeout": settings.timeout, "max_retries": settings.max_retries}
    if settings.temperature is not None:
        kwargs["temperature"] = settings.temperature
    if settings.max_output_tokens is not None:
        kwargs["max_tokens"] = settings.max_output_tokens
    if settings.rpm is not None:
        if settings.rpm <= 0:
            raise ConfigError(f"--rpm must be positive, got {settings.rpm}.")
        kwargs["rate_limiter"] = InMemoryRateLimiter(
            requests_per_second=settings.rpm / 60.0, check_every_n_seconds=0.01, max_bucket_size=1
        )
    if settings.provider == "openai":
        base_url = settings.base_url or os.environ.get("OPENAI_BASE_URL") or None
        api_key = os.environ.get("OPENAI_API_KEY")
        if not api_key:
            if base_url is None:
                raise LLMUnavailableError(
                    "No API key: set OPENAI_API_KEY, or point --base-url at an OpenAI-compatible server."
                )
            api_key = _NO_KEY_PLACEHOLDER
        kwargs["api_key"] = api_key
        kwargs["http_async_client"] = _async_http_client(settings.timeout, connections)
        if base_url is not None:
            kwargs["base_url"] = base_url
    elif settings.base_url is not None:
        kwargs["base_url"] = settings.base_url
    try:
        model: BaseChatModel = init_chat_model(settings.spec, **kwargs)
    except (ValueError, ImportError) as exc:
        raise ConfigError(f"Cannot use model '{settings.spec}': {redact(str(exc))}") from exc
    return model


def _async_http_client(timeout: float, connections: int) -> Any:
    import httpx

    limits = httpx.Limits(max_connections=max(connections, 1) * 2, max_keepalive_connections=max(connections, 1) * 2)
    return httpx.AsyncClient(limits=limits, timeout=timeout, follow_redirects=True)


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
        model: BaseChatModel,
        settings: ModelSettings,
        *,
        concurrency: int = 16,
        max_failure_rate: float = 0.5,
        min_calls_for_budget: int = 20,
        slots: asyncio.Semaphore | None = None,
    ) -> None:
        if concurrency < 1:
            raise ConfigError(f"--concurrency must be at least 1, got {concurrency}.")
        self.model = model
        self.settings = settings
        self.stats = CallStats()
        # Clients of one run share `slots`, so --concurrency bounds all calls in flight together.
        self._slots = slots or asyncio.Semaphore(concurrency)
        self._max_failure_rate = max_failure_rate
        self._min_calls_for_budget = min_calls_for_budget

    async def aclose(self) -> None:
        """Close the model's HTTP connections (inside the event loop that used them)."""
        client = getattr(self.model, "http_async_client", None)
        if client is not None and hasattr(client, "aclose"):
            await client.aclose()

    @property
    def where(self) -> str:
        base = self.settings.base_url or os.environ.get("OPENAI_BASE_URL")
        return strip_userinfo(base) or f"the {self.settings.provider} API"

    async def complete(self, prompt: str, *, system: str | None = None) -> CallResult:
        """Send one user message (after an optional system message); return its reply or a recorded
        failure. Raises only when the whole run cannot go on (see `_failure`)."""
        messages: list[BaseMessage] = [HumanMessage(content=prompt)]
        if system is not None:
            messages.insert(0, SystemMessage(content=system))
        async with self._slots:
            self.stats.calls += 1
            try:
                message = await self.model.ainvoke(messages)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - every provider raises its own types; each is classified below
                return self._failure(exc)
        usage = _usage_of(message.usage_metadata)
        self.stats.succeeded += 1
        self.stats.input_tokens += usage.input_tokens
        self.stats.output_tokens += usage.output_tokens
        return CallResult(_text_of(message.content), usage, "", "")

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


def _usage_of(metadata: Any) -> Usage:
    if not metadata:
        return Usage()
    return Usage(
        input_tokens=int(metadata.get("input_tokens", 0) or 0),
        output_tokens=int(metadata.get("output_tokens", 0) or 0),
    )


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    # Some providers reply with a list of content blocks.
    parts = [part.get("text", "") if isinstance(part, dict) else str(part) for part in content]
    return "".join(parts)
