"""HTTP/1.1 plumbing for the stand-in Hub: a keep-alive request handler and request/response types.

`huggingface_hub` 1.x+ talks through a shared, pooled `httpx` client, so connections are reused
across requests and across tests: every response must carry an exact `Content-Length`, request
bodies must be read completely (including `Transfer-Encoding: chunked` uploads), and stopping the
server must also cut those idle pooled connections, or a later server on the same port would see
its requests answered by the old one's handler threads.
"""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from standins.hub.model import JSON, HubError


@dataclass(frozen=True)
class RequestRecord:
    """One served request, for tests that assert on traffic."""

    method: str
    path: str
    query: str
    status: int
    user: str | None


@dataclass
class Request:
    method: str
    path: str  # raw (still percent-encoded) path, without the query string
    query: dict[str, list[str]]
    headers: Message
    body: bytes
    base_url: str  # scheme://host:port the client used, for URLs we hand back
    user: str | None = None

    @property
    def segments(self) -> list[str]:
        # Split before unquoting: a revision like "refs%2Fpr%2F1" must stay one segment.
        return [unquote(part) for part in self.path.strip("/").split("/")] if self.path != "/" else []

    def param(self, name: str) -> str | None:
        values = self.query.get(name) or self.query.get(name + "[]")
        return values[0] if values else None

    def flag(self, name: str) -> bool:
        return (self.param(name) or "").lower() in ("1", "true", "yes")

    def token(self) -> str | None:
        scheme, _, value = (self.headers.get("Authorization") or "").partition(" ")
        return (value.strip() or None) if scheme.lower() == "bearer" else None

    def json(self) -> Any:
        if not self.body.strip():
            return {}
        try:
            return json.loads(self.body)
        except ValueError as exc:
            raise HubError(400, f"Request body is not valid JSON: {exc}") from exc

    def json_object(self) -> JSON:
        data = self.json()
        if not isinstance(data, dict):
            raise HubError(400, "Request body must be a JSON object")
        return data

    def form(self) -> dict[str, list[str]]:
        """A form-encoded body (`paths-info` posts `paths=a&paths=b&expand=false`), or JSON."""
        content_type = (self.headers.get("Content-Type") or "").lower()
        if "json" in content_type:
            data = self.json_object()
            return {
                key: [str(v) for v in value] if isinstance(value, list) else [str(value)] for key, value in data.items()
            }
        return parse_qs(self.body.decode("utf-8"), keep_blank_values=True)


@dataclass
class Response:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def json(cls, data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
        return cls(status, json.dumps(data).encode(), {"Content-Type": "application/json", **(headers or {})})

    @classmethod
    def error(cls, error: HubError) -> Response:
        headers = {"X-Error-Message": error.message.encode("ascii", "replace").decode(), **error.headers}
        if error.code is not None:
            headers["X-Error-Code"] = error.code
        return cls.json({"error": error.message}, error.status, headers)


App = Callable[[Request], Response]


class HubHTTPServer(ThreadingHTTPServer):
    """Threaded server that remembers its open connections so `close_connections` can cut them."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self, address: tuple[str, int], app: App, on_served: Callable[[RequestRecord], None], debug: bool
    ) -> None:
        self.app = app
        self.on_served = on_served
        self.debug = debug
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(address, HubRequestHandler)

    def close_connections(self) -> None:
        with self.connections_lock:
            connections, self.connections = set(self.connections), set()
        for connection in connections:
            with contextlib.suppress(OSError):  # already closed by the peer
                connection.shutdown(socket.SHUT_RDWR)


class HubRequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the httpx pool reuses connections
    server: HubHTTPServer
    timeout = 300  # an idle pooled connection's thread ends eventually

    def setup(self) -> None:
        super().setup()
        with self.server.connections_lock:
            self.server.connections.add(self.connection)

    def finish(self) -> None:
        with self.server.connections_lock:
            self.server.connections.discard(self.connection)
        super().finish()

    def do_GET(self) -> None:
        self._handle()

    def do_HEAD(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def do_PUT(self) -> None:
        self._handle()

    def do_DELETE(self) -> None:
        self._handle()

    def do_PATCH(self) -> None:
        self._handle()

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.debug:
            sys.stderr.write("stand-in Hub: " + (format % args) + "\n")

    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline(65537).split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(65537).strip():
                        pass  # trailers
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _handle(self) -> None:
        split = urlsplit(self.path)
        try:
            body = self._read_body()
        except (ValueError, OSError):
            self.close_connection = True
            self._write(Response.error(HubError(400, "Unreadable request body")))
            return
        host = self.headers.get("Host") or "{}:{}".format(*self.server.server_address[:2])
        request = Request(
            self.command,
            split.path or "/",
            parse_qs(split.query, keep_blank_values=True),
            self.headers,
            body,
            f"http://{host}",
        )
        try:
            response = self.server.app(request)
        except HubError as error:
            response = Response.error(error)
        except Exception as exc:  # noqa: BLE001 - a stand-in bug must become a visible 500, not a dead connection
            traceback.print_exc(file=sys.stderr)
            response = Response.json({"error": f"stand-in Hub crashed: {exc!r}"}, 500)
        # Logged before answering: a client that got its answer must find the request in the log.
        self.server.on_served(RequestRecord(self.command, request.path, split.query, response.status, request.user))
        self._write(response)

    def _write(self, response: Response) -> None:
        self.send_response(response.status)
        for name, value in response.headers.items():
            self.send_header(name, value)
        # Always exact, HEAD included (it announces the body GET would send): keep-alive depends on it.
        self.send_header("Content-Length", str(len(response.body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(response.body)
