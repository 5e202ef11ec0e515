"""What one judge verdict was made of: the model calls, their raw replies, usage and prompt hashes.

Every judge (`qagen.evaluate.judges.registry`, `judges_boolean`, `judges_ragas`) asks a `JudgeClient` and keeps
each call in a `Transcript`, which then makes the `JudgeVerdict`: a value, or a failure reason that
tells a failed call from an unreadable reply.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from qagen.evaluate.records import JudgeVerdict
from qagen.llm.client import CallResult, ModelSettings
from qagen.llm.prompts import load_prompt
from qagen.records import Usage


class JudgeClient(Protocol):
    """What a judge needs of a model: `qagen.llm.client.LLMClient`, or a test's scripted fake."""

    @property
    def settings(self) -> ModelSettings: ...

    async def complete(self, prompt: str, *, system: str | None = None) -> CallResult: ...


@dataclass
class Transcript:
    """Every call one verdict is made of: raw replies, summed usage, prompt hashes, call errors."""

    metric: str
    model: str
    raw: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    prompts: dict[str, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def note(self, *names: str) -> None:
        """Record the hashes of the prompts used (a changed prompt must never pass for the old one)."""
        for name in names:
            self.prompts[name] = load_prompt(name).hash

    def record(self, call: CallResult) -> str | None:
        """Account for one call; its reply text, or None if the call failed (then see `call_failed`)."""
        self.usage = Usage(
            input_tokens=self.usage.input_tokens + call.usage.input_tokens,
            output_tokens=self.usage.output_tokens + call.usage.output_tokens,
        )
        if call.text is None:
            self.errors.append(f"{call.error}: {call.detail}" if call.detail else call.error)
            return None
        self.raw.append(call.text)
        return call.text

    def call_failed(self, **detail: object) -> JudgeVerdict:
        """The verdict after a failed call: reason `api_error:<kind>` (`api_error` alone when the kind
        is unknown), so a resumed run can tell by prefix a call worth retrying from an unreadable reply."""
        kind = self.errors[-1].split(":", 1)[0] if self.errors else ""
        return self.verdict(None, "api_error" if kind in ("", "api_error") else f"api_error:{kind}", **detail)

    def verdict(self, value: float | None, reason: str = "", /, **detail: object) -> JudgeVerdict:
        """The verdict: `value` (None with a `reason` when it failed) and its parts in `detail`."""
        if (value is None) == (reason == ""):
            raise ValueError("a verdict has either a value or a failure reason")
        parts: dict[str, object] = {"model": self.model, "prompts": dict(self.prompts), **detail}
        if self.errors:
            parts["call_errors"] = list(self.errors)
        return JudgeVerdict(
            metric=self.metric, value=value, reason=reason, raw=list(self.raw), detail=parts, usage=self.usage
        )
