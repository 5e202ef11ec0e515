"""A local stand-in for an OpenAI-compatible chat-completions server (tests, benchmarks, CI).

There is no real LLM on the test machines, so the product's real `langchain-openai` client talks
to this server on 127.0.0.1 instead. It answers qagen's prompts deterministically (see
`qagen.testing.llm_replies`) and can misbehave on purpose, reproducibly:

- ``latency``: seconds per reply, slept in the request's own thread (no lock held), so many
  concurrent requests overlap like they do against a real provider;
- ``fault_rate``: that share of request bodies (chosen by hash) fails on its *first* attempt with
  one of ``fault_kinds``: ``429`` (``Retry-After``), ``500``, ``drop`` (connection closed, no
  response) or ``timeout`` (the reply comes only after ``timeout_sleep`` seconds). A retry of the
  same body succeeds, so a retrying client ends with the same answers as without faults;
- ``fault_attempts``: how many first attempts of a faulty body fail (default 1). A number larger
  than the client's retries makes the fault persistent: every retry fails too, as when a provider
  is down for minutes; ``configure(fault_rate=0)`` is the provider recovering;
- ``malformed_rate``, ``format_variety``, ``generation_format_variety``, ``duplicate_rate``,
  ``pass_rate``, ``score_policy``, ``judge_policy``: what the replies say (`ReplyPolicy`);
- ``api_key`` (401 without it) and ``models`` (404 for any other model), OpenAI-shaped errors;
  with ``echo_key`` the 401, 429 and 500 messages quote the key they were sent, unmasked (OpenAI
  quotes a masked key), so tests can check that no error body carries a key through to the user.

Every request is logged (in memory, and as JSON lines to ``log_path``, flushed per line so that
another process can read it even after the client was killed). A bug in the stand-in itself (or
in a caller's policy) is answered with a 500 that tells the client not to retry, and logged with
kind ``crash``, so it can never pass for an injected fault.

    with StandInLLM(latency=0.0, pass_rate=0.8) as llm:
        model = ChatOpenAI(model="stand-in", base_url=llm.base_url, api_key="k")

    python -m qagen.testing.llm_server --port 8000 --latency 0.2 --fault-rate 0.15 --log r.jsonl
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import json
import logging
import math
import signal
import socket
import socketserver
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import FrameType, TracebackType
from typing import IO, TYPE_CHECKING, Any, TypedDict

from qagen.testing.llm_replies import (
    DEFAULT_PASS_RATE,
    DUPLICATE_QUESTION,
    JudgePolicy,
    Reply,
    ReplyPolicy,
    ScorePolicy,
    factoid_for,
    judge_score,
    make_reply,
    score_for,
    unit_interval,
)

if TYPE_CHECKING:
    from langchain_openai import ChatOpenAI

__all__ = [
    "DUPLICATE_QUESTION",
    "FAULT_KINDS",
    "HOST",
    "LogEntry",
    "StandInLLM",
    "factoid_for",
    "judge_score",
    "main",
    "score_for",
]

_logger = logging.getLogger(__name__)

HOST = "127.0.0.1"  # never anything else: the stand-in must not be reachable from outside
FAULT_KINDS: tuple[str, ...] = ("429", "500", "drop", "timeout")
DEFAULT_MODEL = "stand-in"
_CHAT_PATHS = frozenset({"/v1/chat/completions", "/chat/completions"})
_MODELS_PATHS = frozenset({"/v1/models", "/models"})


class LogEntry(TypedDict):
    """One request as the server saw and answered it (also one line of the JSONL log)."""

    time: float
    method: str
    path: str
    body_sha256: str | None
    attempt: int | None  # n-th well-formed request with this body (None if rejected earlier)
    kind: str  # generation/critique/judge/answer, malformed, fault, error, models
    prompt: str | None  # the recognised prompt kind, also for malformed replies
    criterion: str | None
    model: str | None
    status_code: int | None  # None: no response was sent (drop) or it was held back (timeout)
    score: int | None
    format: str | None
    malformed: str | None
    fault: str | None
    reply: str | None


@dataclasses.dataclass(frozen=True)
class Knobs:
    """Transport behaviour plus the reply policy; replaced atomically by `StandInLLM.configure`."""

    latency: float = 0.0
    fault_rate: float = 0.0
    fault_kinds: tuple[str, ...] = FAULT_KINDS
    fault_attempts: int = 1
    timeout_sleep: float = 3.0
    retry_after: float = 0.0
    api_key: str | None = None
    echo_key: bool = False
    models: tuple[str, ...] | None = None
    replies: ReplyPolicy = dataclasses.field(default_factory=ReplyPolicy)

    def __post_init__(self) -> None:
        rates = {
            "fault_rate": self.fault_rate,
            "malformed_rate": self.replies.malformed_rate,
            "format_variety": self.replies.format_variety,
            "generation_format_variety": self.replies.generation_format_variety,
            "duplicate_rate": self.replies.duplicate_rate,
        }
        pass_rate = self.replies.pass_rate
        if isinstance(pass_rate, Mapping):
            rates.update({f"pass_rate[{k}]": v for k, v in pass_rate.items()})
        else:
            rates["pass_rate"] = pass_rate
        for name, value in rates.items():
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be between 0 and 1, got {value}.")
        for name, value in (
            ("latency", self.latency),
            ("timeout_sleep", self.timeout_sleep),
            ("retry_after", self.retry_after),
        ):
            if not (value >= 0.0 and math.isfinite(value)):
                raise ValueError(f"{name} must be a finite number >= 0, got {value}.")
        if self.fault_attempts < 1:
            raise ValueError(f"fault_attempts must be at least 1, got {self.fault_attempts}.")
        unknown = set(self.fault_kinds) - set(FAULT_KINDS)
        if unknown or not self.fault_kinds:
            raise ValueError(f"fault_kinds must be a non-empty subset of {FAULT_KINDS}.")


_REPLY_FIELDS = frozenset(f.name for f in dataclasses.fields(ReplyPolicy))
_KNOB_FIELDS = frozenset(f.name for f in dataclasses.fields(Knobs)) - {"replies"}


class _BodyState:
    """How often one request body arrived, and how many of those got a real reply."""

    __slots__ = ("attempts", "replies")

    def __init__(self) -> None:
        self.attempts = 0
        self.replies = 0


class _Server(ThreadingHTTPServer):
    # One thread per connection. Daemon threads and no join on close: a handler asleep in a
    # latency or timeout fault must never hold up `stop()` or interpreter exit.
    daemon_threads = True
    block_on_close = False
    # Bursts of 64+ clients connecting at once must queue, not be refused.
    request_queue_size = 512
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], owner: StandInLLM) -> None:
        self.owner = owner
        super().__init__(address, _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that resets its connection (it timed out, or its process was killed) is normal
        # here; socketserver would print a traceback for it. Anything else is still reported.
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        _logger.exception("stand-in LLM: error on a connection from %s", client_address)

    def server_bind(self) -> None:
        # HTTPServer.server_bind calls socket.getfqdn(), a name lookup this server has no use for.
        socketserver.TCPServer.server_bind(self)
        self.server_name = HOST
        self.server_port = int(self.server_address[1])


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.1 keep-alive: the OpenAI client (httpx) reuses connections, which only works when
    # every response carries an exact Content-Length.
    protocol_version = "HTTP/1.1"
    server_version = "qagen-stand-in-llm/1.0"
    sys_version = ""
    # Headers and body go out in two writes; without TCP_NODELAY, Nagle plus delayed ACKs can add
    # ~40 ms to every reply on a reused connection.
    disable_nagle_algorithm = True
    # An idle keep-alive connection is closed after this long, so abandoned ones free their thread.
    timeout = 300.0
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.server.owner._track(self.connection, opened=True)

    def finish(self) -> None:
        try:
            super().finish()
        except OSError:
            pass  # the client is gone; nothing left to flush to
        finally:
            self.server.owner._track(self.connection, opened=False)

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: every request is in the structured log instead of on stderr."""

    def do_GET(self) -> None:
        self._guarded(self.server.owner._serve_get)

    def do_POST(self) -> None:
        self._guarded(self.server.owner._serve_post)

    def _guarded(self, serve: Callable[[_Handler], None]) -> None:
        try:
            serve(self)
        except Exception:
            # A bug in the stand-in (or in a caller's score policy) must not pass for an injected
            # fault that a retry hides: answer 500 with `x-should-retry: false`, so it fails loudly.
            _logger.exception("stand-in LLM crashed on %s %s", self.command, self.path)
            self.server.owner._crashed(self)


class StandInLLM:
    """An OpenAI-compatible chat-completions server on 127.0.0.1 with deterministic replies.

    Use as a context manager (or call `start()` / `stop()`). `base_url` is what the client needs.
    All knobs are keyword arguments; `configure()` changes them while the server runs.
    """

    def __init__(
        self,
        *,
        port: int = 0,
        latency: float = 0.0,
        fault_rate: float = 0.0,
        fault_kinds: Sequence[str] = FAULT_KINDS,
        fault_attempts: int = 1,
        timeout_sleep: float = 3.0,
        retry_after: float = 0.0,
        malformed_rate: float = 0.0,
        format_variety: float = 0.0,
        generation_format_variety: float = 0.0,
        duplicate_rate: float = 0.0,
        pass_rate: float | Mapping[str, float] = DEFAULT_PASS_RATE,
        score_policy: ScorePolicy | None = None,
        judge_policy: JudgePolicy | None = None,
        api_key: str | None = None,
        echo_key: bool = False,
        models: Sequence[str] | None = None,
        log_path: str | Path | None = None,
    ) -> None:
        self._requested_port = port
        self._knobs = Knobs(
            latency=latency,
            fault_rate=fault_rate,
            fault_kinds=tuple(fault_kinds),
            fault_attempts=fault_attempts,
            timeout_sleep=timeout_sleep,
            retry_after=retry_after,
            api_key=api_key,
            echo_key=echo_key,
            models=tuple(models) if models is not None else None,
            replies=ReplyPolicy(
                pass_rate=dict(pass_rate) if isinstance(pass_rate, Mapping) else pass_rate,
                format_variety=format_variety,
                generation_format_variety=generation_format_variety,
                duplicate_rate=duplicate_rate,
                malformed_rate=malformed_rate,
                score_policy=score_policy,
                judge_policy=judge_policy,
            ),
        )
        self.log_path = Path(log_path) if log_path is not None else None
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        # Two short-held locks: request bookkeeping, and the log. Neither is held while a handler
        # sleeps or writes to its socket.
        self._state_lock = threading.Lock()
        self._bodies: dict[str, _BodyState] = {}
        self._connections: set[socket.socket] = set()
        self._log_lock = threading.Lock()
        self._log: list[LogEntry] = []
        self._log_file: IO[str] | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> StandInLLM:
        """Bind 127.0.0.1 (port 0 = any free port) and serve in a background thread."""
        if self._httpd is not None:
            raise RuntimeError("the stand-in LLM is already running")
        self._stopping.clear()
        httpd = _Server((HOST, self._requested_port), self)  # binds first: a busy port leaks nothing
        if self.log_path is not None:
            try:
                self._log_file = self.log_path.open("a", encoding="utf-8")
            except OSError:
                httpd.server_close()
                raise
        self._httpd = httpd
        # A short poll interval: `shutdown()` waits for the serve loop to notice, up to this long.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"stand-in-llm:{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, close the listening socket and every open connection. Idempotent."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stopping.set()  # wakes handlers sleeping in latency or a timeout fault
        httpd.shutdown()
        httpd.server_close()
        with self._state_lock:
            connections = list(self._connections)
        for connection in connections:
            # Idle keep-alive connections would otherwise keep their threads (and the client's
            # pooled sockets) alive after the server is gone.
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join()
        with self._log_lock:
            if self._log_file is not None:
                self._log_file.close()
                self._log_file = None

    def __enter__(self) -> StandInLLM:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The port actually bound (known once started)."""
        if self._httpd is None:
            raise RuntimeError("the stand-in LLM is not running; call start() first")
        return self._httpd.server_port

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``, the `base_url` for the OpenAI client."""
        return f"http://{HOST}:{self.port}/v1"

    @property
    def knobs(self) -> Knobs:
        """The behaviour currently in force."""
        return self._knobs

    def configure(self, **changes: Any) -> None:
        """Change knobs (constructor names, except `port`/`log_path`) for subsequent requests."""
        unknown = set(changes) - _REPLY_FIELDS - _KNOB_FIELDS
        if unknown:
            raise TypeError(f"unknown knob(s): {sorted(unknown)}")
        transport = {k: v for k, v in changes.items() if k in _KNOB_FIELDS}
        for name in ("fault_kinds", "models"):
            if transport.get(name) is not None:
                transport[name] = tuple(transport[name])
        replies = dataclasses.replace(self._knobs.replies, **{k: v for k, v in changes.items() if k in _REPLY_FIELDS})
        # One assignment: a request in flight sees either the old knobs or the new ones.
        self._knobs = dataclasses.replace(self._knobs, replies=replies, **transport)

    def chat_model(self, **kwargs: Any) -> ChatOpenAI:
        """A `ChatOpenAI` pointed at this server (defaults: model "stand-in", this server's key)."""
        from langchain_openai import ChatOpenAI

        kwargs.setdefault("model", DEFAULT_MODEL)
        kwargs.setdefault("api_key", self._knobs.api_key or "stand-in-key")
        return ChatOpenAI(base_url=self.base_url, **kwargs)

    # ------------------------------------------------------------------ the log

    @property
    def log(self) -> list[LogEntry]:
        """A snapshot of every request logged so far, oldest first."""
        with self._log_lock:
            return list(self._log)

    def requests_by_body(self) -> Counter[str]:
        """How many chat requests arrived per request-body sha256."""
        return Counter(e["body_sha256"] for e in self.log if e["method"] == "POST" and e["body_sha256"])

    def reset(self) -> None:
        """Forget the in-memory log and the attempt counters (the JSONL file is kept)."""
        with self._state_lock:
            self._bodies.clear()
        with self._log_lock:
            self._log.clear()

    def _record(self, entry: LogEntry) -> None:
        line = json.dumps(entry, ensure_ascii=False) + "\n"  # encoded outside the lock
        with self._log_lock:
            self._log.append(entry)
            if self._log_file is not None:
                self._log_file.write(line)
                self._log_file.flush()

    # ------------------------------------------------------------------ request handling

    def _track(self, connection: socket.socket, *, opened: bool) -> None:
        with self._state_lock:
            if opened:
                self._connections.add(connection)
            else:
                self._connections.discard(connection)

    @staticmethod
    def _entry(method: str, path: str, body_sha256: str | None) -> LogEntry:
        return LogEntry(
            time=time.time(),
            method=method,
            path=path,
            body_sha256=body_sha256,
            attempt=None,
            kind="error",
            prompt=None,
            criterion=None,
            model=None,
            status_code=None,
            score=None,
            format=None,
            malformed=None,
            fault=None,
            reply=None,
        )

    def _authorised(self, handler: _Handler, knobs: Knobs) -> bool:
        key = knobs.api_key
        return key is None or handler.headers.get("Authorization", "") == f"Bearer {key}"

    def _serve_get(self, handler: _Handler) -> None:
        path = handler.path.split("?", 1)[0].rstrip("/")
        knobs = self._knobs
        entry = self._entry("GET", path, None)
        if not self._authorised(handler, knobs):
            self._error(handler, entry, 401, "Incorrect API key provided.", "invalid_api_key")
            return
        names = list(knobs.models) if knobs.models is not None else [DEFAULT_MODEL]
        if path in _MODELS_PATHS:
            entry["kind"] = "models"
            self._respond(handler, entry, 200, {"object": "list", "data": [_model(n) for n in names]})
            return
        prefix = next((p + "/" for p in _MODELS_PATHS if path.startswith(p + "/")), None)
        if prefix is not None:
            name = path[len(prefix) :]
            entry["model"] = name
            if knobs.models is None or name in knobs.models:
                entry["kind"] = "models"
                self._respond(handler, entry, 200, _model(name))
            else:
                self._model_not_found(handler, entry, name)
            return
        self._error(handler, entry, 404, f"Unknown request URL: GET {path}.", "unknown_url")

    def _serve_post(self, handler: _Handler) -> None:
        # The latency knob is the time from the request's arrival to the reply, the server's own
        # work included (as with a real server), so it is measured from here.
        arrived = time.monotonic()
        path = handler.path.split("?", 1)[0].rstrip("/")
        body = _read_body(handler)
        if body is None:
            handler.close_connection = True  # the framing is broken; the stream cannot be trusted
            entry = self._entry("POST", path, None)
            self._error(handler, entry, 400, "Unreadable request body.", "invalid_body")
            return
        sha = hashlib.sha256(body).hexdigest()
        knobs = self._knobs  # one snapshot per request, so `configure()` never tears a request
        entry = self._entry("POST", path, sha)
        if path not in _CHAT_PATHS:
            self._error(handler, entry, 404, f"Unknown request URL: POST {path}.", "unknown_url")
            return
        if not self._authorised(handler, knobs):
            message = "Incorrect API key provided. You must pass the key as 'Authorization: Bearer'."
            if knobs.echo_key:
                message = f"Incorrect API key provided: {_sent_key(handler)}. Find your API key in your account."
            self._error(handler, entry, 401, message, "invalid_api_key")
            return
        try:
            request = json.loads(body)
        except ValueError:
            request = None
        if not isinstance(request, dict):
            self._error(handler, entry, 400, "The request body is not a JSON object.", "invalid_json")
            return
        model = request.get("model")
        entry["model"] = model if isinstance(model, str) else None
        messages = request.get("messages")
        if not isinstance(model, str) or not isinstance(messages, list) or not messages:
            message = "A chat completion needs a 'model' string and a non-empty 'messages' list."
            self._error(handler, entry, 400, message, "invalid_request")
            return
        if request.get("stream"):
            message = "stream=true is not supported by the qagen stand-in LLM; send the request without streaming."
            self._error(handler, entry, 400, message, "unsupported_parameter", param="stream")
            return
        if knobs.models is not None and model not in knobs.models:
            self._model_not_found(handler, entry, model)
            return

        attempt, reply_number, fault = self._count(sha, knobs)
        entry["attempt"] = attempt
        prompt = _prompt_text(messages)
        if fault is not None:
            self._fault(handler, entry, fault, knobs, request, prompt, sha)
            return
        reply = make_reply(prompt, request_key=sha, reply_number=reply_number, policy=knobs.replies)
        remaining = knobs.latency - (time.monotonic() - arrived)
        if remaining > 0 and self._stopping.wait(remaining):
            handler.close_connection = True  # shutting down: abandon the reply
            return
        self._complete(handler, entry, request, messages, reply, sha)

    def _count(self, sha: str, knobs: Knobs) -> tuple[int, int, str | None]:
        """Count an attempt of body `sha`; decide whether it is a fault (its first `fault_attempts`)."""
        faulty = knobs.fault_rate > 0 and unit_interval("fault", sha) < knobs.fault_rate
        with self._state_lock:
            state = self._bodies.setdefault(sha, _BodyState())
            state.attempts += 1
            attempt = state.attempts
            fault = None
            if attempt <= knobs.fault_attempts and faulty:
                kinds = knobs.fault_kinds
                fault = kinds[int(unit_interval("fault-kind", sha) * len(kinds))]
            else:
                # Faulted attempts do not count as replies, so the n-th *answer* to a body is the
                # same with or without faults (malformed replies are chosen per answer).
                state.replies += 1
            return attempt, state.replies, fault

    def _fault(
        self,
        handler: _Handler,
        entry: LogEntry,
        fault: str,
        knobs: Knobs,
        request: dict[str, Any],
        prompt: str,
        sha: str,
    ) -> None:
        entry["kind"] = "fault"
        entry["fault"] = fault
        # Providers quote request details in error messages; `echo_key` makes that the key itself.
        quoted = f" Request key: {_sent_key(handler)}." if knobs.echo_key else ""
        if fault == "429":
            seconds = knobs.retry_after
            header = str(int(seconds)) if float(seconds).is_integer() else repr(seconds)
            error = _error_body(
                "Rate limit reached for the stand-in model (injected fault)." + quoted,
                "requests",
                "rate_limit_exceeded",
            )
            self._respond(handler, entry, 429, error, {"Retry-After": header})
        elif fault == "500":
            error = _error_body(
                "The server had an error while processing your request (injected fault)." + quoted,
                "server_error",
                None,
            )
            self._respond(handler, entry, 500, error)
        elif fault == "drop":
            # Logged first, so a test that sees the client's retry also sees this line.
            self._record(entry)
            handler.close_connection = True  # no response at all; `finish()` closes the socket
        else:  # timeout: log now, answer only after the client has given up
            self._record(entry)
            if self._stopping.wait(knobs.timeout_sleep):
                handler.close_connection = True
                return
            # Reply number 0 and no malformed replies: this answer is not counted as one.
            policy = dataclasses.replace(knobs.replies, malformed_rate=0.0)
            reply = make_reply(prompt, request_key=sha, reply_number=0, policy=policy)
            payload = self._completion(request, request["messages"], reply, sha)
            self._send(handler, 200, _encode(payload), {})

    def _complete(
        self,
        handler: _Handler,
        entry: LogEntry,
        request: dict[str, Any],
        messages: list[Any],
        reply: Reply,
        sha: str,
    ) -> None:
        payload = self._completion(request, messages, reply, sha)
        entry["kind"] = reply.kind
        entry["prompt"] = reply.prompt
        entry["criterion"] = reply.criterion
        entry["score"] = reply.score
        entry["format"] = reply.format
        entry["malformed"] = reply.malformed
        entry["reply"] = payload["choices"][0]["message"]["content"]
        self._respond(handler, entry, 200, payload)

    @staticmethod
    def _completion(request: dict[str, Any], messages: list[Any], reply: Reply, sha: str) -> dict[str, Any]:
        content, finish_reason = reply.content, reply.finish_reason
        limit = request.get("max_completion_tokens") or request.get("max_tokens")
        # Same ~4 characters per token as the usage figures: a small limit cuts the reply short.
        if isinstance(limit, int) and limit > 0 and len(content) > 4 * limit:
            content, finish_reason = content[: 4 * limit], "length"
        n = request.get("n")
        choices = n if isinstance(n, int) and 1 <= n <= 16 else 1
        prompt_tokens = _tokens(sum(len(_message_text(m)) for m in messages))
        completion_tokens = _tokens(len(content)) * choices
        return {
            "id": "chatcmpl-" + hashlib.sha256(f"{sha}:{time.time_ns()}".encode()).hexdigest()[:24],
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request["model"],
            "choices": [
                {
                    "index": i,
                    "message": {"role": "assistant", "content": content},
                    "logprobs": None,
                    "finish_reason": finish_reason,
                }
                for i in range(choices)
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    def _crashed(self, handler: _Handler) -> None:
        entry = self._entry(handler.command, handler.path.split("?", 1)[0], None)
        entry["kind"] = "crash"
        handler.close_connection = True  # the request may be half read; start afresh
        error = _error_body("The stand-in LLM crashed; see its log.", "server_error", "stand_in_crash")
        self._respond(handler, entry, 500, error, {"x-should-retry": "false"})

    def _model_not_found(self, handler: _Handler, entry: LogEntry, model: str) -> None:
        message = f"The model `{model}` does not exist or you do not have access to it."
        self._error(handler, entry, 404, message, "model_not_found")

    def _error(
        self,
        handler: _Handler,
        entry: LogEntry,
        status: int,
        message: str,
        code: str,
        *,
        param: str | None = None,
    ) -> None:
        entry["kind"] = "error"
        self._respond(handler, entry, status, _error_body(message, "invalid_request_error", code, param))

    def _respond(
        self,
        handler: _Handler,
        entry: LogEntry,
        status: int,
        payload: dict[str, Any],
        headers: Mapping[str, str] | None = None,
    ) -> None:
        entry["status_code"] = status
        # Logged before the bytes go out: once the client has its answer, the log already has it.
        self._record(entry)
        self._send(handler, status, _encode(payload), headers or {})

    @staticmethod
    def _send(handler: _Handler, status: int, body: bytes, headers: Mapping[str, str]) -> bool:
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(body)))
            for name, value in headers.items():
                handler.send_header(name, value)
            handler.end_headers()
            handler.wfile.write(body)
            handler.wfile.flush()
            return True
        except OSError:  # the client hung up (e.g. it timed out first)
            handler.close_connection = True
            return False


def _sent_key(handler: _Handler) -> str:
    """The key the client sent (`Authorization: Bearer KEY`), unmasked."""
    return str(handler.headers.get("Authorization", "")).removeprefix("Bearer ")


def _model(name: str) -> dict[str, Any]:
    return {"id": name, "object": "model", "created": 0, "owned_by": "qagen-stand-in"}


def _error_body(message: str, type_: str, code: str | None, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


def _encode(payload: Mapping[str, Any]) -> bytes:
    text = json.dumps(payload, ensure_ascii=False)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        # A reply holding a lone surrogate (half an emoji cut off): sent as the `\ud83d` escape,
        # as a JavaScript server would send it, so clients meet what real servers send.
        return json.dumps(payload).encode("ascii")


def _tokens(chars: int) -> int:
    return math.ceil(chars / 4)


def _message_text(message: Any) -> str:
    """The text of a chat message whose content is a string or a list of content parts."""
    if not isinstance(message, dict):
        return ""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def _prompt_text(messages: list[Any]) -> str:
    """The last user message (the prompt templates are sent as one); else the last message."""
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            return _message_text(message)
    return _message_text(messages[-1])


def _read_body(handler: _Handler) -> bytes | None:
    """The request body (Content-Length or chunked), or None if its framing is broken."""
    try:
        if "chunked" in handler.headers.get("Transfer-Encoding", "").lower():
            parts: list[bytes] = []
            while True:
                size = int(handler.rfile.readline(65537).split(b";")[0].strip(), 16)
                if size == 0:
                    while handler.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(parts)
                parts.append(handler.rfile.read(size))
                handler.rfile.readline()
        length = int(handler.headers.get("Content-Length", "0"))
        if length < 0:
            return None
        body = handler.rfile.read(length)
        return body if len(body) == length else None
    except (ValueError, OSError):
        return None


# ---------------------------------------------------------------------- command line


def _rate(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {text}")
    return value


def _pass_rate(text: str) -> float | dict[str, float]:
    """``0.8`` for every critic, or per criterion: ``groundedness=0.9,relevance=0.5``."""
    if "=" not in text:
        return _rate(text)
    rates: dict[str, float] = {}
    for item in text.split(","):
        name, _, value = item.partition("=")
        rates[name.strip()] = _rate(value)
    return rates


def _names(text: str) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()]


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m qagen.testing.llm_server``."""
    parser = argparse.ArgumentParser(
        prog="python -m qagen.testing.llm_server",
        description="Serve a deterministic stand-in OpenAI-compatible LLM on 127.0.0.1.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    add = parser.add_argument
    add("--port", type=int, default=8000, help="port to listen on; 0 picks a free one")
    add("--latency", type=float, default=0.0, help="seconds per reply")
    add("--fault-rate", type=_rate, default=0.0, help="share of bodies whose 1st attempt fails")
    add("--fault-kinds", type=_names, default=list(FAULT_KINDS), help="e.g. 429,500,drop,timeout")
    add("--fault-attempts", type=int, default=1, help="failing first attempts per faulty body (large: persistent)")
    add("--timeout-sleep", type=float, default=3.0, help="delay of a 'timeout' fault (seconds)")
    add("--retry-after", type=float, default=0.0, help="Retry-After of a 429 fault (seconds)")
    add("--malformed-rate", type=_rate, default=0.0, help="share of malformed replies")
    add("--format-variety", type=_rate, default=0.0, help="share of non-canonical rating formats")
    add(
        "--generation-format-variety",
        type=_rate,
        default=0.0,
        help="share of non-canonical QA-generation formats",
    )
    add("--duplicate-rate", type=_rate, default=0.0, help="share of contexts given one question")
    add(
        "--pass-rate",
        type=_pass_rate,
        default=DEFAULT_PASS_RATE,
        help="share of questions rated 4-5: 0.8, or groundedness=0.9,relevance=0.5,...",
    )
    add("--api-key", default=None, help="require 'Authorization: Bearer KEY'")
    add("--models", type=_names, default=None, help="comma-separated names; others get 404")
    add("--log", type=Path, default=None, help="append one JSON line per request to this file")
    add("--port-file", type=Path, default=None, help="write the port here once listening (for --port 0)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Serve until SIGTERM or SIGINT, then exit 0."""
    args = build_parser().parse_args(argv)
    try:
        server = StandInLLM(
            port=args.port,
            latency=args.latency,
            fault_rate=args.fault_rate,
            fault_kinds=args.fault_kinds,
            fault_attempts=args.fault_attempts,
            timeout_sleep=args.timeout_sleep,
            retry_after=args.retry_after,
            malformed_rate=args.malformed_rate,
            format_variety=args.format_variety,
            generation_format_variety=args.generation_format_variety,
            duplicate_rate=args.duplicate_rate,
            pass_rate=args.pass_rate,
            api_key=args.api_key,
            models=args.models,
            log_path=args.log,
        )
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        server.start()
    except OSError as exc:
        print(f"error: cannot listen on {HOST}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    try:
        print(f"stand-in LLM listening on {server.base_url}", flush=True)
        if args.port_file is not None:
            # Written through a rename, so a reader polling for the file never sees it half-written.
            temporary = args.port_file.with_name(args.port_file.name + ".tmp")
            temporary.write_text(str(server.port), encoding="utf-8")
            temporary.replace(args.port_file)
        # A timed wait, so the signal handler's `set()` is seen promptly on every platform.
        while not stop.wait(0.5):
            pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
