"""Chat model backends: how one prompt becomes one reply, for OpenAI-compatible servers and for any
LangChain chat model.

A model is named by LangChain's `provider:model` spec. `openai:*` (OpenAI itself, and every
OpenAI-compatible server: vLLM, Ollama, llama.cpp, TGI) goes directly to the server: the official
`openai` client says where and with which headers, and `qagen.llm.transport` sends, with that
client's retry policy; every other provider goes through LangChain's `init_chat_model`. Both retry
with backoff on 429/5xx, timeouts and dropped connections, honouring `Retry-After` (`max_retries`).

Why the direct path: at 32 calls in flight LangChain's per-call work (callbacks, message
conversion, the SDK's typed request transformation and response models) costs about 3 ms of CPU
per call on these machines, the SDK's raw `post` about 0.9 ms, and the lean transport 0.25 ms; the
event loop is the bottleneck of an I/O-bound pipeline (see benchmarks/bench_build.py and
benchmarks/bench_scale.py).
"""

from __future__ import annotations

import functools
import os
import platform
import re
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlencode, urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator, model_validator

from qagen.call_policy import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT
from qagen.errors import ConfigError, LLMUnavailableError
from qagen.llm.completions import MalformedCompletionError as MalformedCompletionError
from qagen.llm.completions import chat_body as chat_body
from qagen.llm.completions import parse_completion as parse_completion
from qagen.llm.completions import valid_text
from qagen.llm.normalise import normalise_reply
from qagen.llm.server_url import ServerURL, split_server_url
from qagen.llm.task import Reply, Request
from qagen.records import Usage
from qagen.redaction import redact, redact_url, register_secret

if TYPE_CHECKING:
    from qagen.llm.transport import Endpoint

# A key that OpenAI-compatible servers without authentication accept (vLLM, Ollama, llama.cpp).
_NO_KEY_PLACEHOLDER = "EMPTY"
DEFAULT_MODEL = "openai:gpt-4o-mini"
"""The model of every role a run does not name one for."""
DEFAULT_KEY_ENV = "OPENAI_API_KEY"
OPENAI_HOST = "api.openai.com"
"""The host of OpenAI's own API: the server the known prices (`qagen.llm.cost.KNOWN_PRICES`) are of."""
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_KEY_FIELDS = frozenset({"api_key", "key", "openai_api_key", "token", "secret"})
"""Fields a key is given as elsewhere (LangChain's `api_key`, `openai_api_key`), refused by name."""


DEFAULT_MAX_OUTPUT_TOKENS = 2048
"""Tokens per reply unless a role's settings say otherwise: a factoid, a verdict or a short answer
takes well under 300, and 2048 leaves room for a reasoning model's thinking before it; raise it
(`max_output_tokens`) for models that think at length, when replies come back `truncated`."""


class ModelSettings(BaseModel):
    """How to reach one model."""

    # The docstrings are the fields' descriptions: the config file's documentation is generated from them.
    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True, extra="forbid")

    spec: str
    """The model, as LangChain's `provider:model` (such as openai:gpt-4o-mini)."""
    base_url: str | None = None
    """URL of an OpenAI-compatible server (vLLM, Ollama, llama.cpp, TGI), such as
    http://localhost:8000/v1 (None: the provider's own, or OPENAI_BASE_URL)."""
    temperature: float | None = None
    """Sampling temperature (None: the model's own)."""
    max_output_tokens: int | None = None
    """Cap on tokens per reply; a reply cut at the cap is recorded as truncated (None: 2048, room for a
    reasoning model's thinking; see `DEFAULT_MAX_OUTPUT_TOKENS`)."""
    top_logprobs: int | None = Field(default=None, ge=0, le=20)
    """Ask for each written token's N likeliest alternatives (OpenAI's `logprobs`/`top_logprobs`,
    which vLLM and llama.cpp's server return too), so verdicts are read as probabilities: a critic's
    rating as its expectation over the rating tokens, a yes/no as P(yes). None or 0: not asked (a
    build's critic asks for 5 unless set; a server that sends none falls back to the written verdict)."""
    timeout: float = DEFAULT_TIMEOUT
    """Seconds to wait for one reply."""
    max_retries: int = DEFAULT_MAX_RETRIES
    """Retries per call on 429, 5xx, timeouts and dropped connections, with backoff honouring Retry-After."""
    rpm: float | None = None
    """Requests-per-minute limit (None: none)."""
    api_key_env: str | None = None
    """The name of the environment variable that holds this model's key (never the key itself:
    settings are saved in run.json and summary.json). None: the provider's own variable
    (OPENAI_API_KEY for `openai:*`)."""

    @model_validator(mode="before")
    @classmethod
    def _no_key(cls, fields: Any) -> Any:
        # A key given here would be saved with the settings (or, refused as an unknown field, shown
        # in pydantic's message): named, never echoed.
        if isinstance(fields, dict):
            given = sorted(name for name in fields if name in _KEY_FIELDS)
            if given:
                raise ConfigError(
                    f"`ModelSettings` takes no key (`{given[0]}`): settings are saved in run.json and "
                    "summary.json. Put the key in an environment variable and give its name as `api_key_env`.",
                    settings=("api_key_env",),
                )
        return fields

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
    def on_own_server(self) -> bool:
        """Served by a server other than its provider's (`base_url`, or `OPENAI_BASE_URL` for an `openai:`
        model, naming another host: llama.cpp, vLLM, Ollama): that server answers with a model of its
        own whatever the name, so the provider's price is not what it costs."""
        url = self.base_url or (os.environ.get("OPENAI_BASE_URL") if self.provider == "openai" else None)
        return bool(url) and urlsplit(url).hostname != OPENAI_HOST

    @property
    def name(self) -> str:
        return self.spec.split(":", 1)[1] if ":" in self.spec else self.spec


class ChatBackend(Protocol):
    """Sends one request and returns the reply; raises on failure (the client classifies it)."""

    async def reply(self, request: Request) -> Reply: ...

    async def aclose(self) -> None: ...


class OpenAIBackend:
    """Chat completions to an OpenAI-compatible server: the `openai` client's endpoint, headers
    (`openai_endpoint`) and retry policy, on qagen's own lean transport (`qagen.llm.transport` says why)."""

    def __init__(self, settings: ModelSettings, *, connections: int) -> None:
        from qagen.llm.transport import ChatTransport

        self.settings = settings
        self._logprobs_refused = False
        self._transport = ChatTransport(
            openai_endpoint(settings),
            timeout=settings.timeout,
            max_retries=settings.max_retries,
            connections=connections,
        )

    async def reply(self, request: Request) -> Reply:
        from qagen.llm.transport import ServerStatusError

        body = chat_body(self.settings, request)
        if self._logprobs_refused:
            body = without_logprobs(body)
        try:
            return parse_completion(await self._transport.post(body))
        except ServerStatusError as exc:
            # Some models refuse the parameter (OpenAI's reasoning models answer 400): ask again without
            # it, from now on, and the verdicts are read as written (the build says so once).
            if "logprobs" not in body or exc.status_code != 400 or "logprobs" not in str(exc.body):
                raise
            self._logprobs_refused = True
            return parse_completion(await self._transport.post(without_logprobs(body)))

    async def aclose(self) -> None:
        await self._transport.aclose()


def without_logprobs(body: dict[str, Any]) -> dict[str, Any]:
    """A chat body that does not ask for token log probabilities."""
    return {key: value for key, value in body.items() if key not in ("logprobs", "top_logprobs")}


def openai_client(settings: ModelSettings, *, connections: int | None) -> Any:
    """The `openai.AsyncOpenAI` client for an `openai:*` model: its server (query keys and user-info
    as `qagen.llm.server_url` takes them apart), key, retries and timeout; `connections`: the size
    of its HTTP pool on aiohttp's transport, None for the client's default pool."""
    import openai

    server, api_key = _openai_server_and_key(settings)
    # The user-info's header replaces the one the client makes from `api_key` (a placeholder then).
    headers = {"Authorization": server.authorization} if server.authorization else None
    return openai.AsyncOpenAI(
        api_key=api_key,
        base_url=server.address,
        default_query=server.query or None,
        default_headers=headers,
        timeout=settings.timeout,
        max_retries=settings.max_retries,
        http_client=_async_http_client(settings.timeout, connections) if connections is not None else None,
    )


def openai_endpoint(settings: ModelSettings) -> Endpoint:
    """Where `openai_client(settings)` sends chat completions, with the headers it sends
    (`transport.Endpoint.of` of that client), made without importing `openai`.

    Why: `import openai` and its client take about 0.4 s of CPU before a build's first call
    (benchmarks/bench_build_timeline.py), for a URL and a few headers. The client's own environment
    variables apply as they do in it (OPENAI_BASE_URL, OPENAI_ORG_ID, OPENAI_PROJECT_ID; the key as
    `_openai_server_and_key` finds it); `tests/llm/test_transport.py` compares the two endpoints
    under each of them, so a new `openai` that sends something else fails there.
    """
    from qagen.llm.transport import Endpoint

    server, api_key = _openai_server_and_key(settings)
    address = server.address or _OPENAI_BASE_URL  # OPENAI_BASE_URL is read into `server` when set
    url = f"{address.rstrip('/')}/chat/completions"
    if server.query:
        url = f"{url}?{urlencode(server.query)}"
    version = _openai_version()
    headers = {
        "Authorization": f"Bearer {api_key}",
        "Accept": "application/json",
        "Content-Type": "application/json",
        "User-Agent": f"AsyncOpenAI/Python {version}",
        **_stainless_headers(version),
        "X-Stainless-Async": "async:asyncio",  # the client's, inside the asyncio loop every backend runs in
    }
    for name, variable in (("OpenAI-Organization", "OPENAI_ORG_ID"), ("OpenAI-Project", "OPENAI_PROJECT_ID")):
        if (value := os.environ.get(variable)) is not None:
            headers[name] = value
    if server.authorization:  # the user-info's header replaces the key's, as the client's default headers do
        headers["Authorization"] = server.authorization
    return Endpoint(url, headers)


_OPENAI_BASE_URL = "https://api.openai.com/v1"


@functools.cache
def _openai_version() -> str:
    import importlib.metadata

    return importlib.metadata.version("openai")


@functools.cache
def _stainless_headers(version: str) -> dict[str, str]:
    """The platform headers of the `openai` client (`openai._base_client.platform_headers`)."""
    machine = platform.machine().lower()
    arch = {"arm64": "arm64", "aarch64": "arm64", "arm": "arm", "x86_64": "x64"}.get(machine)
    if arch is None:
        arch = "x32" if sys.maxsize <= 2**32 else (f"other:{machine}" if machine else "unknown")
    return {
        "X-Stainless-Lang": "python",
        "X-Stainless-Package-Version": version,
        "X-Stainless-OS": _stainless_os(),
        "X-Stainless-Arch": arch,
        "X-Stainless-Runtime": platform.python_implementation(),
        "X-Stainless-Runtime-Version": platform.python_version(),
    }


def _stainless_os() -> str:
    """The operating system as the `openai` client names it (`openai._base_client.get_platform`), which
    looks for a device's name in `platform.platform()`: here in the parts of it that can hold one, since
    the whole string runs `uname -p` in a subprocess on Linux."""
    system = platform.system().lower()
    name = "-".join((platform.release(), platform.version(), platform.machine())).lower()
    if "iphone" in name or "ipad" in name:
        return "iOS"
    named = {"darwin": "MacOS", "windows": "Windows"}.get(system)
    if named is not None:
        return named
    if "android" in name:
        return "Android"
    if system in ("freebsd", "openbsd") or system == "linux":
        try:
            distro = platform.freedesktop_os_release().get("ID", "").lower() if system == "linux" else system
        except OSError:
            distro = ""
        return {"freebsd": "FreeBSD", "openbsd": "OpenBSD"}.get(distro, "Linux")
    whole = platform.platform().lower()
    return f"Other:{whole}" if whole else "Unknown"


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
        usage = langchain_usage(message.usage_metadata)
        reasoning = message.additional_kwargs.get("reasoning_content")
        return normalise_reply(
            valid_text(_text_of(message.content)),
            usage,
            reasoning_content=valid_text(reasoning) if isinstance(reasoning, str) else None,
            finish_reason=(message.response_metadata or {}).get("finish_reason"),
        )

    async def aclose(self) -> None:
        """LangChain models own no connections that must be closed here."""


def langchain_usage(metadata: Mapping[str, Any] | None) -> Usage:
    """The tokens a LangChain message reports (`usage_metadata`); the cached part of the input is its
    `input_token_details.cache_read` (what each provider's package reads from its own reply)."""
    metadata = metadata or {}
    details = metadata.get("input_token_details") or {}
    input_tokens = int(metadata.get("input_tokens", 0) or 0)
    return Usage(
        input_tokens=input_tokens,
        output_tokens=int(metadata.get("output_tokens", 0) or 0),
        cached_input_tokens=min(int(details.get("cache_read", 0) or 0), input_tokens),
    )


def _openai_server_and_key(settings: ModelSettings) -> tuple[ServerURL, str]:
    """Where an `openai:*` model is and the key its client sends; `LLMUnavailableError` when there is no key
    for OpenAI itself (a server of one's own needs none: it gets a placeholder)."""
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
    return server, api_key


def require_key(settings: ModelSettings) -> None:
    """Raise now the error a missing key raises at the model's first call (`LLMUnavailableError`), so
    that a command finds out before long work (chunking a whole corpus) rather than after it."""
    if settings.provider == "openai":
        _openai_server_and_key(settings)
    else:
        api_key_of(settings)  # a variable named in `api_key_env` that is not set; providers check their own


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


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    # Some providers reply with a list of content blocks.
    return "".join(part.get("text", "") if isinstance(part, dict) else str(part) for part in content)
