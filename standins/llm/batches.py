"""The stand-in's Batch API: `/v1/files` and `/v1/batches` as OpenAI serves them, enough for the
real `openai` client (multipart upload, create, retrieve, list, file content).

A batch's lines are answered by the same function as the online endpoint (`routes.answer`), with
the same attempt counter, so a body gets the same reply in a batch as online. Knobs (`Knobs`):

- ``batch_polls``: retrievals that still say `in_progress` before the batch completes;
- ``batch_failure_rate``: that share of request bodies gets an error line (a 500) the first time
  it is in a batch, reproducibly; the next batch answers it;
- ``batch_expire``: the first N batches created expire, with output for the first half of their
  lines and `batch_expired` error lines for the rest;
- ``batch_drop_polls``: the first N retrievals of each batch close the connection without a reply;
- ``batch_line_status``: every line is answered with this error status (401, 403 or 404) and the
  online endpoint's error for it, as a server that checks each request's key or model reports them.
"""

from __future__ import annotations

import email.parser
import email.policy
import hashlib
import itertools
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from standins.llm.faults import AttemptCounter
from standins.llm.knobs import Knobs
from standins.llm.log import RequestLog, new_entry
from standins.llm.outcomes import unit_interval
from standins.llm.payloads import completion, error_body
from standins.llm.prefix_cache import PrefixCache

FILES_PATH = "/v1/files"
BATCHES_PATH = "/v1/batches"
DROP = "drop"
"""What `get` returns to say: close the connection without a reply."""


class Answer(NamedTuple):
    """An HTTP answer of the Batch API: status, body bytes, and the log entry's kind."""

    status: int
    body: bytes
    kind: str


def body_sha(body: Any) -> str:
    """The sha256 of a request body as the `openai` client serialises it (compact, UTF-8, in key
    order): the key the online endpoint sees for the same request."""
    return hashlib.sha256(json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()).hexdigest()


def answer_line(
    line: dict[str, Any], knobs: Knobs, attempts: AttemptCounter, log: RequestLog, cache: PrefixCache, *, fail: bool
) -> dict[str, Any]:
    """The output (or error) line answering one input line, logged as method `BATCH`."""
    from standins.llm.routes import answer, cached_part, describe  # routes imports this module

    custom_id = line.get("custom_id")
    body = line.get("body")
    sha = body_sha(body)
    entry = new_entry("BATCH", str(line.get("url")), sha)
    result: dict[str, Any] = {"id": f"batch_req_{sha[:24]}", "custom_id": custom_id, "error": None}
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list) or not body["messages"]:
        status, payload = (
            400,
            error_body(
                "A chat completion needs a non-empty 'messages' list.", "invalid_request_error", "invalid_request"
            ),
        )
    elif knobs.batch_line_status in _LINE_ERRORS:
        status = knobs.batch_line_status
        message, code = _LINE_ERRORS[status]
        payload = error_body(message.format(model=body.get("model")), "invalid_request_error", code)
    elif knobs.models is not None and body.get("model") not in knobs.models:
        status, payload = (
            404,
            error_body(f"The model `{body.get('model')}` does not exist.", "invalid_request_error", "model_not_found"),
        )
    elif fail:
        status, payload = 500, error_body("The server had an error processing this request.", "server_error", None)
        entry["kind"] = "fault"
        entry["fault"] = "batch_line"
    else:
        attempt, reply_number, _ = attempts.count(sha, fault_rate=0.0, fault_attempts=1, fault_kinds=("500",))
        entry["attempt"] = attempt
        entry["model"] = str(body.get("model"))
        reply, shaped = answer(body, knobs, sha, reply_number)
        describe(entry, reply, shaped)
        cached = cached_part(knobs, cache, body["messages"], entry)
        payload = completion(
            body,
            body["messages"],
            shaped,
            sha,
            kind=reply.prompt,
            p_yes=reply.p_yes,
            replies=knobs.replies,
            cached_tokens=cached,
        )
        status = 200
    entry["status_code"] = status
    log.record(entry)
    result["response"] = {"status_code": status, "request_id": f"req_{sha[:16]}", "body": payload}
    return result


_LINE_ERRORS = {
    401: ("Incorrect API key provided.", "invalid_api_key"),
    403: ("You are not allowed to use the model `{model}`.", "model_not_allowed"),
    404: ("The model `{model}` does not exist.", "model_not_found"),
}


def expired_line(line: dict[str, Any]) -> dict[str, Any]:
    """The error line of a request the batch did not reach before it expired."""
    message = "This request could not be executed before the completion window expired."
    return {
        "id": None,
        "custom_id": line.get("custom_id"),
        "response": None,
        "error": {"code": "batch_expired", "message": message},
    }


@dataclass
class _Batch:
    id: str
    input_file_id: str
    endpoint: str
    completion_window: str
    created_at: int
    expire: bool
    retrievals: int = 0
    status: str = "validating"
    output_file_id: str | None = None
    error_file_id: str | None = None
    counts: dict[str, int] = field(default_factory=lambda: {"total": 0, "completed": 0, "failed": 0})

    def json(self) -> dict[str, Any]:
        final = self.status in ("completed", "expired", "failed", "cancelled")
        return {
            "id": self.id, "object": "batch", "endpoint": self.endpoint, "errors": None,
            "input_file_id": self.input_file_id, "completion_window": self.completion_window,
            "status": self.status, "output_file_id": self.output_file_id, "error_file_id": self.error_file_id,
            "created_at": self.created_at, "in_progress_at": self.created_at, "expires_at": self.created_at + 86400,
            "completed_at": self.created_at if self.status == "completed" else None,
            "expired_at": self.created_at if self.status == "expired" else None,
            "finalizing_at": self.created_at if final else None, "failed_at": None, "cancelling_at": None,
            "cancelled_at": None, "request_counts": dict(self.counts), "metadata": None,
        }  # fmt: skip


class BatchAPI:
    """Files and batches in memory, answered as OpenAI answers them."""

    def __init__(self, attempts: AttemptCounter, log: RequestLog, cache: PrefixCache) -> None:
        self._attempts = attempts
        self._log = log
        self._cache = cache
        self._lock = threading.Lock()
        self._files: dict[str, tuple[str, str, bytes]] = {}  # id -> filename, purpose, content
        self._batches: dict[str, _Batch] = {}
        self._numbers = itertools.count(1)
        self._failed_once: set[str] = set()  # bodies whose first batch line was an error

    def handles(self, path: str) -> bool:
        return path == FILES_PATH or path.startswith((FILES_PATH + "/", BATCHES_PATH))

    def post(self, path: str, content_type: str, body: bytes, knobs: Knobs) -> Answer:
        if path == FILES_PATH:
            return self._upload(content_type, body)
        if path == BATCHES_PATH:
            return self._create(body, knobs)
        return _error(404, f"Unknown request URL: POST {path}.", "unknown_url")

    def get(self, path: str, knobs: Knobs) -> Answer | str:
        parts = path.strip("/").split("/")  # v1, files|batches, [id], [content]
        with self._lock:
            if path == BATCHES_PATH:
                data = [batch.json() for batch in reversed(self._batches.values())]
                return _json(200, {"object": "list", "data": data, "has_more": False}, "batch_list")
            if path == FILES_PATH:
                data = [self._file_json(file_id) for file_id in self._files]
                return _json(200, {"object": "list", "data": data, "has_more": False}, "file_list")
            if len(parts) == 4 and parts[1] == "files" and parts[3] == "content" and parts[2] in self._files:
                return Answer(200, self._files[parts[2]][2], "file_content")
            if len(parts) == 3 and parts[1] == "files" and parts[2] in self._files:
                return _json(200, self._file_json(parts[2]), "file")
            if len(parts) == 3 and parts[1] == "batches" and parts[2] in self._batches:
                batch = self._batches[parts[2]]
                batch.retrievals += 1
                if batch.retrievals <= knobs.batch_drop_polls:
                    return DROP
                if batch.status == "validating":
                    batch.status = "in_progress"
                if batch.status == "in_progress" and batch.retrievals > knobs.batch_polls + knobs.batch_drop_polls:
                    self._finish(batch, knobs)
                return _json(200, batch.json(), "batch")
        return _error(404, f"No such object: {path}.", "not_found")

    def _file_json(self, file_id: str) -> dict[str, Any]:
        filename, purpose, content = self._files[file_id]
        return {"id": file_id, "object": "file", "bytes": len(content), "created_at": int(time.time()),
                "filename": filename, "purpose": purpose, "status": "processed"}  # fmt: skip

    def _store(self, filename: str, purpose: str, content: bytes) -> str:
        file_id = f"file-{next(self._numbers):06d}"
        self._files[file_id] = (filename, purpose, content)
        return file_id

    def _upload(self, content_type: str, body: bytes) -> Answer:
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            f"Content-Type: {content_type}\r\n\r\n".encode() + body
        )
        fields: dict[str, tuple[str | None, bytes]] = {}
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            payload = part.get_payload(decode=True)
            if isinstance(name, str) and isinstance(payload, bytes):
                fields[name] = (part.get_filename(), payload)
        if "file" not in fields or "purpose" not in fields:
            return _error(400, "An upload needs a 'file' and a 'purpose'.", "invalid_request")
        with self._lock:
            file_id = self._store(fields["file"][0] or "upload.jsonl", fields["purpose"][1].decode(), fields["file"][1])
            return _json(200, self._file_json(file_id), "file_upload")

    def _create(self, body: bytes, knobs: Knobs) -> Answer:
        try:
            request = json.loads(body)
            input_file_id = str(request["input_file_id"])
        except (ValueError, KeyError, TypeError):
            return _error(400, "A batch needs an 'input_file_id'.", "invalid_request")
        with self._lock:
            if input_file_id not in self._files:
                return _error(400, f"No such file: {input_file_id}.", "invalid_request")
            number = next(self._numbers)
            batch = _Batch(
                id=f"batch_{number:06d}",
                input_file_id=input_file_id,
                endpoint=str(request.get("endpoint")),
                completion_window=str(request.get("completion_window")),
                created_at=int(time.time()),
                expire=sum(1 for _ in self._batches.values()) < knobs.batch_expire,
            )
            self._batches[batch.id] = batch
            return _json(200, batch.json(), "batch_create")

    def _finish(self, batch: _Batch, knobs: Knobs) -> None:
        lines = [json.loads(line) for line in self._files[batch.input_file_id][2].splitlines() if line.strip()]
        reached = len(lines) // 2 if batch.expire else len(lines)
        outputs: list[dict[str, Any]] = []
        errors: list[dict[str, Any]] = []
        for index, line in enumerate(lines):
            if index >= reached:
                errors.append(expired_line(line))
                continue
            sha = body_sha(line.get("body"))
            fail = (
                knobs.batch_failure_rate > 0
                and unit_interval("batch-failure", sha) < knobs.batch_failure_rate
                and sha not in self._failed_once
            )
            if fail:
                self._failed_once.add(sha)
            result = answer_line(line, knobs, self._attempts, self._log, self._cache, fail=fail)
            (outputs if result["response"]["status_code"] == 200 else errors).append(result)
        batch.counts = {"total": len(lines), "completed": len(outputs), "failed": len(errors)}
        if outputs:
            batch.output_file_id = self._store(f"{batch.id}_output.jsonl", "batch_output", _jsonl(outputs))
        if errors:
            batch.error_file_id = self._store(f"{batch.id}_error.jsonl", "batch_output", _jsonl(errors))
        batch.status = "expired" if batch.expire else "completed"


def _jsonl(lines: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode()


def _json(status: int, payload: dict[str, Any], kind: str) -> Answer:
    return Answer(status, json.dumps(payload, ensure_ascii=False).encode(), kind)


def _error(status: int, message: str, code: str) -> Answer:
    return _json(status, error_body(message, "invalid_request_error", code), "error")
