"""The HTTP transport of chat calls to OpenAI-compatible servers: one aiohttp session, with the
`openai` client's retry policy.

Why not the `openai` client's own `post`: every call there builds request options, copies them,
merges headers and query into new objects, parses the URL, and goes through an httpx-compatible
layer over aiohttp, which costs about 0.9 ms of CPU per call on these machines against 0.25 ms for
the same request sent on an aiohttp session directly. At 64 calls in flight to a fast server the
event loop is the bottleneck of an I/O-bound build, so that difference is most of a build's CPU per
call (see benchmarks/bench_scale.py and docs/benchmarks.md).

What stays the `openai` client's (DESIGN prefers its retries: this keeps its policy, not a new one):
- Where requests go and what they carry: what the client built by `backends.openai_client` reads
  (`Endpoint.of`): its base URL, its key's `Authorization` header and its default headers
  (organization, project, user agent, the `Authorization` of a URL's user-info), made without
  importing `openai` by `backends.openai_endpoint` (a test keeps the two equal); the URL's query
  parameters go with every request, as its `default_query` does.
- The body bytes: `json.dumps` with the client's settings, or orjson where it writes the same
  (`body_bytes`), so request bodies, and the stand-in's replies that are picked by them, do not change.
- The retry policy of `openai._base_client`: timeouts, refused and dropped connections, 408, 409,
  429 and 5xx are retried up to `max_retries` times; the wait is the server's `retry-after-ms` or
  `Retry-After` (seconds or a date) when it is over 0 and at most 2 minutes (a longer one is not
  retried), else 0.5 s doubling up to 8 s, less up to a quarter of jitter; a server's
  `x-should-retry: true|false` decides when sent. Each retry is logged as the client logs it
  ("Retrying request in X seconds"), which `qagen.llm.retries` counts for the progress line.

After the retries a call raises `ServerStatusError` (the status, headers and body),
`ServerUnreachableError` (a `ConnectionError`, raised from aiohttp's error, which `LLMClient` reads
to say what went wrong on the wire) or `ReplyTimeoutError` (also a `TimeoutError`); `LLMClient`
turns them into failures or a stop, as it did the client's own.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import math
import random
import time
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

import aiohttp
import orjson
from yarl import URL

_log = logging.getLogger(__name__)

# The openai client's constants (openai/_constants.py; tests/llm/test_transport.py compares them).
INITIAL_RETRY_DELAY = 0.5
MAX_RETRY_DELAY = 8.0
MAX_RETRY_AFTER_DELAY = 2 * 60.0

_RETRY_STATUSES = frozenset({408, 409, 429})
_RETRY_COUNT = "X-Stainless-Retry-Count"
_KEEPALIVE_SECONDS = 5.0
"""Idle connections closed after this (httpx's default, what the client used): servers that close
idle keep-alive connections after 5 s (uvicorn, so vLLM) do not race the pool for them."""


class ServerStatusError(Exception):
    """The server answered with an error status (after the retries the status allows)."""

    def __init__(self, status_code: int, headers: Mapping[str, str], content: bytes) -> None:
        text = content.decode("utf-8", errors="replace").strip()
        try:
            body: object = json.loads(text)
        except ValueError:
            body = text
        super().__init__(f"Error code: {status_code} - {body}")
        self.status_code = status_code
        self.headers = dict(headers)
        self.body = body


class ServerUnreachableError(ConnectionError):
    """No answer came back: the connection could not be made, or was lost (aiohttp's error is the cause)."""

    def __init__(self, message: str = "Connection error.") -> None:
        super().__init__(message)


class ReplyTimeoutError(ServerUnreachableError, TimeoutError):
    """No answer came back within the timeout."""

    def __init__(self) -> None:
        super().__init__("Request timed out.")


@dataclass(frozen=True)
class Endpoint:
    """Where chat requests go and the headers they carry."""

    url: str
    headers: dict[str, str]

    @classmethod
    def of(cls, client: Any) -> Endpoint:
        """The chat-completions endpoint of an `openai.AsyncOpenAI` client (inside the event loop:
        its headers name the async library running)."""
        url = f"{str(client.base_url).rstrip('/')}/chat/completions"
        if client.default_query:
            url = f"{url}?{urlencode(client.default_query)}"
        # Merged as the client merges them: its defaults (a user-info's `Authorization`) over the key's.
        merged = {**client.auth_headers, **client.default_headers}
        return cls(url, {name: value for name, value in merged.items() if isinstance(value, str)})


def body_bytes(body: Mapping[str, Any]) -> bytes:
    """A request body as the `openai` client serialises it (openai/_utils/_json.py `openapi_dumps`:
    `json.dumps`, compact, not ASCII-only, no NaN).

    orjson writes the same bytes for what a chat body holds (`_written_alike`), about three times as
    fast (most of a body is its prompt's text, escaped); a body holding anything else (a float,
    which orjson may write otherwise: `1e-05` as `0.00001`) is written by `json`, and so is one
    orjson refuses (a lone surrogate, an integer over 64 bits), which then raises as before."""
    if _written_alike(body):
        try:
            return orjson.dumps(body)
        except orjson.JSONEncodeError:
            return _json_bytes(body)  # what orjson refuses `json` writes or refuses, as the client would
    return _json_bytes(body)


def _json_bytes(body: Mapping[str, Any]) -> bytes:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def _written_alike(body: object) -> bool:
    """Strings, integers, booleans and null, in lists and in dicts with string keys: what orjson
    writes as `json.dumps(ensure_ascii=False, separators=(",", ":"))` does (tests/llm/test_transport.py)."""
    pending = [body]
    while pending:
        value = pending.pop()
        if value is None or isinstance(value, str | int):  # (booleans are integers)
            continue
        if isinstance(value, dict):
            for key in value:
                if not isinstance(key, str):
                    return False
            pending.extend(value.values())
        elif isinstance(value, list | tuple):
            pending.extend(value)
        else:
            return False
    return True


def should_retry(status: int, headers: Mapping[str, str]) -> bool:
    """Whether an error status is worth another attempt (`_should_retry` of the openai client)."""
    retry_after = retry_after_seconds(headers)
    if retry_after is not None and math.isfinite(retry_after) and retry_after > MAX_RETRY_AFTER_DELAY:
        return False
    told = headers.get("x-should-retry")
    if told in ("true", "false"):
        return told == "true"
    return status in _RETRY_STATUSES or status >= 500


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """The wait the server asks for: `retry-after-ms`, else `Retry-After` in seconds or as a date."""
    if headers is None:
        return None
    for name, divisor in (("retry-after-ms", 1000), ("retry-after", 1)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            delay = float(value)
        except ValueError:
            continue
        if delay == math.inf and value.strip().lower() not in ("inf", "+inf", "infinity", "+infinity"):
            return MAX_RETRY_AFTER_DELAY + 1  # an overflowing number is a long wait, not a malformed one
        return delay / divisor
    date = email.utils.parsedate_tz(headers.get("retry-after") or "")
    return None if date is None else email.utils.mktime_tz(date) - time.time()


def retry_delay(retries_taken: int, headers: Mapping[str, str] | None) -> float:
    """Seconds to wait before retry number `retries_taken + 1` (`_calculate_retry_timeout`)."""
    asked = retry_after_seconds(headers)
    if asked is not None and math.isfinite(asked) and 0 < asked <= MAX_RETRY_AFTER_DELAY:
        return asked
    backoff = min(INITIAL_RETRY_DELAY * pow(2.0, min(retries_taken, 1000)), MAX_RETRY_DELAY)
    return max(backoff * (1 - 0.25 * random.random()), 0.0)


def proxy_for(url: str) -> str | None:
    """The proxy the environment names for `url` (HTTP(S)_PROXY, ALL_PROXY, NO_PROXY), as httpx reads
    them; read once here, since aiohttp's `trust_env` looks them up in a thread for every request."""
    parts = urlsplit(url)
    if parts.hostname and urllib.request.proxy_bypass(parts.hostname):
        return None
    proxies = urllib.request.getproxies()
    return proxies.get(parts.scheme) or proxies.get("all")


class ChatTransport:
    """POSTs request bodies to one endpoint and returns the reply bodies (see the module)."""

    def __init__(self, endpoint: Endpoint, *, timeout: float, max_retries: int, connections: int) -> None:
        self.endpoint = endpoint
        self.max_retries = max_retries
        self._url = URL(endpoint.url, encoded=True)  # as given: no second quoting of the key's query
        self._proxy = proxy_for(endpoint.url)
        # The client's timeout, for each step (a free connection, connecting, each read) as httpx has it.
        self._timeout = aiohttp.ClientTimeout(total=None, connect=timeout, sock_connect=timeout, sock_read=timeout)
        # The session's own headers: aiohttp copies them per request at C speed, where headers given
        # with each request are merged one by one (only a retry's count is).
        self._headers = {**endpoint.headers, "X-Stainless-Read-Timeout": str(timeout), _RETRY_COUNT: "0"}
        self._connections = max(connections, 1) * 2
        self._session: aiohttp.ClientSession | None = None

    def _open(self) -> aiohttp.ClientSession:
        ssl: Any = True
        if self._url.scheme == "https":
            import httpx

            ssl = httpx.create_ssl_context()  # certifi's roots, or SSL_CERT_FILE / SSL_CERT_DIR, as the client's
        connector = aiohttp.TCPConnector(limit=self._connections, keepalive_timeout=_KEEPALIVE_SECONDS, ssl=ssl)
        # No cookies (an API sets none worth keeping), no per-request environment lookups.
        self._session = aiohttp.ClientSession(
            connector=connector, cookie_jar=aiohttp.DummyCookieJar(), headers=self._headers, timeout=self._timeout
        )
        return self._session

    async def post(self, request_body: Mapping[str, Any]) -> bytes:
        """The reply body of a successful status; raises (see the module) when the retries run out."""
        body = body_bytes(request_body)
        session = self._session or self._open()
        retries_taken = 0
        while True:
            last = retries_taken >= self.max_retries
            headers = {_RETRY_COUNT: str(retries_taken)} if retries_taken else None
            try:
                async with session.post(self._url, data=body, headers=headers, proxy=self._proxy) as response:
                    content = await response.read()
            except asyncio.TimeoutError as exc:
                if last:
                    raise ReplyTimeoutError from exc
                await self._wait(retries_taken, None)
            except aiohttp.InvalidURL:
                raise  # no server could answer this: not a connection problem, never retried
            except aiohttp.ClientError as exc:
                if last:
                    raise ServerUnreachableError from exc
                await self._wait(retries_taken, None)
            else:
                if 200 <= response.status < 300:
                    return content
                if last or not should_retry(response.status, response.headers):
                    raise ServerStatusError(response.status, response.headers, content)
                await self._wait(retries_taken, response.headers)
            retries_taken += 1

    async def _wait(self, retries_taken: int, headers: Mapping[str, str] | None) -> None:
        delay = retry_delay(retries_taken, headers)
        _log.info("Retrying request in %f seconds (retry %i of %s)", delay, retries_taken + 1, self.max_retries)
        await asyncio.sleep(delay)

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
