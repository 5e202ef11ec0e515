"""HTTP/1.1 plumbing of the stand-in LLM: a threaded keep-alive server on 127.0.0.1 and its handler.

The OpenAI client (httpx) reuses connections, so every response carries an exact Content-Length,
request bodies are read completely (`Transfer-Encoding: chunked` included), and stopping the server
also cuts the idle pooled connections (`close_connections`). What a request is answered is decided
by the server's app (`standins.llm.routes.StandInApp`); a bug there is answered by the app's
`crashed`, never passed off as a dropped connection.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import socketserver
import sys
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

# The stand-in's one logger, named after the module users start it from.
_logger = logging.getLogger("standins.llm.server")

HOST = "127.0.0.1"  # never anything else: the stand-in must not be reachable from outside


class App(Protocol):
    """What answers the requests the server reads."""

    def serve_get(self, handler: LLMRequestHandler) -> None: ...

    def serve_post(self, handler: LLMRequestHandler) -> None: ...

    def crashed(self, handler: LLMRequestHandler) -> None: ...


class LLMHTTPServer(ThreadingHTTPServer):
    """The listening socket; remembers open connections so that `close_connections` can cut them."""

    # One thread per connection. Daemon threads and no join on close: a handler asleep in a
    # latency or timeout fault must never hold up `stop()` or interpreter exit.
    daemon_threads = True
    block_on_close = False
    # Bursts of 64+ clients connecting at once must queue, not be refused.
    request_queue_size = 512
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], app: App) -> None:
        self.app = app
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(address, LLMRequestHandler)

    def track(self, connection: socket.socket, *, opened: bool) -> None:
        with self.connections_lock:
            if opened:
                self.connections.add(connection)
            else:
                self.connections.discard(connection)

    def close_connections(self) -> None:
        """Shut down every open connection (idle keep-alive ones would otherwise outlive the server)."""
        with self.connections_lock:
            connections = list(self.connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)

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


class LLMRequestHandler(BaseHTTPRequestHandler):
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
    server: LLMHTTPServer

    def setup(self) -> None:
        super().setup()
        self.server.track(self.connection, opened=True)

    def finish(self) -> None:
        try:
            super().finish()
        except OSError:
            pass  # the client is gone; nothing left to flush to
        finally:
            self.server.track(self.connection, opened=False)

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: every request is in the structured log instead of on stderr."""

    def do_GET(self) -> None:
        self._guarded(self.server.app.serve_get)

    def do_POST(self) -> None:
        self._guarded(self.server.app.serve_post)

    def _guarded(self, serve: Callable[[LLMRequestHandler], None]) -> None:
        try:
            serve(self)
        except Exception:
            # A bug in the stand-in (or in a caller's score policy) must not pass for an injected
            # fault that a retry hides: answer 500 with `x-should-retry: false`, so it fails loudly.
            _logger.exception("stand-in LLM crashed on %s %s", self.command, self.path)
            self.server.app.crashed(self)


def send(handler: LLMRequestHandler, status: int, body: bytes, headers: Mapping[str, str]) -> bool:
    """Write one JSON response; False if the client hung up first (e.g. it timed out)."""
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


def sent_key(handler: LLMRequestHandler) -> str:
    """The key the client sent (`Authorization: Bearer KEY`), unmasked."""
    return str(handler.headers.get("Authorization", "")).removeprefix("Bearer ")


def read_body(handler: LLMRequestHandler) -> bytes | None:
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
