"""The RAG system under test, behind one small protocol, and three ways to plug one in.

- `AnswersFileSystem`: answers computed beforehand, one JSON object per line;
- `CallableSystem`: a Python function (sync or async) or a LangChain `Runnable`;
- `EndpointSystem`: an HTTP service that answers `POST {"question": ...}`.

Every adapter turns what the system gave back into a `RagOutput` through `parse_reply`, so the three
accept the same shapes: a plain answer string, or an object `{answer, contexts, sources}` whose
contexts are strings, objects `{text, source, start_index, end_index}` or LangChain `Document`s.

A failure of the system on one question is a value (`RagOutput.error`), never a crash of the
evaluation; only what makes every question fail (a malformed answers file, an unreachable endpoint)
raises a `QagenError` with one clear sentence.
"""

from __future__ import annotations

import asyncio
import email.utils
import importlib
import inspect
import json
import os
import random
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import httpx
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable

from qagen.errors import ConfigError, QagenError
from qagen.evaluate.records import RagOutput, RetrievedContext
from qagen.redaction import redact, strip_userinfo

__all__ = [
    "AnswersFileSystem",
    "BadReply",
    "CallableSystem",
    "EndpointSystem",
    "RagSystem",
    "close_system",
    "load_answers",
    "load_callable",
    "normalize_question",
    "parse_reply",
]

# Key names accepted for the answer and the contexts: qagen's own first, then those of the
# cookbook notebook's results file (`generated_answer`, `retrieved_docs`) and of LangChain's
# `create_retrieval_chain` output (`context`, a list of Documents).
ANSWER_KEYS = ("answer", "generated_answer")
CONTEXT_KEYS = ("contexts", "retrieved_docs", "context")
_EXCERPT = 200
# A server asking for a longer pause than this is treated as asking for this long.
_MAX_RETRY_AFTER = 300.0


@runtime_checkable
class RagSystem(Protocol):
    """A RAG system under test. It may also define `async def aclose()` (see `close_system`)."""

    @property
    def name(self) -> str:
        """A short name for reports."""
        ...

    async def answer(self, question: str) -> RagOutput:
        """Answer one question; a failure is returned as `RagOutput(answer=None, error=...)`."""
        ...


async def close_system(system: RagSystem) -> None:
    """Release the system's resources (connections), if it holds any."""
    close = getattr(system, "aclose", None)
    if close is not None:
        await close()


def normalize_question(question: str) -> str:
    """The key questions are matched by: stripped, every run of whitespace made one space.

    The published cookbook test set's questions end with a newline, and a file written by another
    tool may not keep it; neither difference changes the question.
    """
    return " ".join(question.split())


# --------------------------------------------------------------------------- reply shapes


class BadReply(ValueError):
    """What a system gave back is not a RAG output; the message says what is wrong."""


def parse_reply(value: object) -> RagOutput:
    """A `RagOutput` from what a system returned; raises `BadReply` for any other shape.

    Accepted: a `RagOutput`; a string (the answer, no contexts); a chat message (its text); an
    object with `answer` and optionally `contexts` (strings, objects with `text`, or LangChain
    `Document`s) and `sources` (one source id per context, used where a context names none).
    """
    if isinstance(value, RagOutput):
        return value
    if isinstance(value, str):
        return RagOutput(answer=value)
    if isinstance(value, BaseMessage):
        return RagOutput(answer=value.text)
    if not isinstance(value, Mapping):
        raise BadReply(f"expected a string or an object with an 'answer', got {type(value).__name__}")
    answer_key = next((key for key in ANSWER_KEYS if key in value), None)
    if answer_key is None:
        raise BadReply(f"no 'answer' in the reply (its keys are: {', '.join(map(str, value)) or 'none'})")
    answer = value[answer_key]
    if isinstance(answer, BaseMessage):
        answer = answer.text
    if not isinstance(answer, str):
        raise BadReply(f"'{answer_key}' must be a string, got {_type_name(answer)}")
    raw_contexts = next((value[key] for key in CONTEXT_KEYS if value.get(key) is not None), None)
    sources = value.get("sources")
    return RagOutput(answer=answer, contexts=_contexts(raw_contexts, sources))


def _contexts(raw: object, sources: object) -> list[RetrievedContext]:
    if raw is None:
        if sources:
            raise BadReply("'sources' without 'contexts': give the retrieved texts too, one per source")
        return []
    if isinstance(raw, (str, bytes)) or not isinstance(raw, Sequence):
        raise BadReply(f"'contexts' must be a list, got {_type_name(raw)}")
    if sources is not None:
        if isinstance(sources, (str, bytes)) or not isinstance(sources, Sequence):
            raise BadReply(f"'sources' must be a list, got {_type_name(sources)}")
        if len(sources) != len(raw):
            raise BadReply(f"{len(sources)} sources for {len(raw)} contexts; give one source per context")
        if not all(source is None or isinstance(source, str) for source in sources):
            raise BadReply("'sources' must be strings")
    return [
        _context(item, sources[position] if sources is not None else None, position)
        for position, item in enumerate(raw)
    ]


def _context(item: object, source: str | None, position: int) -> RetrievedContext:
    if isinstance(item, str):
        return RetrievedContext(text=item, source=source)
    if hasattr(item, "page_content") and hasattr(item, "metadata"):  # a LangChain Document
        metadata = item.metadata if isinstance(item.metadata, Mapping) else {}
        item = {"text": item.page_content, **{key: metadata.get(key) for key in ("source", "start_index")}}
    if not isinstance(item, Mapping):
        raise BadReply(f"context {position} must be a string or an object with 'text', got {_type_name(item)}")
    text = item.get("text")
    if not isinstance(text, str):
        raise BadReply(f"context {position} has no string 'text'")
    own_source = item.get("source")
    if own_source is not None and not isinstance(own_source, str):
        raise BadReply(f"context {position}: 'source' must be a string, got {_type_name(own_source)}")
    start, end = item.get("start_index"), item.get("end_index")
    for key, offset in (("start_index", start), ("end_index", end)):
        # bool is an int subclass; `true` as an offset is a mistake, not 1.
        if offset is not None and (isinstance(offset, bool) or not isinstance(offset, int) or offset < 0):
            raise BadReply(f"context {position}: '{key}' must be a non-negative integer, got {offset!r}")
    if start is not None and end is None:
        end = start + len(text)  # the convention of qagen's chunks: text == document[start:end]
    if start is not None and end is not None and end < start:
        raise BadReply(f"context {position}: end_index {end} is before start_index {start}")
    return RetrievedContext(text=text, source=own_source or source, start_index=start, end_index=end)


def _type_name(value: object) -> str:
    return "null" if value is None else type(value).__name__


# --------------------------------------------------------------------------- answers file


def load_answers(path: Path) -> dict[str, RagOutput]:
    """Answers by normalised question, from a JSONL file (or a JSON array of the same objects).

    The file is the user's own input, so every problem is a `ConfigError` naming the line, to be
    fixed before any score is computed: bad JSON, a line of the wrong shape, or a question given
    twice with different answers (which one would be scored?).
    """
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise ConfigError(f"Answers file not found: {path}.") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"Answers file {path} is not UTF-8 text (byte {exc.start}).") from None
    except OSError as exc:
        raise ConfigError(f"Cannot read the answers file {path}: {exc.strerror or exc}.") from None
    answers: dict[str, RagOutput] = {}
    first_seen: dict[str, str] = {}
    for where, row in _rows(path, text):
        if not isinstance(row, Mapping):
            raise ConfigError(f"{path}, {where}: expected a JSON object, got {_type_name(row)}.")
        question = row.get("question")
        if not isinstance(question, str) or not question.strip():
            raise ConfigError(f"{path}, {where}: no 'question' string.")
        try:
            output = parse_reply(row)
        except BadReply as exc:
            raise ConfigError(f"{path}, {where}: {exc}.") from None
        key = normalize_question(question)
        if key in answers:
            if answers[key] != output:
                raise ConfigError(
                    f"{path}, {where}: the question of {first_seen[key]} again, with a different answer "
                    "or contexts; keep only one of them."
                )
            continue
        answers[key] = output
        first_seen[key] = where
    if not answers:
        raise ConfigError(f"Answers file {path} has no answers.")
    return answers


def _rows(path: Path, text: str) -> list[tuple[str, object]]:
    """(where, parsed value) for each entry; `where` is "line N" (or "item N" in a JSON array)."""
    if text.lstrip().startswith("["):
        # The cookbook notebook saves its results as one JSON array; accept that as it is.
        try:
            items = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}, line {exc.lineno}: not valid JSON ({exc.msg}, column {exc.colno}).") from None
        return [(f"item {number}", item) for number, item in enumerate(items, start=1)]
    rows: list[tuple[str, object]] = []
    # Split on "\n" only: `str.splitlines` would also split at U+2028 inside a JSON string.
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            rows.append((f"line {number}", json.loads(line)))
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}, line {number}: not valid JSON ({exc.msg}, column {exc.colno}).") from None
    return rows


class AnswersFileSystem:
    """Answers computed beforehand by the user's own RAG system, read from a JSONL file.

    Each line: `{"question": ..., "answer": ..., "contexts": [...], "sources": [...]}` (contexts and
    sources optional). Questions are matched after `normalize_question`.
    """

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._answers = load_answers(self.path)

    @property
    def name(self) -> str:
        return f"answers:{self.path.name}"

    def __len__(self) -> int:
        return len(self._answers)

    async def answer(self, question: str) -> RagOutput:
        output = self._answers.get(normalize_question(question))
        return output if output is not None else RagOutput(answer=None, error="not_in_answers_file")


# --------------------------------------------------------------------------- Python callables

RagCallable = Callable[[str], Any] | Runnable[Any, Any]


def load_callable(spec: str) -> Any:
    """The object named by `module:attribute` (the attribute may be dotted: `module:obj.method`).

    The current directory is put on `sys.path` first, so `my_rag:answer` finds `./my_rag.py`.
    """
    module_name, colon, attribute = spec.partition(":")
    if not colon or not module_name or not attribute:
        raise ConfigError(f"Expected 'module:function' (e.g. 'my_rag:answer'), got '{spec}'.")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and module_name.startswith(exc.name):
            raise ConfigError(
                f"Cannot import '{module_name}': no such module in {cwd} or the installed packages."
            ) from None
        raise ConfigError(f"Importing '{module_name}' failed: {exc}.") from exc
    except Exception as exc:  # the user's module may raise anything on import: one sentence, the cause chained
        raise ConfigError(f"Importing '{module_name}' failed: {type(exc).__name__}: {exc}.") from exc
    target: Any = module
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise ConfigError(f"Module '{module_name}' has no attribute '{attribute}'.")
        target = getattr(target, part)
    if not (callable(target) or isinstance(target, Runnable)):
        raise ConfigError(f"'{spec}' is a {type(target).__name__}, not a function or a LangChain Runnable.")
    return target


class CallableSystem:
    """A RAG system that is a Python function `question -> answer` or a LangChain `Runnable`.

    The function may be sync (run in a worker thread, so it never blocks the event loop and many
    questions can be in flight) or async. It returns anything `parse_reply` accepts. A Runnable is
    called with `ainvoke(question)`, or `ainvoke({input_key: question})` when `input_key` is given.
    """

    def __init__(self, fn: RagCallable, *, name: str | None = None, input_key: str | None = None) -> None:
        if not (isinstance(fn, Runnable) or callable(fn)):
            raise ConfigError(f"A RAG system must be a function or a LangChain Runnable, got {type(fn).__name__}.")
        self._fn = fn
        self._input_key = input_key
        self._name = name or _callable_name(fn)

    @classmethod
    def from_spec(cls, spec: str, *, input_key: str | None = None) -> CallableSystem:
        """The system named by `module:function` (see `load_callable`)."""
        return cls(load_callable(spec), name=spec, input_key=input_key)

    @property
    def name(self) -> str:
        return self._name

    async def answer(self, question: str) -> RagOutput:
        try:
            result = await self._call(question)
        except Exception as exc:  # noqa: BLE001 - deliberate: the system under test failing on one question is
            # one of the things an evaluation measures; it is recorded on that question (type and message
            # kept), not swallowed, and the other questions still run. Ctrl-C and cancellation are not
            # Exceptions and still stop the run.
            return RagOutput(answer=None, error=_system_error(exc))
        try:
            return parse_reply(result)
        except BadReply as exc:
            return RagOutput(answer=None, error=f"bad_response: {exc}")

    async def _call(self, question: str) -> object:
        fn = self._fn
        if isinstance(fn, Runnable):
            payload: object = question if self._input_key is None else {self._input_key: question}
            return await fn.ainvoke(payload)
        if _is_async_callable(fn):
            result = await fn(question)
        else:
            result = await asyncio.to_thread(fn, question)
        # A sync wrapper around an async function hands back the coroutine; finish it here.
        if inspect.isawaitable(result):
            result = await result
        return result


def _is_async_callable(fn: object) -> bool:
    # An object whose `__call__` is `async def` is as async as a coroutine function.
    return inspect.iscoroutinefunction(fn) or (
        not inspect.isroutine(fn) and inspect.iscoroutinefunction(type(fn).__call__)
    )


def _callable_name(fn: object) -> str:
    if isinstance(fn, Runnable):
        return fn.get_name()
    module = getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", None) or type(fn).__qualname__
    return f"{module}:{qualname}" if module else str(qualname)


def _system_error(exc: BaseException) -> str:
    message = redact(" ".join(str(exc).split()))[:500]
    return f"system_error: {type(exc).__name__}: {message}" if message else f"system_error: {type(exc).__name__}"


# --------------------------------------------------------------------------- HTTP endpoint


class EndpointSystem:
    """A RAG system behind HTTP: `POST url` with `{"question": ...}`, replying with `parse_reply`'s JSON.

    Retries 429, 5xx, timeouts and dropped connections up to `max_retries` times, with exponential
    backoff (`backoff` seconds, doubled each time) or the server's `Retry-After`. A question that
    still fails is recorded (`rate_limited`, `server_error: ...`, `timeout`, `connection_error`,
    `http_error: ...`, `bad_response: ...`). Raises `QagenError` only when the endpoint cannot be
    used at all: refused connections on every attempt, or 401/403/404/405, before any good reply.
    """

    def __init__(
        self,
        url: str,
        *,
        timeout: float = 60.0,
        max_retries: int = 3,
        backoff: float = 0.5,
        headers: Mapping[str, str] | None = None,
        name: str | None = None,
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"The RAG endpoint must be an http:// or https:// URL, got '{url}'.")
        if max_retries < 0 or timeout <= 0 or backoff < 0:
            raise ConfigError("The endpoint's timeout must be positive, its retries and backoff not negative.")
        self.url = url
        self._timeout = timeout
        self._max_retries = max_retries
        self._backoff = backoff
        self._headers = dict(headers or {})
        self._name = name or strip_userinfo(url) or url
        self._client: httpx.AsyncClient | None = None
        self._answered = 0

    @property
    def name(self) -> str:
        return self._name

    @property
    def _where(self) -> str:
        return strip_userinfo(self.url) or self.url

    async def aclose(self) -> None:
        """Close the HTTP connections (in the event loop that opened them)."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def _http(self) -> httpx.AsyncClient:
        # Made on first use, inside the running event loop: an httpx client belongs to one loop.
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self._timeout, headers=self._headers)
        return self._client

    async def answer(self, question: str) -> RagOutput:
        error = ""
        all_refused = True
        for attempt in range(self._max_retries + 1):
            wait = self._backoff * 2**attempt * (1 + 0.25 * random.random())  # jitter spreads retries out
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
            if attempt < self._max_retries:
                await asyncio.sleep(wait)
        if all_refused and self._answered == 0:
            raise QagenError(
                f"Cannot reach the RAG endpoint at {self._where} (connection refused after "
                f"{self._max_retries + 1} attempts); is the server running and is the URL right?"
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
