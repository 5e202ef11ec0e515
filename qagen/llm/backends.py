"""Chat model backends: how one prompt becomes one reply, for OpenAI-compatible servers and for any
LangChain chat model.

A model is named by LangChain's `provider:model` spec. `openai:*` (OpenAI itself, and every
OpenAI-compatible server: vLLM, Ollama, llama.cpp, TGI) goes through the official `openai` client
directly, on aiohttp's transport; every other provider goes through LangChain's
`init_chat_model`. Both keep the library's own retries with backoff on 429/5xx, timeouts and
dropped connections, honouring `Retry-After` (`max_retries`).

Why the direct path: at 32 calls in flight LangChain's per-call work (callbacks, message
conversion, the SDK's typed request transformation and response models) costs about 3 ms of CPU
per call on these machines, against 1.3 ms for the SDK's raw `post`; the event loop then becomes
the bottleneck of an I/O-bound pipeline (see benchmarks/bench_build.py).
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, field_serializer, field_validator

from qagen.errors import ConfigError, LLMUnavailableError
from qagen.llm.normalise import normalise_reply
from qagen.llm.server_url import ServerURL, split_server_url
from qagen.llm.task import Reply, Request
from qagen.records import Usage
from qagen.redaction import redact, redact_url, register_secret

# A key that OpenAI-compatible servers without authentication accept (vLLM, Ollama, llama.cpp).
_NO_KEY_PLACEHOLDER = "EMPTY"
DEFAULT_KEY_ENV = "OPENAI_API_KEY"
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


DEFAULT_MAX_OUTPUT_TOKENS = 2048
"""Tokens per reply unless a role's settings say otherwise: a factoid, a verdict or a short answer
takes well under 300, and 2048 leaves room for a reasoning model's thinking before it; raise it
(`max_output_tokens`) for models that think at length, when replies come back `truncated`."""


class ModelSettings(BaseModel):
    """How to reach one model."""

    model_config = ConfigDict(frozen=True)

    spec: str
    base_url: str | None = None
    temperature: float | None = None
    max_output_tokens: int | None = None
    """Cap on tokens per reply; None means `DEFAULT_MAX_OUTPUT_TOKENS` (see `output_cap`)."""
    timeout: float = 120.0
    max_retries: int = 6
    rpm: float | None = None
    api_key_env: str | None = None
    """The name of the environment variable that holds this model's key (never the key itself:
    settings are saved in run.json and summary.json). None: the provider's own variable
    (OPENAI_API_KEY for `openai:*`)."""

    @field_validator("api_key_env")
    @classmethod
    def _a_variable_name(cls, name: str | None) -> str | None:
        # A key pasted here by mistake would be saved with the settings: refuse it, without echoing it.
        if name is not None and not is_variable_name(name):
            raise ConfigError(
                f"`api_key_env` is the name of the environment variable that holds the key (such as "
                f"{DEFAULT_KEY_ENV}), not the key; got {len(name)} characters that are no variable name.",
                settings=("api_key_env",),
            )
        return name

    @field_serializer("base_url")
    def _without_credentials(self, base_url: str | None) -> str | None:
        # Settings are saved in run.json and summary.json: never the URL's `user:key@` or `?api-key=`.
        return redact_url(base_url)

    @property
    def output_cap(self) -> int:
        """The cap sent with every request: a runaway reply (a small local model repeating itself)
        stops there instead of running for minutes; a reply cut at the cap is recorded `truncated`."""
        return self.max_output_tokens or DEFAULT_MAX_OUTPUT_TOKENS

    @property
    def provider(self) -> str:
        return self.spec.split(":", 1)[0] if ":" in self.spec else "openai"

    @property
    def name(self) -> str:
        return self.spec.split(":", 1)[1] if ":" in self.spec else self.spec


class ChatBackend(Protocol):
    """Sends one request and returns the reply; raises on failure (the client classifies it)."""

    async def reply(self, request: Request) -> Reply: ...

    async def aclose(self) -> None: ...


class OpenAIBackend:
    """Chat completions through the official `openai` client's generic `post` (retries included)."""

    def __init__(self, settings: ModelSettings, *, connections: int) -> None:
        self.settings = settings
        self._client = openai_client(settings, connections=connections)

    async def reply(self, request: Request) -> Reply:
        import httpx

        # `cast_to=httpx.Response` skips the SDK's typed parsing; errors and retries stay the SDK's.
        response = await self._client.post(
            "/chat/completions", body=chat_body(self.settings, request), cast_to=httpx.Response
        )
        return parse_completion(response.content)

    async def aclose(self) -> None:
        await self._client.close()


def openai_client(settings: ModelSettings, *, connections: int) -> Any:
    """The `openai.AsyncOpenAI` client for an `openai:*` model: its server (query keys and user-info
    as `qagen.llm.server_url` takes them apart), key, retries and timeout."""
    import openai

    server = split_server_url(settings.base_url or os.environ.get("OPENAI_BASE_URL") or None)
    api_key = _key_beside(server, settings)
    if not api_key:
        if server.address is None:
            raise LLMUnavailableError(
                f"No API key for '{settings.spec}': set {DEFAULT_KEY_ENV}, or point `base_url` at an "
                "OpenAI-compatible server.",
                settings=("base_url",),
            )
        api_key = _NO_KEY_PLACEHOLDER
    # The user-info's header replaces the one the client makes from `api_key` (a placeholder then).
    headers = {"Authorization": server.authorization} if server.authorization else None
    return openai.AsyncOpenAI(
        api_key=api_key,
        base_url=server.address,
        default_query=server.query or None,
        default_headers=headers,
        timeout=settings.timeout,
        max_retries=settings.max_retries,
        http_client=_async_http_client(settings.timeout, connections),
    )


def chat_body(settings: ModelSettings, request: Request) -> dict[str, Any]:
    """The chat-completions body of one request: online calls and batch lines send exactly this."""
    body: dict[str, Any] = {"model": settings.name}
    if settings.temperature is not None:
        body["temperature"] = settings.temperature
    body["max_tokens"] = settings.output_cap
    body["messages"] = [{"role": message.role, "content": message.content} for message in request]
    return body


class MalformedCompletionError(ValueError):
    """The server answered 200 with a body that is not a chat completion."""


def parse_completion(body: bytes) -> Reply:
    """The reply in a chat-completion body, normalised (online replies and batch output lines alike)."""
    try:
        data = json.loads(body)
        choice = data["choices"][0]
        message = choice["message"]
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise MalformedCompletionError(f"not a chat completion: {body[:200]!r}") from exc
    usage = data.get("usage") or {}
    # vLLM's and llama.cpp's reasoning parsers say `reasoning_content`; some servers `reasoning`.
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    return normalise_reply(
        _valid_text(message.get("content") or ""),
        Usage(
            input_tokens=int(usage.get("prompt_tokens") or 0),
            output_tokens=int(usage.get("completion_tokens") or 0),
        ),
        reasoning_content=_valid_text(reasoning) if isinstance(reasoning, str) else None,
        finish_reason=choice.get("finish_reason"),
    )


class LangChainBackend:
    """Any LangChain chat model: built from a spec (`init_chat_model`), or one you made yourself."""

    def __init__(self, model: Any) -> None:
        self.model = model

    @classmethod
    def from_settings(cls, settings: ModelSettings) -> LangChainBackend:
        from langchain.chat_models import init_chat_model

        kwargs: dict[str, Any] = {"timeout": settings.timeout, "max_retries": settings.max_retries}
        if settings.temperature is not None:
            kwargs["temperature"] = settings.temperature
        kwargs["max_tokens"] = settings.output_cap
        if settings.base_url is not None:
            if split_server_url(settings.base_url).authorization is not None:
                # Each provider's package builds its own headers: none takes them from the URL.
                raise ConfigError(
                    f"Credentials in the server URL (`user:key@`) work with openai:* models only; for "
                    f"'{settings.spec}', remove them from `base_url` and name the key's variable in `api_key_env`.",
                    settings=("base_url", "api_key_env"),
                )
            # As given, query included: the provider's package decides how to send it.
            kwargs["base_url"] = settings.base_url
        api_key = api_key_of(settings)
        if api_key is not None:
            kwargs["api_key"] = api_key
        try:
            return cls(init_chat_model(settings.spec, **kwargs))
        except (ValueError, ImportError) as exc:
            raise ConfigError(f"Cannot use model '{settings.spec}': {redact(str(exc))}") from exc

    async def reply(self, request: Request) -> Reply:
        from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

        messages: list[BaseMessage] = [
            SystemMessage(content=message.content)
            if message.role == "system"
            else HumanMessage(content=message.content)
            for message in request
        ]
        message = await self.model.ainvoke(messages)
        metadata = message.usage_metadata or {}
        usage = Usage(
            input_tokens=int(metadata.get("input_tokens", 0) or 0),
            output_tokens=int(metadata.get("output_tokens", 0) or 0),
        )
        reasoning = message.additional_kwargs.get("reasoning_content")
        return normalise_reply(
            _valid_text(_text_of(message.content)),
            usage,
            reasoning_content=_valid_text(reasoning) if isinstance(reasoning, str) else None,
            finish_reason=(message.response_metadata or {}).get("finish_reason"),
        )

    async def aclose(self) -> None:
        """LangChain models own no connections that must be closed here."""


def is_variable_name(name: str) -> bool:
    """Whether `name` can name an environment variable and is not shaped like a key itself."""
    return _ENV_NAME.fullmatch(name) is not None and redact(name) == name


def api_key_of(settings: ModelSettings) -> str | None:
    """The model's key: from `api_key_env` when set (an error if that variable is not), else from
    OPENAI_API_KEY for `openai:*` and None for other providers (their packages read their own).

    A key read from a variable of the user's choosing is registered with `redact`, which knows only
    the usual variables by itself: a server quoting it back in an error must not get it written.
    """
    if settings.api_key_env is None:
        return os.environ.get(DEFAULT_KEY_ENV) if settings.provider == "openai" else None
    api_key = os.environ.get(settings.api_key_env)
    if not api_key:
        raise LLMUnavailableError(
            f"No API key for '{settings.spec}': the environment variable {settings.api_key_env} is not set."
        )
    register_secret(api_key)
    return api_key


def _key_beside(server: ServerURL, settings: ModelSettings) -> str | None:
    """The key for the client's own `Authorization` header: none when the URL's user-info gives the
    header (a key from `OPENAI_API_KEY` would be a second, conflicting one), an error when a key
    variable was also named (which of the two is meant cannot be told)."""
    if server.authorization is None:
        return api_key_of(settings)
    if settings.api_key_env is not None:
        raise ConfigError(
            f"The `base_url` of '{settings.spec}' carries credentials (`user:key@`) and `api_key_env` names "
            "a key as well; keep one of them.",
            settings=("base_url", "api_key_env"),
        )
    return None


def build_backend(settings: ModelSettings, *, connections: int = 100) -> ChatBackend:
    """The backend for a model spec: the direct OpenAI client for `openai:*`, else LangChain."""
    if settings.provider == "openai":
        return OpenAIBackend(settings, connections=connections)
    return LangChainBackend.from_settings(settings)


def _async_http_client(timeout: float, connections: int) -> Any:
    """An httpx-compatible client on aiohttp's transport (what OpenAI's `DefaultAioHttpClient` is).

    httpcore's pool scans every pooled connection for each request, which at 32+ calls in flight
    costs more CPU than the rest of the pipeline together; aiohttp's connector does not. Created
    per run, inside its event loop: a client shared across event loops breaks ("Event loop is
    closed") when a notebook runs two builds.
    """
    import httpx
    from httpx_aiohttp import HttpxAiohttpClient

    pool = max(connections, 1) * 2
    limits = httpx.Limits(max_connections=pool, max_keepalive_connections=pool)
    return HttpxAiohttpClient(timeout=timeout, follow_redirects=True, limits=limits)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _valid_text(text: str) -> str:
    """The reply with lone surrogates (half an emoji, cut by a server) replaced by U+FFFD.

    They cannot be encoded as UTF-8, so saving the record would fail; the rest of the reply is kept.
    """
    return _LONE_SURROGATE.sub("\ufffd", text)


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    # Some providers reply with a list of content blocks.
    return "".join(part.get("text", "") if isinstance(part, dict) else str(part) for part in content)
