"""A batch's result lines as outcomes: the reply of an output line is read by the same parser as an
online reply (`qagen.llm.backends.parse_completion`, normalisation included), and an error line,
an expired request or a request with no line at all is the same kind of failure as online.

`read_results` is the one rule by which result lines are matched to requests, for a Batch API's
output file and an offline runner's alike: a line for no request is set apart, a second line for
the same request is counted and ignored (an answer beats an error line; otherwise the first line
wins), and a 200 whose body is no chat completion is no answer, so it is asked again as online.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from qagen.failures import Failure, FailureKind
from qagen.llm.backends import MalformedCompletionError, parse_completion
from qagen.llm.task import Outcome, Reply
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


def answer_of(line: dict[str, Any]) -> dict[str, Any] | None:
    """The chat-completion body a result line answers with; None for an error line, or a 200 whose
    body is no chat completion (its outcome is a retryable `MALFORMED_COMPLETION`, as online)."""
    response = line.get("response")
    if not isinstance(response, dict) or response.get("status_code") != 200:
        return None
    body = response.get("body")
    return body if isinstance(body, dict) and isinstance(reply_of(body), Reply) else None


@dataclass
class ResultLines:
    """The lines of a results file matched to the requests they answer (see `read_results`)."""

    lines: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Request id -> the line read as its outcome: its first answer, else its first line."""
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Request id -> the chat-completion body answering it (the requests answered)."""
    duplicates: int = 0
    """Lines for a request that an earlier line of the file already stood for (ignored)."""
    unknown: int = 0
    """Lines whose custom_id is none of the requests (another round's, another run's: ignored)."""

    @property
    def malformed(self) -> int:
        """Requests whose only replies are 200s with a body that is no chat completion."""
        unanswered = (line for custom_id, line in self.lines.items() if custom_id not in self.answers)
        return sum(1 for line in unanswered if _status(line) == 200)

    @property
    def errors(self) -> int:
        """Requests answered by error lines only (a failed request, or one its batch never reached)."""
        return len(self.lines) - len(self.answers) - self.malformed


def read_results(lines: Iterable[dict[str, Any]], requests: Collection[str]) -> ResultLines:
    """Match result lines to `requests` (their custom_ids); see the module's docstring."""
    read = ResultLines()
    for line in lines:
        custom_id = line.get("custom_id")
        if not isinstance(custom_id, str) or custom_id not in requests:
            read.unknown += 1
            continue
        if custom_id in read.lines:
            read.duplicates += 1
        if custom_id in read.answers:
            continue
        answer = answer_of(line)
        if answer is not None:
            read.answers[custom_id] = answer
            read.lines[custom_id] = line
        else:
            read.lines.setdefault(custom_id, line)
    return read


def _status(line: dict[str, Any]) -> int | None:
    response = line.get("response")
    code = response.get("status_code") if isinstance(response, dict) else None
    return code if isinstance(code, int) else None
