"""A batch's result lines as outcomes: the reply of an output line is read by the same parser as an
online reply (`qagen.llm.backends.parse_completion`, normalisation included), and an error line,
an expired request or a request with no line at all is the same kind of failure as online."""

from __future__ import annotations

import json
from typing import Any, NamedTuple

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


class LineOutcome(NamedTuple):
    """The outcome of one request of a batch, and the HTTP status of its line (None: no status)."""

    outcome: Outcome
    status: int | None

    @property
    def ran(self) -> bool:
        """Whether the request was run at all: a request its batch never reached (expired,
        cancelled) is no failed call, and does not count against the error budget."""
        return not (isinstance(self.outcome, Failure) and self.outcome.kind is FailureKind.BATCH_EXPIRED)


def outcome_of(line: dict[str, Any] | None, batch: str, status: str) -> LineOutcome:
    """The outcome of one request of a finished batch (`line` None: the batch returned nothing for it)."""
    if line is None:
        if status in ("expired", "cancelled"):
            detail = f"batch {batch} ended {status} before this request was run"
            return LineOutcome(Failure.of(FailureKind.BATCH_EXPIRED, detail), None)
        # A failed batch (its input refused as a whole), or a completed one that left this request out.
        return LineOutcome(Failure.of(FailureKind.API_ERROR, f"batch {batch} {status} without a result"), None)
    response = line.get("response") or {}
    code = response.get("status_code")
    code = code if isinstance(code, int) else None
    if code == 200 and isinstance(response.get("body"), dict):
        return LineOutcome(reply_of(response["body"]), code)
    error = line.get("error") or (response.get("body") or {}).get("error") or {}
    detail = redact(f"batch {batch}: {error.get('code') or code}: {error.get('message') or ''}")[:500]
    if error.get("code") == "batch_expired":
        return LineOutcome(Failure.of(FailureKind.BATCH_EXPIRED, detail), code)
    kind = _STATUS_KINDS.get(code or 0) or (
        FailureKind.SERVER_ERROR if code is not None and code >= 500 else FailureKind.API_ERROR
    )
    return LineOutcome(Failure.of(kind, detail), code)
