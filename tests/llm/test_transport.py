"""The lean transport of `openai:*` chat calls keeps what the `openai` client did: the same request
bytes and credentials, its retry policy (compared with the client's own code), and errors that
`LLMClient` classifies as before."""

from __future__ import annotations

import asyncio
import logging
import random
import socket
import time
from collections.abc import Iterator
from email.utils import formatdate
from typing import Any

import httpx2
import openai
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from openai import _constants
from openai._models import FinalRequestOptions
from openai._utils._json import openapi_dumps

from qagen.llm import transport
from qagen.llm.backends import ModelSettings, chat_body, openai_client, openai_endpoint
from qagen.llm.retries import retry_count
from qagen.llm.task import user_request
from qagen.llm.transport import (
    ChatTransport,
    Endpoint,
    ReplyTimeoutError,
    ServerStatusError,
    ServerUnreachableError,
    body_bytes,
    proxy_for,
    retry_delay,
    should_retry,
)
from standins.llm.server import StandInLLM


def _causes(exc: BaseException) -> Iterator[BaseException]:
    current: BaseException | None = exc
    while current is not None:
        yield current
        current = current.__cause__ or current.__context__


async def _post(settings: ModelSettings, body: dict[str, Any]) -> bytes:
    chat = ChatTransport(
        Endpoint.of(openai_client(settings, connections=None)),
        timeout=settings.timeout,
        max_retries=settings.max_retries,
        connections=4,
    )
    try:
        return await chat.post(body)
    finally:
        await chat.aclose()


def _settings(server: StandInLLM, **overrides: Any) -> ModelSettings:
    return ModelSettings(spec="openai:stand-in", base_url=server.base_url, **overrides)


# --------------------------------------------------------------------------- the same requests


# Keys and credentials unlike any text a test prints: `redact` hides each one read from now on, in the whole process.
_KEY = "sk-endpoint-test-key-1"


@pytest.mark.parametrize(
    ("base_url", "environment", "key_variable"),
    [
        ("http://127.0.0.1:9/v1", {"OPENAI_API_KEY": _KEY}, None),
        ("http://127.0.0.1:9/v1/", {}, None),  # no key: a server of one's own gets the placeholder
        (None, {"OPENAI_API_KEY": _KEY, "OPENAI_BASE_URL": "http://gateway.test:8080/openai/v1"}, None),
        (None, {"OPENAI_API_KEY": _KEY, "OPENAI_ORG_ID": "org-1", "OPENAI_PROJECT_ID": "proj-2"}, None),
        (
            "https://gateway.test/v1?api-version=2024-06-01&api-key=endpoint-test-query-key",
            {"OPENAI_API_KEY": _KEY},
            None,
        ),
        ("http://endpoint-test-user:endpoint-test-password@127.0.0.1:9/v1", {"OPENAI_ORG_ID": "org-1"}, None),
        ("http://sk-endpoint-test-in-url@127.0.0.1:9/v1", {}, None),
        (
            "http://127.0.0.1:9/v1",
            {"ENDPOINT_TEST_KEY": "sk-endpoint-test-own-key", "OPENAI_API_KEY": _KEY},
            "ENDPOINT_TEST_KEY",
        ),
    ],
)
def test_the_endpoint_is_the_openai_client_s(
    monkeypatch: pytest.MonkeyPatch, base_url: str | None, environment: dict[str, str], key_variable: str | None
) -> None:
    """What a build sends to (made without importing `openai`) is what the client would send to."""
    for variable in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"):
        monkeypatch.delenv(variable, raising=False)
    for variable, value in environment.items():
        monkeypatch.setenv(variable, value)
    settings = ModelSettings(spec="openai:gpt-4o-mini", base_url=base_url, api_key_env=key_variable)

    async def clients() -> Endpoint:  # inside a loop: the client's headers name the async library running
        client = openai_client(settings, connections=None)
        try:
            return Endpoint.of(client)
        finally:
            await client.close()

    assert openai_endpoint(settings) == asyncio.run(clients())


def test_request_bodies_are_the_bytes_the_openai_client_sends(llm: StandInLLM) -> None:
    settings = _settings(llm, temperature=0.25)
    request = user_request(
        "Context: Ünïcode — “quotes”, a\nnew line, a tab\t, emoji 🦜 and \\ slash.", system="Be brief."
    )
    body = chat_body(settings, request)

    async def both() -> None:
        client = openai_client(settings, connections=2)
        try:
            await client.post("/chat/completions", body=body, cast_to=httpx2.Response)
        finally:
            await client.close()
        await _post(settings, body)

    asyncio.run(both())
    assert list(llm.requests_by_body().values()) == [2]  # one body, sent twice, byte for byte


def test_the_key_and_the_query_go_with_every_request(tmp_path: Any) -> None:
    with StandInLLM(api_key="sk-right", record_credentials=True) as server:
        url = f"{server.base_url}?api-version=2024-06-01&key=q%2Bkey"
        settings = ModelSettings(spec="openai:stand-in", base_url=url, api_key_env="STAND_IN_KEY")
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("STAND_IN_KEY", "sk-right")
            asyncio.run(_post(settings, chat_body(settings, user_request("hello"))))
        [entry] = server.log
    assert entry["status_code"] == 200 and entry["authorization"] == "Bearer sk-right"
    assert entry["query"] == "api-version=2024-06-01&key=q%2Bkey"


# --------------------------------------------------------------------------- the client's retry policy


@pytest.mark.parametrize(
    ("status", "headers"),
    [
        (429, {}), (500, {}), (503, {}), (408, {}), (409, {}), (400, {}), (401, {}), (404, {}), (422, {}),
        (429, {"retry-after": "3"}), (429, {"retry-after": "121"}), (503, {"retry-after-ms": "500"}),
        (400, {"x-should-retry": "true"}), (500, {"x-should-retry": "false"}), (429, {"retry-after": "1e400"}),
    ],
)  # fmt: skip
def test_which_statuses_are_retried_is_the_openai_client_s_rule(status: int, headers: dict[str, str]) -> None:
    client = openai.AsyncOpenAI(api_key="k", base_url="http://127.0.0.1:9/v1")
    response = httpx2.Response(status, headers=headers, request=httpx2.Request("POST", "http://127.0.0.1:9/v1"))
    assert should_retry(status, httpx2.Headers(headers)) is client._should_retry(response)


@pytest.mark.parametrize(
    "headers",
    [None, {}, {"retry-after": "2"}, {"retry-after": "0.25"}, {"retry-after-ms": "1500"}, {"retry-after": "0"},
     {"retry-after": "500"}, {"retry-after": "soon"}, {"retry-after": formatdate(time.time() + 30, usegmt=True)}],
)  # fmt: skip
@pytest.mark.parametrize("retries_taken", [0, 1, 3, 6])
def test_the_wait_before_a_retry_is_the_openai_client_s(headers: dict[str, str] | None, retries_taken: int) -> None:
    max_retries = 6
    client = openai.AsyncOpenAI(api_key="k", base_url="http://127.0.0.1:9/v1", max_retries=max_retries)
    options = FinalRequestOptions.construct(method="post", url="/chat/completions")
    as_headers = httpx2.Headers(headers) if headers is not None else None
    random.seed(retries_taken)  # the same jitter for both
    theirs = client._calculate_retry_timeout(max_retries - retries_taken, options, as_headers)
    random.seed(retries_taken)
    ours = retry_delay(retries_taken, as_headers)
    assert ours == pytest.approx(theirs, abs=0.01)  # a date is read against the clock twice


def test_the_constants_are_the_openai_client_s() -> None:
    assert transport.INITIAL_RETRY_DELAY == _constants.INITIAL_RETRY_DELAY
    assert transport.MAX_RETRY_DELAY == _constants.MAX_RETRY_DELAY
    assert transport.MAX_RETRY_AFTER_DELAY == _constants.MAX_RETRY_AFTER_DELAY


def test_a_rate_limit_is_retried_after_the_server_s_retry_after_and_counted(caplog: pytest.LogCaptureFixture) -> None:
    before = retry_count().retries
    with StandInLLM(fault_rate=1.0, fault_kinds=["429"], fault_attempts=1, retry_after=0.3) as server:
        settings = _settings(server, max_retries=2)
        started = time.monotonic()
        with caplog.at_level(logging.INFO, logger="qagen.llm.transport"):
            body = asyncio.run(_post(settings, chat_body(settings, user_request("hello"))))
        waited = time.monotonic() - started
        assert [entry["status_code"] for entry in server.log] == [429, 200]
    assert b'"choices"' in body and waited >= 0.3
    assert retry_count().retries == before + 1
    assert [record.getMessage() for record in caplog.records] == ["Retrying request in 0.300000 seconds (retry 1 of 2)"]


# --------------------------------------------------------------------------- what a failed call raises


def test_a_server_error_outlasting_the_retries_raises_its_status_and_body() -> None:
    with StandInLLM(fault_rate=1.0, fault_kinds=["500"], fault_attempts=10) as server:
        settings = _settings(server, max_retries=1)
        with pytest.raises(ServerStatusError) as raised:
            asyncio.run(_post(settings, chat_body(settings, user_request("hello"))))
        assert [entry["status_code"] for entry in server.log] == [500, 500]
    assert raised.value.status_code == 500 and str(raised.value).startswith("Error code: 500 - {'error': ")


def test_a_rejected_key_is_not_retried() -> None:
    with StandInLLM(api_key="sk-right") as server:
        settings = _settings(server, max_retries=3)
        with pytest.raises(ServerStatusError) as raised:
            asyncio.run(_post(settings, chat_body(settings, user_request("hello"))))
        assert len(server.log) == 1
    assert raised.value.status_code == 401


def test_a_dropped_connection_is_retried_then_raised_as_unreachable() -> None:
    with StandInLLM(fault_rate=1.0, fault_kinds=["drop"], fault_attempts=10) as server:
        settings = _settings(server, max_retries=1)
        with pytest.raises(ServerUnreachableError) as raised:
            asyncio.run(_post(settings, chat_body(settings, user_request("hello"))))
        assert len(server.log) == 2
    assert not isinstance(raised.value, TimeoutError)
    assert "ServerDisconnectedError" in {type(cause).__name__ for cause in _causes(raised.value)}


def test_no_reply_in_time_raises_a_timeout() -> None:
    with StandInLLM(fault_rate=1.0, fault_kinds=["timeout"], fault_attempts=10, timeout_sleep=2.0) as server:
        settings = _settings(server, max_retries=0, timeout=0.3)
        started = time.monotonic()
        with pytest.raises(ReplyTimeoutError) as raised:
            asyncio.run(_post(settings, chat_body(settings, user_request("hello"))))
    assert time.monotonic() - started < 1.5
    assert isinstance(raised.value, TimeoutError) and isinstance(raised.value, ConnectionError)


def test_a_refused_connection_raises_unreachable_with_the_refusal_as_its_cause() -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    settings = ModelSettings(spec="openai:stand-in", base_url=f"http://127.0.0.1:{port}/v1", max_retries=0)
    with pytest.raises(ServerUnreachableError) as raised:
        asyncio.run(_post(settings, chat_body(settings, user_request("hello"))))
    assert any(isinstance(cause, ConnectionRefusedError) for cause in _causes(raised.value))


# --------------------------------------------------------------------------- proxies from the environment


def test_proxies_come_from_the_environment_as_for_httpx(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    assert proxy_for("https://api.example.org/v1/chat/completions") is None
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.internal:3128")
    monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
    assert proxy_for("https://api.example.org/v1/chat/completions") == "http://proxy.internal:3128"
    assert proxy_for("http://api.example.org/v1/chat/completions") is None
    assert proxy_for("https://127.0.0.1:8000/v1/chat/completions") is None


# --------------------------------------------------------------------------- the headers on the wire


def test_each_attempt_sends_the_endpoint_s_headers_once_with_its_retry_count() -> None:
    """The fixed headers are the session's own; a retry adds only its count, in the first attempt's place."""
    attempts: list[list[tuple[str, str]]] = []

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while not reader.at_eof():
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError:
                return  # the client closed its connection
            lines = head.decode("latin-1").split("\r\n")[1:-2]
            headers = [(name, value) for name, _, value in (line.partition(": ") for line in lines)]
            await reader.readexactly(int(dict(headers)["Content-Length"]))
            attempts.append(headers)
            status, body = (b"500 Internal Server Error", b"{}") if len(attempts) == 1 else (b"200 OK", b'{"ok":1}')
            writer.write(b"HTTP/1.1 " + status + b"\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
            await writer.drain()

    async def run() -> bytes:
        server = await asyncio.start_server(answer, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        endpoint = Endpoint(f"http://127.0.0.1:{port}/v1/chat/completions", {"Authorization": "Bearer k", "X-A": "a"})
        chat = ChatTransport(endpoint, timeout=5.0, max_retries=1, connections=1)
        transport.retry_delay, delay = (lambda retries_taken, headers: 0.0), transport.retry_delay
        try:
            return await chat.post({"model": "m"})
        finally:
            transport.retry_delay = delay
            await chat.aclose()
            server.close()

    assert asyncio.run(run()) == b'{"ok":1}'
    fixed = [("Authorization", "Bearer k"), ("X-A", "a"), ("X-Stainless-Read-Timeout", "5.0")]
    for count, headers in enumerate(attempts):
        names = [name.lower() for name, _ in headers]
        assert len(names) == len(set(names)), headers
        assert [pair for pair in headers if pair[0] in dict(fixed)] == fixed
        assert [value for name, value in headers if name == "X-Stainless-Retry-Count"] == [str(count)]
    assert len(attempts) == 2
    assert [name for name, _ in attempts[0]] == [name for name, _ in attempts[1]]


# --------------------------------------------------------------------------- the body's bytes

_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)


@given(st.dictionaries(st.text(max_size=6), _JSON_VALUES, max_size=4))
@example(
    {"model": "m", "temperature": 1e-05, "messages": [{"role": "user", "content": '\x00\x1f\x7f\u2028 é 😀 \\ "'}]}
)
@example({"model": "m", "max_tokens": 9, "messages": [{"role": "user", "content": '\x00\x1f\x7f\u2028 é 😀 \\ "\n\t'}]})
@example({"messages": [{"content": "\ud800"}]})
@example({"n": 2**64})
def test_a_body_is_the_bytes_the_openai_client_writes(body: dict[str, Any]) -> None:
    try:
        theirs: bytes | type[Exception] = openapi_dumps(body)
    except (ValueError, TypeError) as exc:
        theirs = type(exc)
    try:
        ours: bytes | type[Exception] = body_bytes(body)
    except (ValueError, TypeError) as exc:
        ours = type(exc)
    assert ours == theirs
