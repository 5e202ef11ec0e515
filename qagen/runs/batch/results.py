"""A batch's result lines as outcomes: the reply of an output line is read by the same parser as an
online reply (`qagen.llm.backends.parse_completion`, normalisation included), and an error line,
an expired request or a request with no line at all is the same kind of failure as online."""

from __future__ import annotations

import json
from typing import Any

from qagen.failures import Failure, FailureKind
from qagen.llm.backends import MalformedCompletionError, parse_completion
from qagen.llm.task import Outcome
from qagen.redaction import redact

_STATUS_KINDS = {429: FailureKind.RATE_LIMITED, 400: FailureKind.BAD_REQUEST, 422: FailureKind.BAD_REQUEST}


def reply_of(body: dict[str, Any]) -> Outcome:
    """The outcome of a chat-completion body from an output line (or the cache)."""
    try:
        return parse_completion(json.dumps(body).encode())
    except MalformedCompletionError as exc:
        return Failure.of(FailureKind.MALFORMED_COMPLETION, redact(str(exc))[:500])


def outcome_of(line: dict[str, Any] | None, batch: str, status: str) -> Outcome:
    """The outcome of one request of a finished batch (`line` None: the batch returned nothing for it)."""
    if line is None:
        if status != "completed":
            return Failure.of(FailureKind.BATCH_EXPIRED, f"batch {batch} ended {status} before this request was run")
        return Failure.of(FailureKind.API_ERROR, f"batch {batch} completed without a result for this request")
    response = line.get("response") or {}
    code = response.get("status_code")
    if code == 200 and isinstance(response.get("body"), dict):
        return reply_of(response["body"])
    error = line.get("error") or (response.get("body") or {}).get("error") or {}
    detail = redact(f"batch {batch}: {error.get('code') or code}: {error.get('message') or ''}")[:500]
    if error.get("code") == "batch_expired":
        return Failure.of(FailureKind.BATCH_EXPIRED, detail)
    kind = _STATUS_KINDS.get(code or 0) or (
        FailureKind.SERVER_ERROR if isinstance(code, int) and code >= 500 else FailureKind.API_ERROR
    )
    return Failure.of(kind, detail)
