"""The stand-in LLM's request log: every request as it was seen and answered, in memory and as JSONL.

Lines go to the JSONL file as they are recorded, flushed one by one, so that another process can
read the log even after the client was killed.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import IO, TypedDict


class LogEntry(TypedDict):
    """One request as the server saw and answered it (also one line of the JSONL log)."""

    time: float
    method: str
    path: str
    body_sha256: str | None
    attempt: int | None  # n-th well-formed request with this body (None if rejected earlier)
    kind: str  # generation/critique/judge/answer/rerank, malformed, fault, error, models
    prompt: str | None  # the recognised prompt kind, also for malformed replies
    criterion: str | None
    question: str | None  # critique: the question rated (so a test can tell which drafts were critiqued)
    model: str | None
    status_code: int | None  # None: no response was sent (drop) or it was held back (timeout)
    score: int | None
    format: str | None
    malformed: str | None
    fault: str | None
    reply: str | None  # the message's content as sent (None: no reply, or `content: null`)
    # How the reply was sent (`standins.llm.shaping`); None for requests not answered by a reply.
    finish_reason: str | None  # "stop" or "length"
    thinking: str | None  # "inline", "reasoning_content", "unterminated", or None
    reasoning_content: str | None  # the message's reasoning_content as sent
    decoy_score: int | None  # the reasoning's draft rating / score / grade / verdict
    decoy_question: str | None  # the reasoning's draft question (generation)
    decoy_answer: str | None  # the reasoning's draft answer (generation, RAG answer)
    cut: str | None  # why the reply was cut short: "truncate_rate" or "max_tokens"
    huge_bytes: int | None  # huge_reply_bytes, if this reply was chosen for padding up to that size
    cached_tokens: int | None  # with the `prefix_cache` knob: the prompt tokens reported cached
    messages: str | None  # with the `log_prompts` knob: the request's messages' text, joined (as a cache holds it)
    # What credentials came with the request, only with the `record_credentials` knob (else None):
    # the raw query string and the Authorization header, unmasked.
    query: str | None
    authorization: str | None


def new_entry(method: str, path: str, body_sha256: str | None) -> LogEntry:
    """The entry of a request just arrived: kind `error` until it is answered otherwise."""
    return LogEntry(
        time=time.time(),
        method=method,
        path=path,
        body_sha256=body_sha256,
        attempt=None,
        kind="error",
        prompt=None,
        criterion=None,
        question=None,
        model=None,
        status_code=None,
        score=None,
        format=None,
        malformed=None,
        fault=None,
        reply=None,
        finish_reason=None,
        thinking=None,
        reasoning_content=None,
        decoy_score=None,
        decoy_question=None,
        decoy_answer=None,
        cut=None,
        huge_bytes=None,
        cached_tokens=None,
        messages=None,
        query=None,
        authorization=None,
    )


class RequestLog:
    """Entries in arrival order, and the JSONL file they are appended to while one is open."""

    def __init__(self) -> None:
        # Short-held: never while a handler sleeps or writes to its socket.
        self._lock = threading.Lock()
        self._entries: list[LogEntry] = []
        self._file: IO[str] | None = None

    def open(self, path: Path) -> None:
        """Append every entry recorded from now on to `path`."""
        self._file = path.open("a", encoding="utf-8")

    def close(self) -> None:
        """Stop writing to the file (the entries in memory are kept)."""
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    def record(self, entry: LogEntry) -> None:
        line = json.dumps(entry, ensure_ascii=False) + "\n"  # encoded outside the lock
        with self._lock:
            self._entries.append(entry)
            if self._file is not None:
                self._file.write(line)
                self._file.flush()

    def entries(self) -> list[LogEntry]:
        """A snapshot of every entry so far, oldest first."""
        with self._lock:
            return list(self._entries)

    def clear(self) -> None:
        """Forget the entries in memory (the file is kept)."""
        with self._lock:
            self._entries.clear()
