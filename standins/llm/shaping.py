"""How the stand-in LLM sends a reply once it is chosen: reasoning, cut-offs, padding, the token limit.

`standins.llm.replies` decides what a reply says; `shape` decides how it goes out, as reasoning
models and length-limited servers send it. Each knob is a share of replies, chosen by hash, and
every one is off by default (then `shape` sends the reply as it is):

- ``think_rate``: the reply is preceded by its reasoning, inline: ``<think>\\n...\\n</think>\\n``
  (``think_tag="thinking"``: ``<thinking>...</thinking>``). The reasoning holds decoys
  (`standins.llm.decoys`): a draft verdict or question that the reply then contradicts.
- ``reasoning_content_rate``: the same reasoning, without tags, in the message's
  ``reasoning_content`` field (vLLM with a reasoning parser); ``content`` holds only the reply.
  Takes precedence over ``think_rate``.
- ``truncate_rate``: the model went on after its reply (``Total rating: 4 because ...``) and was
  stopped at a hash-chosen point inside reply + continuation, so what arrives may lack its verdict
  (``Answer: It is abo``) or hold it complete and still be cut (``Total rating: 4 beca``); sent with
  ``finish_reason: "length"``. Reasoning, if any, comes before the cut reply, complete.
- ``unterminated_think_rate``: the model ran out of tokens while thinking: the reply is an opening
  tag and reasoning, never closed, and no reply; ``finish_reason: "length"``. Takes precedence over
  the knobs above.
- ``huge_reply_bytes`` with ``huge_rate`` (default 1.0, so the size alone turns it on): the reply,
  then filler text up to that many bytes (UTF-8), for checking that absurd replies are cut before
  storage. Sent with ``finish_reason: "stop"``.
- always: the request's ``max_completion_tokens`` (else ``max_tokens``) is honoured with the same
  ~4 characters per token as the usage figures: reasoning first, then content, cut where the
  budget ends, with ``finish_reason: "length"`` (a budget spent on reasoning leaves ``content: null``).

The thinking style (inline or ``reasoning_content``) is chosen per request body; the cut-offs and
padding per answer of a body (as malformed replies are), so a client that asks again can get a
whole reply. `Shaped` is what goes out, and the request log records it per answer:
``reply`` and ``reasoning_content`` (as sent), ``finish_reason``, ``thinking`` (``inline``,
``reasoning_content``, ``unterminated`` or None), ``decoy_score`` / ``decoy_question`` /
``decoy_answer`` (the reasoning's decoy values), ``cut`` (``truncate_rate``, ``max_tokens`` or None)
and ``huge_bytes``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Literal

from standins.llm.decoys import Decoy, reasoning_for
from standins.llm.outcomes import unit_interval
from standins.llm.replies import Reply

THINK_TAGS: tuple[str, ...] = ("think", "thinking")
Thinking = Literal["inline", "reasoning_content", "unterminated"]
Cut = Literal["truncate_rate", "max_tokens"]

# What a model stopped by its token limit was about to write next (see `truncate_rate`).
_CONTINUATION = " because that is how the material reads on a closer look at every part of it."
_PROSE_CONTINUATION = " This follows from the text, which says so in as many words."
# The last words of reasoning that never ended (see `unterminated_think_rate`).
_UNFINISHED = "Before I answer, let me look once more at the"
_FILLER = "\n\nThe stand-in keeps writing filler text to make this reply absurdly long."

CHARS_PER_TOKEN = 4


@dataclass(frozen=True)
class ShapePolicy:
    """The knobs that shape how a reply is sent (rates are shares of replies, chosen by hash)."""

    think_rate: float = 0.0
    think_tag: str = "think"
    reasoning_content_rate: float = 0.0
    truncate_rate: float = 0.0
    unterminated_think_rate: float = 0.0
    huge_reply_bytes: int = 0
    huge_rate: float = 1.0

    def rates(self) -> dict[str, float]:
        """The knobs that are shares, by name (for validation)."""
        return {
            "think_rate": self.think_rate,
            "reasoning_content_rate": self.reasoning_content_rate,
            "truncate_rate": self.truncate_rate,
            "unterminated_think_rate": self.unterminated_think_rate,
            "huge_rate": self.huge_rate,
        }

    def validate(self) -> None:
        """Raise ValueError for a tag or size no server sends (the rates are checked with the others)."""
        if self.think_tag not in THINK_TAGS:
            raise ValueError(f"think_tag must be one of {THINK_TAGS}, got {self.think_tag!r}.")
        size = self.huge_reply_bytes
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise ValueError(f"huge_reply_bytes must be an int >= 0, got {size!r}.")


@dataclass(frozen=True)
class Shaped:
    """A reply as sent (`content`, `reasoning_content`, `finish_reason`) and how it was shaped."""

    content: str | None
    reasoning_content: str | None = None
    finish_reason: str = "stop"
    thinking: Thinking | None = None
    decoy: Decoy | None = None
    cut: Cut | None = None
    huge_bytes: int | None = None  # huge_reply_bytes, if this reply was chosen for padding


def token_limit(request: dict[str, Any]) -> int | None:
    """The request's completion token budget: ``max_completion_tokens``, else ``max_tokens``."""
    limit = request.get("max_completion_tokens") or request.get("max_tokens")
    if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0:
        return limit
    return None


def tokens(text: str | None) -> int:
    """The stand-in's token count of `text`: about four characters per token."""
    return math.ceil(len(text or "") / CHARS_PER_TOKEN)


def _continuation(reply: Reply) -> str:
    return _PROSE_CONTINUATION if reply.prompt in ("generation", "answer") else _CONTINUATION


def _truncated(reply: Reply, request_key: str, reply_number: int) -> str:
    """`reply` and what the model would have written next, cut at a hash-chosen point inside it."""
    full = reply.content + _continuation(reply)
    at = 1 + int(unit_interval("truncate-at", request_key, str(reply_number)) * (len(full) - 1))
    return full[:at]


def _padded(content: str, size: int) -> str:
    missing = size - len(content.encode("utf-8", "surrogatepass"))
    if missing <= 0:
        return content
    return content + (_FILLER * (missing // len(_FILLER) + 1))[:missing]  # ASCII: one byte a char


def _within(content: str | None, reasoning: str | None, limit: int) -> tuple[str | None, str | None, bool]:
    """`content` and `reasoning` within `limit` tokens, reasoning first; and whether anything was cut."""
    budget = CHARS_PER_TOKEN * limit
    if reasoning is not None:
        if len(reasoning) > budget:
            return None, reasoning[:budget], True
        budget -= CHARS_PER_TOKEN * tokens(reasoning)
    if content is not None and len(content) > budget:
        return (content[:budget] or None), reasoning, True
    return content, reasoning, False


def shape(
    reply: Reply,
    policy: ShapePolicy,
    *,
    request_key: str,
    reply_number: int,
    max_tokens: int | None = None,
) -> Shaped:
    """How `reply` is sent under `policy`, within `max_tokens` (see the module docstring)."""
    number = str(reply_number)
    tag = policy.think_tag
    if unit_interval("unterminated-think", request_key, number) < policy.unterminated_think_rate:
        decoy = reasoning_for(reply, request_key)
        content = f"<{tag}>\n{decoy.text}\n{_UNFINISHED}"
        shaped = Shaped(content, finish_reason="length", thinking="unterminated", decoy=decoy)
    else:
        shaped = Shaped(reply.content, finish_reason=reply.finish_reason)
        if unit_interval("truncate", request_key, number) < policy.truncate_rate:
            shaped = Shaped(_truncated(reply, request_key, reply_number), finish_reason="length", cut="truncate_rate")
        if unit_interval("reasoning-content", request_key) < policy.reasoning_content_rate:
            decoy = reasoning_for(reply, request_key)
            shaped = replace(shaped, reasoning_content=decoy.text, thinking="reasoning_content", decoy=decoy)
        elif unit_interval("think", request_key) < policy.think_rate:
            decoy = reasoning_for(reply, request_key)
            inline = f"<{tag}>\n{decoy.text}\n</{tag}>\n{shaped.content}"
            shaped = replace(shaped, content=inline, thinking="inline", decoy=decoy)
    if policy.huge_reply_bytes > 0 and unit_interval("huge", request_key, number) < policy.huge_rate:
        padded = _padded(shaped.content or "", policy.huge_reply_bytes)
        shaped = replace(shaped, content=padded, huge_bytes=policy.huge_reply_bytes)
    if max_tokens is not None:
        sent, reasoning, cut = _within(shaped.content, shaped.reasoning_content, max_tokens)
        if cut:
            shaped = replace(
                shaped, content=sent, reasoning_content=reasoning, finish_reason="length", cut="max_tokens"
            )
    return shaped
