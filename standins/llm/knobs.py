"""The stand-in LLM's knobs: transport behaviour (latency, faults, auth, models), the reply policy
(what replies say) and the shape policy (how they are sent).

One frozen `Knobs` value is in force at a time; `StandInLLM.configure` replaces it in one assignment,
and each request reads it once, so a request in flight never sees half a change.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

from standins.llm.faults import FAULT_KINDS
from standins.llm.replies import ReplyPolicy
from standins.llm.rerank import RERANK_REPLIES
from standins.llm.shaping import ShapePolicy


@dataclasses.dataclass(frozen=True)
class Knobs:
    """Transport behaviour, reply and shape policies; replaced atomically by `StandInLLM.configure`."""

    latency: float = 0.0
    fault_rate: float = 0.0
    fault_kinds: tuple[str, ...] = FAULT_KINDS
    fault_attempts: int = 1
    timeout_sleep: float = 3.0
    retry_after: float = 0.0
    api_key: str | None = None
    echo_key: bool = False
    record_credentials: bool = False
    models: tuple[str, ...] | None = None
    # The Batch API's behaviour (`standins.llm.batches`).
    batch_polls: int = 0
    batch_failure_rate: float = 0.0
    batch_expire: int = 0
    batch_drop_polls: int = 0
    batch_line_status: int = 0
    # The shape of `/rerank` replies (`standins.llm.rerank`): "results" (vLLM) or "list" (TEI).
    rerank_reply: str = "results"
    # Report the prompt tokens shared with earlier prompts as cached (`standins.llm.prefix_cache`).
    prefix_cache: bool = False
    # Keep each chat request's whole prompt in its log entry (`LogEntry.messages`).
    log_prompts: bool = False
    replies: ReplyPolicy = dataclasses.field(default_factory=ReplyPolicy)
    shaping: ShapePolicy = dataclasses.field(default_factory=ShapePolicy)

    def __post_init__(self) -> None:
        rates = {
            "fault_rate": self.fault_rate,
            "batch_failure_rate": self.batch_failure_rate,
            "malformed_rate": self.replies.malformed_rate,
            "format_variety": self.replies.format_variety,
            "generation_format_variety": self.replies.generation_format_variety,
            "duplicate_rate": self.replies.duplicate_rate,
            "evidence_miss_rate": self.replies.evidence_miss_rate,
            "rule_break_rate": self.replies.rule_break_rate,
            "single_hop_rate": self.replies.single_hop_rate,
            **self.shaping.rates(),
        }
        pass_rate = self.replies.pass_rate
        if isinstance(pass_rate, Mapping):
            rates.update({f"pass_rate[{k}]": v for k, v in pass_rate.items()})
        else:
            rates["pass_rate"] = pass_rate
        for name, value in rates.items():
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be between 0 and 1, got {value}.")
        for name, value in (
            ("latency", self.latency),
            ("timeout_sleep", self.timeout_sleep),
            ("retry_after", self.retry_after),
        ):
            if not (value >= 0.0 and math.isfinite(value)):
                raise ValueError(f"{name} must be a finite number >= 0, got {value}.")
        for name, count in (
            ("batch_polls", self.batch_polls),
            ("batch_expire", self.batch_expire),
            ("batch_drop_polls", self.batch_drop_polls),
        ):
            if count < 0:
                raise ValueError(f"{name} must be an integer >= 0, got {count}.")
        if self.batch_line_status not in LINE_STATUSES:
            raise ValueError(f"batch_line_status must be one of {sorted(LINE_STATUSES)}, got {self.batch_line_status}.")
        if self.rerank_reply not in RERANK_REPLIES:
            raise ValueError(f"rerank_reply must be one of {sorted(RERANK_REPLIES)}, got {self.rerank_reply!r}.")
        if self.replies.max_pairs is not None and self.replies.max_pairs < 0:
            raise ValueError(f"max_pairs must be an integer >= 0, got {self.replies.max_pairs}.")
        if self.fault_attempts < 1:
            raise ValueError(f"fault_attempts must be at least 1, got {self.fault_attempts}.")
        unknown = set(self.fault_kinds) - set(FAULT_KINDS)
        if unknown or not self.fault_kinds:
            raise ValueError(f"fault_kinds must be a non-empty subset of {FAULT_KINDS}.")
        self.shaping.validate()


LINE_STATUSES = frozenset({0, 401, 403, 404})
"""`batch_line_status`: 0 (lines answered normally), or the error status every batch line gets."""

# The names `StandInLLM.configure` accepts: the reply policy's, the shape policy's, the transport knobs.
REPLY_FIELDS = frozenset(f.name for f in dataclasses.fields(ReplyPolicy))
SHAPE_FIELDS = frozenset(f.name for f in dataclasses.fields(ShapePolicy))
KNOB_FIELDS = frozenset(f.name for f in dataclasses.fields(Knobs)) - {"replies", "shaping"}
