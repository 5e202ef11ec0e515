"""A RAG system behind HTTP: `POST {"question": ...}` to a URL, with retries, read by `parse_reply`.

A question the endpoint fails is recorded (`rate_limited`, `server_error: ...`, `timeout`, ...);
only an endpoint that cannot be used at all (refused connections, a wrong URL or credentials before
any good reply) raises a `QagenError` with one clear sentence.
"""

from __future__ import annotations

import asyncio
import email.utils
import time
from collections.abc import Mapping

import httpx

from qagen.call_policy import CallPolicy
from qagen.errors import ConfigError, QagenError
from qagen.evaluate.records import RagOutput
from qagen.evaluate.systems.replies import BadReply, parse_reply
from qagen.redaction import redact, redact_url

__all__ = ["EndpointSystem"]

_EXCERPT = 200
# A server asking for a longer pause than this is treated as asking for this long.
_MAX_RETRY_AFTER = 300.0


class EndpointSystem:
    """A RAG system behind HTTP: `POST url` with `{"question": ...}`, replying with `parse_reply`'s JSON.

    Waits `policy.timeout` seconds for a reply and retries 429, 5xx, timeouts and dropped connections
    up to `policy.max_retries` times, with exponential backoff (`CallPolicy.delay`) or the server's
    `Retry-After`: the same timeout and retries as every other client. A question that
    still fails is recorded (`rate_limited`, `server_error: ...`, `timeout`, `connection_error`,
    `http_error: ...`, `bad_response: ...`). Raises `QagenError` only when the endpoint cannot be
    used at all: refused connections on every attempt, or 401/403/404/405, before any good reply.
    """

    def __init__(
        self,
        url: str,
        *,
        policy: CallPolicy | None = None,
        headers: Mapping[str, str] | None = None,
        name: str | None = None,
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"The RAG endpoint must be an http:// or https:// URL, got '{redact_url(url)}'.")
        self.url = url
        self.policy = policy or CallPolicy()
        self._headers = dict(headers or {})
        self._name = name or redact_url(url) or url
        self._client: httpx.AsyncClient | None = None
        self._answered = 0

    @property
    def name(self) -> str:
        return self._name

    @property
    def _where(self) -> str:
        return redact_url(self.url) or self.url

    async def aclose(self) -> None:
        """Close the HTTP connections (in the event loop that opened them)."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def _http(self) -> httpx.AsyncClient:
        # Made on first use, inside the running event loop: an httpx client belongs to one loop.
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self.policy.timeout, headers=self._headers)
        return self._client

    async def answer(self, question: str) -> RagOutput:
        error = ""
        all_refused = True
        policy = self.policy
        for attempt in range(policy.attempts):
            wait = policy.delay(attempt)
            try:
                response = await self._http().post(self.url, json={"question": question})
            except httpx.ConnectError as exc:
                error = f"connection_error: {type(exc).__name__}"
            except httpx.TimeoutException:
                error, all_refused = "timeout", False
            except httpx.TransportError as exc:  # dropped connection, protocol error
                error, all_refused = f"connection_error: {type(exc).__name__}", False
            else:
                all_refused = False
                status = response.status_code
                if status != 429 and status < 500:
                    return self._read(response)
                error = "rate_limited" if status == 429 else f"server_error: {status} {_excerpt(response.text)}"
                asked = _retry_after(response)
                if asked is not None:
                    wait = asked
            if attempt < policy.max_retries:
                await asyncio.sleep(wait)
        if all_refused and self._answered == 0:
            raise QagenError(
                f"Cannot reach the RAG endpoint at {self._where} (connection refused after "
                f"{policy.attempts} attempts); is the server running and is the URL right?"
            )
        return RagOutput(answer=None, error=error.rstrip())

    def _read(self, response: httpx.Response) -> RagOutput:
        status = response.status_code
        if status >= 400:
            if status in (401, 403, 404, 405) and self._answered == 0:
                # Before any good reply these mean a wrong URL or credentials: every question would fail.
                raise QagenError(
                    f"The RAG endpoint at {self._where} answered {status} {response.reason_phrase}; "
                    "check the URL and any credentials."
                )
            return RagOutput(answer=None, error=f"http_error: {status} {_excerpt(response.text)}".rstrip())
        try:
            payload = response.json()
        except ValueError:  # json.JSONDecodeError and undecodable bytes
            return RagOutput(answer=None, error=f"bad_response: not JSON: {_excerpt(response.text)}".rstrip())
        try:
            output = parse_reply(payload)
        except BadReply as exc:
            return RagOutput(answer=None, error=f"bad_response: {exc}")
        self._answered += 1
        return output


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return redact(flat if len(flat) <= _EXCERPT else flat[:_EXCERPT] + "...")


def _retry_after(response: httpx.Response) -> float | None:
    """The pause the server asked for (seconds or an HTTP date), capped; None if it asked none."""
    value = response.headers.get("retry-after")
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - time.time()
    return min(max(seconds, 0.0), _MAX_RETRY_AFTER)
