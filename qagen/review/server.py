"""The review page's local web server: the page itself and a small JSON API, on 127.0.0.1 only.

    GET  /                       the page (`qagen/review/page/`), then its script and style sheet
    GET  /api/state?reviewer=R   who reviews, progress, and the first item R has not labelled
    GET  /api/items/N?reviewer=R item N (0-based), its verdicts only once R has labelled it
    POST /api/labels             a label (JSON), appended to labels.jsonl at once

The server listens on the loopback interface alone, so nothing off the machine can reach it. Two
checks keep other web pages open in the same browser out as well: a request must name this server
in its `Host` header (a page that rebinds its own host name to 127.0.0.1 cannot use it), and a
label must come as `application/json`, which a cross-site form cannot send (and no CORS header is
ever given). The page loads nothing from elsewhere, and its content security policy forbids it.
"""

from __future__ import annotations

import json
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any, cast
from urllib.parse import parse_qs, urlsplit

from qagen.errors import QagenError
from qagen.review.session import LabelRejected, ReviewSession

HOST = "127.0.0.1"
MAX_BODY_BYTES = 1_000_000
_ASSETS = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/review.js": ("review.js", "text/javascript; charset=utf-8"),
    "/review.css": ("review.css", "text/css; charset=utf-8"),
}
_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def page_asset(name: str) -> bytes:
    """A file of the page, as shipped inside the package."""
    return resources.files("qagen.review").joinpath("page", name).read_bytes()


class ReviewServer:
    """`session`'s page and API on http://127.0.0.1:`port` (0: a free port, see `url`)."""

    def __init__(self, session: ReviewSession, port: int = 0) -> None:
        self.session = session
        handler = type("Handler", (_ReviewHandler,), {"session": session})
        self._http = ThreadingHTTPServer((HOST, port), handler)
        self._http.daemon_threads = True
        self.port: int = int(self._http.server_address[1])
        self.url = f"http://{HOST}:{self.port}/"
        self._thread: threading.Thread | None = None

    def serve_forever(self) -> None:
        """Answer requests until `shutdown` (from another thread) or an interrupt."""
        self._http.serve_forever(poll_interval=0.2)

    def start(self) -> ReviewServer:
        """Answer requests on a background thread (tests, notebooks)."""
        self._thread = threading.Thread(target=self.serve_forever, name="qagen-review", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        if self._thread is not None:
            self._http.shutdown()
            self._thread.join()
            self._thread = None
        self._http.server_close()
        self.session.close()

    def __enter__(self) -> ReviewServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class _ReviewHandler(BaseHTTPRequestHandler):
    session: ReviewSession
    server_version = "qagen-review"
    sys_version = ""

    def do_GET(self) -> None:
        if not self._own_host():
            return
        url = urlsplit(self.path)
        reviewer = parse_qs(url.query).get("reviewer", [None])[0]
        if url.path in _ASSETS:
            name, content_type = _ASSETS[url.path]
            self._send(HTTPStatus.OK, page_asset(name), content_type)
        elif url.path == "/api/state":
            self._answer(lambda: self.session.state(reviewer))
        elif url.path.startswith("/api/items/"):
            number = url.path.removeprefix("/api/items/")
            if number.isdigit():
                self._answer(lambda: self.session.item(int(number), reviewer))
            else:
                self._error(HTTPStatus.NOT_FOUND, f"No item {number!r}.")
        else:
            self._error(HTTPStatus.NOT_FOUND, f"Nothing at {url.path}.")

    def do_POST(self) -> None:
        if not self._own_host():
            return
        if urlsplit(self.path).path != "/api/labels":
            self._error(HTTPStatus.NOT_FOUND, "Labels are posted to /api/labels.")
            return
        if self.headers.get_content_type() != "application/json":
            self._error(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "A label is sent as application/json.")
            return
        length = int(self.headers.get("Content-Length") or 0)
        if not 0 < length <= MAX_BODY_BYTES:
            self._error(HTTPStatus.BAD_REQUEST, "A label is a JSON object of at most 1 MB.")
            return
        try:
            payload = json.loads(self.rfile.read(length))
        except ValueError:
            self._error(HTTPStatus.BAD_REQUEST, "The label is not valid JSON.")
            return
        if not isinstance(payload, dict):
            self._error(HTTPStatus.BAD_REQUEST, "A label is a JSON object.")
            return
        self._answer(lambda: self.session.save(payload))

    # --- helpers ----------------------------------------------------------------------------
    def _own_host(self) -> bool:
        """Whether the request names this server (see the module: DNS rebinding)."""
        port = cast(tuple[str, int], self.server.server_address)[1]
        if self.headers.get("Host") in {f"{HOST}:{port}", f"localhost:{port}"}:
            return True
        self._error(HTTPStatus.FORBIDDEN, f"This server answers requests to http://{HOST}:{port}/ only.")
        return False

    def _answer(self, make: Any) -> None:
        try:
            body = make()
        except LabelRejected as exc:
            self._error(HTTPStatus.BAD_REQUEST, str(exc))
            return
        except QagenError as exc:  # labels.jsonl cannot be read or written: the page shows why
            self._error(HTTPStatus.INTERNAL_SERVER_ERROR, str(exc))
            return
        self._send(HTTPStatus.OK, json.dumps(body).encode("utf-8"), "application/json")

    def _error(self, status: HTTPStatus, message: str) -> None:
        self._send(status, json.dumps({"error": message}).encode("utf-8"), "application/json")

    def _send(self, status: HTTPStatus, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in _HEADERS.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the command prints its URL and the labels saved, not every request."""
