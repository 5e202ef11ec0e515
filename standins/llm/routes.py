"""What the stand-in LLM answers: chat completions, the model list, OpenAI-shaped errors and faults.

`StandInApp` is the app of `standins.llm.http.LLMHTTPServer`: it reads each request, checks it
as OpenAI does (key, model, body), counts its attempt (`standins.llm.faults`), and answers with
`make_reply`'s reply, sent as `shape` says (reasoning, cut-offs, padding, the request's token limit),
after the `latency` knob, or with the injected fault. Every request is logged before its answer goes
out, so once a client has its answer, the log already has it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
import time
from collections.abc import Mapping
from typing import Any

from standins.llm.batches import DROP, Answer, BatchAPI
from standins.llm.embeddings import EMBEDDINGS_PATHS, embeddings_reply, embeddings_request_error
from standins.llm.faults import AttemptCounter, fault_error
from standins.llm.http import LLMRequestHandler, read_body, send, sent_key
from standins.llm.knobs import Knobs
from standins.llm.log import LogEntry, RequestLog, new_entry
from standins.llm.payloads import (
    CHAT_PATHS,
    DEFAULT_MODEL,
    MODELS_PATHS,
    completion,
    encode,
    error_body,
    model_object,
    prompt_text,
    whole_prompt,
)
from standins.llm.prefix_cache import PrefixCache
from standins.llm.replies import Reply, make_reply
from standins.llm.rerank import RERANK_PATHS
from standins.llm.rerank_route import serve_rerank
from standins.llm.shaping import Shaped, shape, token_limit


def answer(request: dict[str, Any], knobs: Knobs, sha: str, reply_number: int) -> tuple[Reply, Shaped]:
    """The reply to a chat request and how it is sent: one function for the online endpoint, batch
    lines and the offline runner, so all three answer the same body alike."""
    reply = make_reply(
        prompt_text(request["messages"]), request_key=sha, reply_number=reply_number, policy=knobs.replies
    )
    shaped = shape(reply, knobs.shaping, request_key=sha, reply_number=reply_number, max_tokens=token_limit(request))
    return reply, shaped


def describe(entry: LogEntry, reply: Reply, shaped: Shaped) -> None:
    """Fill a log entry with the reply sent and how it was shaped."""
    entry["kind"] = reply.kind
    entry["prompt"] = reply.prompt
    entry["criterion"] = reply.criterion
    entry["question"] = reply.question
    entry["score"] = reply.score
    entry["format"] = reply.format
    entry["malformed"] = reply.malformed
    decoy = shaped.decoy
    entry["reply"] = shaped.content
    entry["finish_reason"] = shaped.finish_reason
    entry["thinking"] = shaped.thinking
    entry["reasoning_content"] = shaped.reasoning_content
    entry["decoy_score"] = decoy.score if decoy is not None else None
    entry["decoy_question"] = decoy.question if decoy is not None else None
    entry["decoy_answer"] = decoy.answer if decoy is not None else None
    entry["cut"] = shaped.cut
    entry["huge_bytes"] = shaped.huge_bytes


def cached_part(knobs: Knobs, cache: PrefixCache, messages: list[Any], entry: LogEntry) -> int | None:
    """With the `prefix_cache` knob, the prompt tokens `cache` holds (noted in the log entry);
    None without it, and then replies say nothing of a cache, as servers without one. With the
    `log_prompts` knob the entry keeps the whole prompt."""
    if knobs.log_prompts:
        entry["messages"] = whole_prompt(messages)
    if not knobs.prefix_cache:
        return None
    cached = entry["cached_tokens"] = cache.cached_tokens(whole_prompt(messages))
    return cached


class StandInApp:
    """The request -> response logic of the stand-in, with its knobs, request log and attempt counts."""

    def __init__(self, knobs: Knobs) -> None:
        self.knobs = knobs  # replaced whole by `StandInLLM.configure`; read once per request
        self.log = RequestLog()
        self.attempts = AttemptCounter()
        self.prefix_cache = PrefixCache()
        self.batches = BatchAPI(self.attempts, self.log, self.prefix_cache)
        self.stopping = threading.Event()  # set by `StandInLLM.stop`: wakes handlers asleep in latency or a fault
        # Chat requests being served right now, and the most there ever were at once: what a
        # client's bound on calls in flight is checked against.
        self._in_flight = 0
        self.max_in_flight = 0
        self._in_flight_lock = threading.Lock()
        self._serving: set[LLMRequestHandler] = set()

    def _authorised(self, handler: LLMRequestHandler, knobs: Knobs) -> bool:
        key = knobs.api_key
        return key is None or handler.headers.get("Authorization", "") == f"Bearer {key}"

    @staticmethod
    def _new_entry(handler: LLMRequestHandler, path: str, body_sha256: str | None, knobs: Knobs) -> LogEntry:
        entry = new_entry(handler.command, path, body_sha256)
        if knobs.record_credentials:
            # For tests of what the client sends: a key in the query string, a Basic or Bearer header.
            entry["query"] = handler.path.partition("?")[2] or None
            entry["authorization"] = handler.headers.get("Authorization")
        return entry

    def serve_get(self, handler: LLMRequestHandler) -> None:
        path = handler.path.split("?", 1)[0].rstrip("/")
        knobs = self.knobs
        entry = self._new_entry(handler, path, None, knobs)
        if not self._authorised(handler, knobs):
            self._error(handler, entry, 401, "Incorrect API key provided.", "invalid_api_key")
            return
        if self.batches.handles(path):
            self._batch_answer(handler, entry, self.batches.get(path, knobs))
            return
        names = list(knobs.models) if knobs.models is not None else [DEFAULT_MODEL]
        if path in MODELS_PATHS:
            entry["kind"] = "models"
            self._respond(handler, entry, 200, {"object": "list", "data": [model_object(n) for n in names]})
            return
        prefix = next((p + "/" for p in MODELS_PATHS if path.startswith(p + "/")), None)
        if prefix is not None:
            name = path[len(prefix) :]
            entry["model"] = name
            if knobs.models is None or name in knobs.models:
                entry["kind"] = "models"
                self._respond(handler, entry, 200, model_object(name))
            else:
                self._model_not_found(handler, entry, name)
            return
        self._error(handler, entry, 404, f"Unknown request URL: GET {path}.", "unknown_url")

    def serve_post(self, handler: LLMRequestHandler) -> None:
        with self._in_flight_lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
        self._serving.add(handler)
        try:
            self._serve_post(handler)
        finally:
            self._done_serving(handler)

    def _done_serving(self, handler: LLMRequestHandler) -> None:
        # Once per request, before its reply goes out (`_respond`), or when it ends without one:
        # a client that sends its next request the moment it has a reply must not find this one
        # still counted.
        with self._in_flight_lock:
            if handler in self._serving:
                self._serving.discard(handler)
                self._in_flight -= 1

    def _serve_post(self, handler: LLMRequestHandler) -> None:
        # The latency knob is the time from the request's arrival to the reply, the server's own
        # work included (as with a real server), so it is measured from here.
        arrived = time.monotonic()
        path = handler.path.split("?", 1)[0].rstrip("/")
        body = read_body(handler)
        if body is None:
            handler.close_connection = True  # the framing is broken; the stream cannot be trusted
            entry = self._new_entry(handler, path, None, self.knobs)
            self._error(handler, entry, 400, "Unreadable request body.", "invalid_body")
            return
        sha = hashlib.sha256(body).hexdigest()
        knobs = self.knobs  # one snapshot per request, so `configure()` never tears a request
        entry = self._new_entry(handler, path, sha, knobs)
        if self.batches.handles(path):
            if not self._authorised(handler, knobs):
                self._error(handler, entry, 401, "Incorrect API key provided.", "invalid_api_key")
                return
            content_type = handler.headers.get("Content-Type", "")
            self._batch_answer(handler, entry, self.batches.post(path, content_type, body, knobs))
            return
        if path in RERANK_PATHS:
            serve_rerank(self, handler, entry, body, sha, knobs, arrived)
            return
        if path not in CHAT_PATHS and path not in EMBEDDINGS_PATHS:
            self._error(handler, entry, 404, f"Unknown request URL: POST {path}.", "unknown_url")
            return
        if not self._authorised(handler, knobs):
            message = "Incorrect API key provided. You must pass the key as 'Authorization: Bearer'."
            if knobs.echo_key:
                message = f"Incorrect API key provided: {sent_key(handler)}. Find your API key in your account."
            self._error(handler, entry, 401, message, "invalid_api_key")
            return
        try:
            request = json.loads(body)
        except ValueError:
            request = None
        if not isinstance(request, dict):
            self._error(handler, entry, 400, "The request body is not a JSON object.", "invalid_json")
            return
        if path in EMBEDDINGS_PATHS:
            self._embeddings(handler, entry, request, knobs)
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
        if knobs.replies.refuse_logprobs and request.get("logprobs"):
            # As OpenAI's reasoning models answer a request for token log probabilities.
            message = "logprobs is not supported with this model."
            self._error(handler, entry, 400, message, "unsupported_parameter", param="logprobs")
            return

        attempt, reply_number, fault = self.attempts.count(
            sha, fault_rate=knobs.fault_rate, fault_attempts=knobs.fault_attempts, fault_kinds=knobs.fault_kinds
        )
        entry["attempt"] = attempt
        prompt = prompt_text(messages)
        if fault is not None:
            self._fault(handler, entry, fault, knobs, request, prompt, sha)
            return
        reply, shaped = answer(request, knobs, sha, reply_number)
        remaining = knobs.latency - (time.monotonic() - arrived)
        if remaining > 0 and self.stopping.wait(remaining):
            handler.close_connection = True  # shutting down: abandon the reply
            return
        self._complete(handler, entry, request, messages, reply, shaped, sha)

    def _embeddings(self, handler: LLMRequestHandler, entry: LogEntry, request: dict[str, Any], knobs: Knobs) -> None:
        problem = embeddings_request_error(request)
        if problem is not None:
            self._error(handler, entry, 400, problem, "invalid_request")
            return
        entry["model"] = request["model"]
        if knobs.models is not None and request["model"] not in knobs.models:
            self._model_not_found(handler, entry, request["model"])
            return
        entry["kind"] = "embeddings"
        self._respond(handler, entry, 200, embeddings_reply(request))

    def _fault(
        self,
        handler: LLMRequestHandler,
        entry: LogEntry,
        fault: str,
        knobs: Knobs,
        request: dict[str, Any],
        prompt: str,
        sha: str,
    ) -> None:
        entry["kind"] = "fault"
        entry["fault"] = fault
        if fault in ("429", "500"):
            # Providers quote request details in error messages; `echo_key` makes that the key itself.
            quoted = f" Request key: {sent_key(handler)}." if knobs.echo_key else ""
            status, error, headers = fault_error(fault, retry_after=knobs.retry_after, quoted=quoted)
            self._respond(handler, entry, status, error, headers)
        elif fault == "drop":
            # Logged first, so a test that sees the client's retry also sees this line.
            self.log.record(entry)
            handler.close_connection = True  # no response at all; `finish()` closes the socket
        else:  # timeout: log now, answer only after the client has given up
            self.log.record(entry)
            if self.stopping.wait(knobs.timeout_sleep):
                handler.close_connection = True
                return
            # Reply number 0 and no malformed replies: this answer is not counted as one.
            policy = dataclasses.replace(knobs.replies, malformed_rate=0.0)
            reply = make_reply(prompt, request_key=sha, reply_number=0, policy=policy)
            limit = token_limit(request)
            shaped = shape(reply, knobs.shaping, request_key=sha, reply_number=0, max_tokens=limit)
            cached = cached_part(knobs, self.prefix_cache, request["messages"], entry)
            payload = completion(
                request,
                request["messages"],
                shaped,
                sha,
                kind=reply.prompt,
                p_yes=reply.p_yes,
                replies=knobs.replies,
                cached_tokens=cached,
            )
            send(handler, 200, encode(payload), {})

    def _complete(
        self,
        handler: LLMRequestHandler,
        entry: LogEntry,
        request: dict[str, Any],
        messages: list[Any],
        reply: Reply,
        shaped: Shaped,
        sha: str,
    ) -> None:
        knobs = self.knobs
        cached = cached_part(knobs, self.prefix_cache, messages, entry)
        payload = completion(
            request,
            messages,
            shaped,
            sha,
            kind=reply.prompt,
            p_yes=reply.p_yes,
            replies=knobs.replies,
            cached_tokens=cached,
        )
        describe(entry, reply, shaped)
        self._respond(handler, entry, 200, payload)

    def _batch_answer(self, handler: LLMRequestHandler, entry: LogEntry, answer: Answer | str) -> None:
        if answer == DROP:  # a lost connection while polling: logged, then no reply at all
            entry["kind"] = "fault"
            entry["fault"] = "drop"
            self.log.record(entry)
            self._done_serving(handler)
            handler.close_connection = True
            return
        assert isinstance(answer, Answer)
        entry["kind"] = answer.kind
        entry["status_code"] = answer.status
        self.log.record(entry)
        self._done_serving(handler)
        send(handler, answer.status, answer.body, {})

    def crashed(self, handler: LLMRequestHandler) -> None:
        entry = self._new_entry(handler, handler.path.split("?", 1)[0], None, self.knobs)
        entry["kind"] = "crash"
        handler.close_connection = True  # the request may be half read; start afresh
        error = error_body("The stand-in LLM crashed; see its log.", "server_error", "stand_in_crash")
        self._respond(handler, entry, 500, error, {"x-should-retry": "false"})

    def _model_not_found(self, handler: LLMRequestHandler, entry: LogEntry, model: str) -> None:
        message = f"The model `{model}` does not exist or you do not have access to it."
        self._error(handler, entry, 404, message, "model_not_found")

    def _error(
        self,
        handler: LLMRequestHandler,
        entry: LogEntry,
        status: int,
        message: str,
        code: str,
        *,
        param: str | None = None,
    ) -> None:
        entry["kind"] = "error"
        self._respond(handler, entry, status, error_body(message, "invalid_request_error", code, param))

    def _respond(
        self,
        handler: LLMRequestHandler,
        entry: LogEntry,
        status: int,
        payload: dict[str, Any],
        headers: Mapping[str, str] | None = None,
    ) -> None:
        entry["status_code"] = status
        # Logged before the bytes go out: once the client has its answer, the log already has it.
        self.log.record(entry)
        self._done_serving(handler)
        send(handler, status, encode(payload), headers or {})
