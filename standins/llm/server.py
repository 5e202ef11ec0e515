"""A local stand-in for an OpenAI-compatible chat-completions server (tests, benchmarks, CI).

There is no real LLM on the test machines, so the product's real `langchain-openai` client talks
to this server on 127.0.0.1 instead. It answers qagen's prompts deterministically (see
`standins.llm.replies`) and can misbehave on purpose, reproducibly (`standins.llm.routes`
answers the requests, `standins.llm.http` is the HTTP plumbing):

- ``latency``: seconds per reply, slept in the request's own thread (no lock held), so many
  concurrent requests overlap like they do against a real provider;
- ``fault_rate``, ``fault_kinds``, ``fault_attempts``, ``timeout_sleep``, ``retry_after``: that
  share of request bodies fails its first attempt(s) with a 429, a 500, a dropped connection or a
  timeout, reproducibly (`standins.llm.faults`); a retrying client ends with the same answers;
- ``malformed_rate``, ``format_variety``, ``generation_format_variety``, ``duplicate_rate``,
  ``pass_rate``, ``score_policy``, ``judge_policy``: what the replies say (`ReplyPolicy`);
- ``think_rate``, ``think_tag``, ``reasoning_content_rate``, ``truncate_rate``,
  ``unterminated_think_rate``, ``huge_reply_bytes``, ``huge_rate``: how they are sent, as reasoning
  models and length-limited servers send them (`ShapePolicy`, `standins.llm.shaping`); the
  request's ``max_tokens`` / ``max_completion_tokens`` is always honoured;
- ``batch_polls``, ``batch_failure_rate``, ``batch_expire``, ``batch_drop_polls``,
  ``batch_line_status``: the Batch API (`/v1/files`, `/v1/batches`; `standins.llm.batches`):
  slow batches, error lines, expired batches, connections lost while polling, every line a 401,
  403 or 404;
- ``prefix_cache``: replies say, as OpenAI's do (``usage.prompt_tokens_details.cached_tokens``), how
  many prompt tokens a prefix cache held: those of the longest prefix the prompt shares with any
  prompt sent before (`standins.llm.prefix_cache`); off, replies say nothing of a cache;
- ``log_prompts``: each answered chat request's log entry keeps its messages' text (``messages``), so
  a test can compare the prompts a client sent (how calls about one draft share their opening);
- ``rerank_reply``: the shape of ``/rerank`` replies, vLLM's ``results`` or TEI's ``list``
  (`standins.llm.rerank`, which also answers the listwise rerank prompt);
- ``api_key`` (401 without it) and ``models`` (404 for any other model), OpenAI-shaped errors;
  with ``echo_key`` the 401, 429 and 500 messages quote the key they were sent, unmasked (OpenAI
  quotes a masked key), so tests can check that no error body carries a key through to the user;
  with ``record_credentials`` each log entry keeps the request's query string and Authorization
  header (``query``, ``authorization``), so tests can check that a key reached the server.

``/v1/embeddings`` answers with deterministic hashed-bag-of-words vectors (`standins.llm.embeddings`),
logged with kind ``embeddings``, so dense retrieval through an OpenAI-compatible server is tested
offline; the fault and reply knobs are the chat endpoint's and do not apply to it.

Every request is logged (in memory, and as JSON lines to ``log_path``, flushed per line so that
another process can read it even after the client was killed). A bug in the stand-in itself (or
in a caller's policy) is answered with a 500 that tells the client not to retry, and logged with
kind ``crash``, so it can never pass for an injected fault.

    with StandInLLM(latency=0.0, pass_rate=0.8) as llm:
        model = ChatOpenAI(model="stand-in", base_url=llm.base_url, api_key="k")

    python -m standins.llm.server --port 8000 --latency 0.2 --fault-rate 0.15 --log r.jsonl
"""

from __future__ import annotations

import dataclasses
import signal
import sys
import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import FrameType, TracebackType
from typing import TYPE_CHECKING, Any

from standins.llm.faults import FAULT_KINDS
from standins.llm.http import HOST, LLMHTTPServer
from standins.llm.knobs import KNOB_FIELDS, REPLY_FIELDS, SHAPE_FIELDS, Knobs
from standins.llm.log import LogEntry
from standins.llm.outcomes import DEFAULT_PASS_RATE, DUPLICATE_QUESTION, factoid_for, judge_score, score_for
from standins.llm.payloads import DEFAULT_MODEL
from standins.llm.replies import JudgePolicy, ReplyPolicy, ScorePolicy
from standins.llm.routes import StandInApp
from standins.llm.server_args import build_parser
from standins.llm.shaping import ShapePolicy

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
        think_rate: float = 0.0,
        think_tag: str = "think",
        reasoning_content_rate: float = 0.0,
        truncate_rate: float = 0.0,
        unterminated_think_rate: float = 0.0,
        huge_reply_bytes: int = 0,
        huge_rate: float = 1.0,
        api_key: str | None = None,
        echo_key: bool = False,
        record_credentials: bool = False,
        models: Sequence[str] | None = None,
        batch_polls: int = 0,
        batch_failure_rate: float = 0.0,
        batch_expire: int = 0,
        batch_drop_polls: int = 0,
        batch_line_status: int = 0,
        rerank_reply: str = "results",
        prefix_cache: bool = False,
        log_prompts: bool = False,
        log_path: str | Path | None = None,
    ) -> None:
        self._requested_port = port
        knobs = Knobs(
            latency=latency,
            fault_rate=fault_rate,
            fault_kinds=tuple(fault_kinds),
            fault_attempts=fault_attempts,
            timeout_sleep=timeout_sleep,
            retry_after=retry_after,
            api_key=api_key,
            echo_key=echo_key,
            record_credentials=record_credentials,
            models=tuple(models) if models is not None else None,
            batch_polls=batch_polls,
            batch_failure_rate=batch_failure_rate,
            batch_expire=batch_expire,
            batch_drop_polls=batch_drop_polls,
            batch_line_status=batch_line_status,
            rerank_reply=rerank_reply,
            prefix_cache=prefix_cache,
            log_prompts=log_prompts,
            replies=ReplyPolicy(
                pass_rate=dict(pass_rate) if isinstance(pass_rate, Mapping) else pass_rate,
                format_variety=format_variety,
                generation_format_variety=generation_format_variety,
                duplicate_rate=duplicate_rate,
                malformed_rate=malformed_rate,
                score_policy=score_policy,
                judge_policy=judge_policy,
            ),
            shaping=ShapePolicy(
                think_rate=think_rate,
                think_tag=think_tag,
                reasoning_content_rate=reasoning_content_rate,
                truncate_rate=truncate_rate,
                unterminated_think_rate=unterminated_think_rate,
                huge_reply_bytes=huge_reply_bytes,
                huge_rate=huge_rate,
            ),
        )
        self.log_path = Path(log_path) if log_path is not None else None
        self._app = StandInApp(knobs)
        self._httpd: LLMHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> StandInLLM:
        """Bind 127.0.0.1 (port 0 = any free port) and serve in a background thread."""
        if self._httpd is not None:
            raise RuntimeError("the stand-in LLM is already running")
        self._app.stopping.clear()
        httpd = LLMHTTPServer((HOST, self._requested_port), self._app)  # binds first: a busy port leaks nothing
        if self.log_path is not None:
            try:
                self._app.log.open(self.log_path)
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
        self._app.stopping.set()  # wakes handlers sleeping in latency or a timeout fault
        httpd.shutdown()
        httpd.server_close()
        # Idle keep-alive connections would otherwise keep their threads (and the client's
        # pooled sockets) alive after the server is gone.
        httpd.close_connections()
        if self._thread is not None:
            self._thread.join()
        self._app.log.close()

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
        return self._app.knobs

    def configure(self, **changes: Any) -> None:
        """Change knobs (constructor names, except `port`/`log_path`) for subsequent requests."""
        unknown = set(changes) - REPLY_FIELDS - SHAPE_FIELDS - KNOB_FIELDS
        if unknown:
            raise TypeError(f"unknown knob(s): {sorted(unknown)}")
        transport = {k: v for k, v in changes.items() if k in KNOB_FIELDS}
        for name in ("fault_kinds", "models"):
            if transport.get(name) is not None:
                transport[name] = tuple(transport[name])
        replies = dataclasses.replace(
            self._app.knobs.replies, **{k: v for k, v in changes.items() if k in REPLY_FIELDS}
        )
        shaping = dataclasses.replace(
            self._app.knobs.shaping, **{k: v for k, v in changes.items() if k in SHAPE_FIELDS}
        )
        # One assignment: a request in flight sees either the old knobs or the new ones.
        self._app.knobs = dataclasses.replace(self._app.knobs, replies=replies, shaping=shaping, **transport)

    def chat_model(self, **kwargs: Any) -> ChatOpenAI:
        """A `ChatOpenAI` pointed at this server (defaults: model "stand-in", this server's key)."""
        from langchain_openai import ChatOpenAI

        kwargs.setdefault("model", DEFAULT_MODEL)
        kwargs.setdefault("api_key", self._app.knobs.api_key or "stand-in-key")
        return ChatOpenAI(base_url=self.base_url, **kwargs)

    # ------------------------------------------------------------------ the log

    @property
    def max_in_flight(self) -> int:
        """The most requests this server was serving at one time."""
        return self._app.max_in_flight

    def reset_max_in_flight(self) -> None:
        """Start counting `max_in_flight` afresh (between two runs against one server)."""
        self._app.max_in_flight = 0

    @property
    def log(self) -> list[LogEntry]:
        """A snapshot of every request logged so far, oldest first."""
        return self._app.log.entries()

    def requests_by_body(self) -> Counter[str]:
        """How many chat requests arrived per request-body sha256."""
        return Counter(e["body_sha256"] for e in self.log if e["method"] == "POST" and e["body_sha256"])

    def reset(self) -> None:
        """Forget the in-memory log, the attempt counters and the prompt cache (the JSONL file is kept)."""
        self._app.attempts.clear()
        self._app.prefix_cache.clear()
        self._app.log.clear()


# ---------------------------------------------------------------------- command line


def main(argv: Sequence[str] | None = None) -> int:
    """Serve until SIGTERM or SIGINT, then exit 0 (options: `standins.llm.server_args`)."""
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
            think_rate=args.think_rate,
            think_tag=args.think_tag,
            reasoning_content_rate=args.reasoning_content_rate,
            truncate_rate=args.truncate_rate,
            unterminated_think_rate=args.unterminated_think_rate,
            huge_reply_bytes=args.huge_reply_bytes,
            huge_rate=args.huge_rate,
            api_key=args.api_key,
            models=args.models,
            prefix_cache=args.prefix_cache,
            log_prompts=args.log_prompts,
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
