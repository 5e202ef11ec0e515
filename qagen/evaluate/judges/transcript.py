"""What one judge verdict was made of: the model calls, their raw replies, usage and prompt hashes.

Every judge (`correctness`, `ragas`, `graders`) is a pure state machine of steps (`qagen.llm.task`):
it asks for requests and reads the replies through a `Transcript`, which keeps each call and then
makes the `JudgeVerdict`: a value, or a failure that tells a failed call (retryable) from an
unreadable reply.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from qagen.evaluate.records import JudgeVerdict
from qagen.failures import Failure, FailureKind
from qagen.llm.prompts import Prompt, load_prompt
from qagen.llm.task import Ask, Done, Outcome, Reply, Request, Step, add_usage, truncated
from qagen.records import Usage

JudgeStep = Step[JudgeVerdict]


@dataclass
class Transcript:
    """Every call one verdict is made of: raw replies, summed usage, prompt hashes, call failures."""

    metric: str
    model: str
    raw: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    prompts: dict[str, str] = field(default_factory=dict)
    failures: list[Failure] = field(default_factory=list)

    def note(self, *names: str) -> None:
        """Record the hashes of the prompts used (a changed prompt must never pass for the old one)."""
        self.note_prompts(*(load_prompt(name) for name in names))

    def note_prompts(self, *prompts: Prompt) -> None:
        """`note`, for prompts loaded already (from a folder other than the bundled prompts)."""
        for prompt in prompts:
            self.prompts[prompt.name] = prompt.hash

    def record(self, outcome: Outcome) -> str | None:
        """Account for one call; the text to read, or None when there is none: the call failed, or
        the reply was cut off (then see `call_failed`)."""
        reply = self.record_reply(outcome)
        return None if reply is None else reply.text

    def record_reply(self, outcome: Outcome) -> Reply | None:
        """`record`, keeping the whole reply (its tokens' probabilities, for a verdict read as one)."""
        if isinstance(outcome, Failure):
            self.failures.append(outcome)
            return None
        self.usage = add_usage(self.usage, outcome.usage)
        self.raw.append(outcome.verbatim)
        if outcome.truncated:
            # A reply cut off at the output cap is kept and paid for, but never read.
            self.failures.append(truncated(outcome))
            return None
        return outcome

    def ask(self, request: Request, read: Callable[[str], JudgeStep], **failed_detail: object) -> Ask[JudgeVerdict]:
        """Send one request; continue with `read(reply)`, or end with `call_failed(**failed_detail)`."""

        def then(outcomes: Sequence[Outcome]) -> JudgeStep:
            (outcome,) = outcomes
            reply = self.record(outcome)
            return Done(self.call_failed(**failed_detail)) if reply is None else read(reply)

        return Ask((request,), then)

    def ask_reply(
        self, request: Request, read: Callable[[Reply], JudgeStep], **failed_detail: object
    ) -> Ask[JudgeVerdict]:
        """`ask`, continuing with the whole reply (`read(reply)`), not only its text."""

        def then(outcomes: Sequence[Outcome]) -> JudgeStep:
            (outcome,) = outcomes
            reply = self.record_reply(outcome)
            return Done(self.call_failed(**failed_detail)) if reply is None else read(reply)

        return Ask((request,), then)

    def call_failed(self, **detail: object) -> JudgeVerdict:
        """The verdict after a call without a readable reply: its failure (retryable when no reply came)."""
        failure = self.failures[-1] if self.failures else Failure.of(FailureKind.API_ERROR)
        return self._verdict(None, failure, detail)

    def verdict(
        self, value: float | None, reason: FailureKind | str | None = None, /, **detail: object
    ) -> JudgeVerdict:
        """The verdict: `value`, or None with the `reason` it has none; its parts in `detail`."""
        if (value is None) == (reason is None or reason == ""):
            raise ValueError("a verdict has either a value or a failure reason")
        failure = Failure.of(FailureKind(reason)) if value is None and reason else None
        return self._verdict(value, failure, detail)

    def done(self, value: float | None, reason: FailureKind | str | None = None, /, **detail: object) -> JudgeStep:
        """`verdict(...)` as the last step."""
        return Done(self.verdict(value, reason, **detail))

    def _verdict(self, value: float | None, failure: Failure | None, detail: dict[str, object]) -> JudgeVerdict:
        parts: dict[str, object] = {"model": self.model, "prompts": dict(self.prompts), **detail}
        if self.failures:
            parts["call_errors"] = [_call_error(failure) for failure in self.failures]
        return JudgeVerdict(
            metric=self.metric, value=value, failure=failure, raw=list(self.raw), detail=parts, usage=self.usage
        )


def _call_error(failure: Failure) -> str:
    return f"{failure.kind.value}: {failure.detail}" if failure.detail else failure.kind.value
