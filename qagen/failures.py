"""Why an LLM task has no result: one enum of failure kinds, and the `Failure` value records carry.

A failure is a value, never a guess: a task whose call failed or whose reply could not be read
returns a record with a `Failure` (and the raw reply, where one came), and every decision about it
(redo it on resume? stop the critics? count it as paid?) reads `kind` and `retryable`, never a
string prefix.

The user-facing `reason` strings (the `reason` column of `candidates`, the `*_reason` fields of
an evaluation's `results.jsonl`) are derived from the kind in one place, `Failure.reason`:
`api_error:<kind>` for a call that failed, the bare kind for a reply that could not be read.
"""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, ConfigDict, Field


class FailureKind(str, Enum):
    """Every reason an LLM task can fail. A `str` enum: its value is the name users see."""

    # The call failed: no reply came back after the client's retries. Nothing was read, so the
    # call is worth making again on resume (`CALL_FAILURES`).
    RATE_LIMITED = "rate_limited"
    SERVER_ERROR = "server_error"
    CONNECTION_ERROR = "connection_error"
    BAD_REQUEST = "bad_request"
    MALFORMED_COMPLETION = "malformed_completion"
    API_ERROR = "api_error"
    """A call failure of no known kind (a provider's own exception type)."""
    BATCH_EXPIRED = "batch_expired"
    """The request's batch ended (expired, failed or cancelled) before the request was run."""

    # The reply came, and holds no usable answer. Asking again would be paid for and, at the
    # same prompt, most likely read the same way: not retried.
    TRUNCATED = "truncated"
    """Cut off at the output cap (or thinking never closed): raise the cap to read such replies."""
    EMPTY_REPLY = "empty_reply"
    REFUSAL = "refusal"
    PARSE_FAILURE = "parse_failure"
    TEMPLATE_ECHO = "template_echo"
    WRONG_SCALE = "wrong_scale"
    OUT_OF_RANGE = "out_of_range"
    NON_INTEGER = "non_integer_rating"
    """A rating or score with decimals (4.5): one name for critics and judges alike."""
    AMBIGUOUS_SCORE = "ambiguous_score"
    NO_SCORE = "no_score"
    INVALID_SCORE = "invalid_score"
    INVALID_GRADE = "invalid_grade"
    MISSING_VERDICT = "missing_verdict"
    EXTRA_VERDICTS = "extra_verdicts"
    """More `Verdict:` labels than items, in a reply that numbers none of them."""
    INVALID_VERDICT = "invalid_verdict"
    MISSING_NONCOMMITTAL = "missing_noncommittal"
    INVALID_NONCOMMITTAL = "invalid_noncommittal"
    EXTRACTION_NOT_VERBATIM = "extraction_not_verbatim"
    ZERO_EMBEDDING = "zero_embedding"
    # The draft's own protocol.
    NO_ANSWER = "no_answer"
    EMPTY_QUESTION = "empty_question"
    EMPTY_ANSWER = "empty_answer"
    QUESTION_TOO_LONG = "question_too_long"
    ANSWER_TOO_LONG = "answer_too_long"
    """Longer than a factoid answer can be (the notebook drops answers over 300 characters)."""
    MISSING_PAIR = "missing_pair"
    """A reply asked for several question/answer pairs (`per_chunk`) held fewer: the draft of each pair it lacks."""

    # Nothing to judge: the metric is undefined for this item (no call is made).
    NO_CONTEXTS = "no_contexts"
    NO_REFERENCE = "no_reference"
    NO_STATEMENTS = "no_statements"

    def __str__(self) -> str:
        return self.value


CALL_FAILURES = frozenset(
    {
        FailureKind.RATE_LIMITED,
        FailureKind.SERVER_ERROR,
        FailureKind.CONNECTION_ERROR,
        FailureKind.BAD_REQUEST,
        FailureKind.MALFORMED_COMPLETION,
        FailureKind.API_ERROR,
        FailureKind.BATCH_EXPIRED,
    }
)
"""Kinds where no reply came back: retried on resume, and not paid for."""

_CALL_PREFIX = "api_error"


class Failure(BaseModel):
    """Why a task has no result, with the details a user needs to see what happened."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: FailureKind = Field(description="What went wrong.")
    retryable: bool = Field(description="True when no reply came back, so a resumed run asks again.")
    detail: str = Field(default="", description="A redacted, human-readable explanation (an error message).")

    @classmethod
    def of(cls, kind: FailureKind, detail: str = "") -> Failure:
        """A failure of `kind`; retryable exactly when it is a call failure."""
        return cls(kind=kind, retryable=kind in CALL_FAILURES, detail=detail)

    @property
    def is_call_failure(self) -> bool:
        """No reply came back (the call failed), as opposed to a reply that could not be read."""
        return self.kind in CALL_FAILURES

    @property
    def reason(self) -> str:
        """The user-facing reason string (a contract): `api_error:rate_limited`, `refusal`, ..."""
        if not self.is_call_failure:
            return self.kind.value
        return _CALL_PREFIX if self.kind is FailureKind.API_ERROR else f"{_CALL_PREFIX}:{self.kind.value}"


def is_call_failure_reason(reason: str) -> bool:
    """Whether a stored reason string (`Failure.reason`) is a call that got no reply: asked again on resume."""
    return reason.partition(":")[0] == _CALL_PREFIX
