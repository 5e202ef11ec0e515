"""The chat-completions wire format of OpenAI-compatible servers: the body of a request, and the reply
read from a response body. Online calls (`qagen.llm.transport`) and Batch API lines
(`qagen.runs.batch`) use the same two functions, so a request is the same bytes either way and a
reply is read the same way."""

from __future__ import annotations

import json
import math
import re
from typing import TYPE_CHECKING, Any

from qagen.llm.normalise import normalise_reply
from qagen.llm.task import Reply, Request, TokenChoice
from qagen.records import Usage

if TYPE_CHECKING:
    from qagen.llm.backends import ModelSettings


def chat_body(settings: ModelSettings, request: Request) -> dict[str, Any]:
    """The chat-completions body of one request: online calls and batch lines send exactly this."""
    body: dict[str, Any] = {"model": settings.name}
    if settings.temperature is not None:
        body["temperature"] = settings.temperature
    body["max_tokens"] = settings.output_cap
    if settings.top_logprobs:
        body["logprobs"] = True
        body["top_logprobs"] = settings.top_logprobs
    body["messages"] = [{"role": message.role, "content": message.content} for message in request]
    return body


class MalformedCompletionError(ValueError):
    """The server answered 200 with a body that is not a chat completion."""


def parse_completion(body: bytes) -> Reply:
    """The reply in a chat-completion body, normalised (online replies and batch output lines alike)."""
    try:
        data = json.loads(body)
        choice = data["choices"][0]
        message = choice["message"]
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise MalformedCompletionError(f"not a chat completion: {body[:200]!r}") from exc
    # vLLM's and llama.cpp's reasoning parsers say `reasoning_content`; some servers `reasoning`.
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    return normalise_reply(
        valid_text(message.get("content") or ""),
        usage_of(data),
        reasoning_content=valid_text(reasoning) if isinstance(reasoning, str) else None,
        finish_reason=choice.get("finish_reason"),
        tokens=_tokens(choice.get("logprobs")),
    )


def usage_of(data: dict[str, Any]) -> Usage:
    """The tokens a chat-completion body reports; a count that is missing or not a number is 0.

    The cached part of the prompt is OpenAI's `usage.prompt_tokens_details.cached_tokens` (vLLM sends the
    same with prefix caching on, and recent llama.cpp servers too); else llama.cpp's own `timings.cache_n`
    (prompt tokens its slot's cache held). It is a part of the prompt, so never counted above it.
    """
    usage = data.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    details = usage.get("prompt_tokens_details")
    timings = data.get("timings")
    cached = _count(details.get("cached_tokens")) if isinstance(details, dict) else None
    if cached is None and isinstance(timings, dict):
        cached = _count(timings.get("cache_n"))
    input_tokens = _count(usage.get("prompt_tokens")) or 0
    return Usage(
        input_tokens=input_tokens,
        output_tokens=_count(usage.get("completion_tokens")) or 0,
        cached_input_tokens=min(cached or 0, input_tokens),
    )


def _count(value: Any) -> int | None:
    """A token count as a server sends it (an integer, sometimes as a float); None for anything else."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not (0 <= value < math.inf):
        return None
    return int(value)


def _tokens(logprobs: Any) -> tuple[TokenChoice, ...] | None:
    """The reply's tokens and their alternatives (`choices[0].logprobs.content`); None when the server
    sent none, or sent them in a shape that is not OpenAI's (a verdict is then read from its text)."""
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not isinstance(content, list) or not content:
        return None
    try:
        return tuple(
            TokenChoice(
                str(entry["token"]),
                tuple((str(alt["token"]), float(alt["logprob"])) for alt in entry.get("top_logprobs") or ())
                or ((str(entry["token"]), float(entry["logprob"])),),
            )
            for entry in content
        )
    except (KeyError, TypeError, ValueError):
        return None


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_text(text: str) -> str:
    """The reply with lone surrogates (half an emoji, cut by a server) replaced by U+FFFD.

    They cannot be encoded as UTF-8, so saving the record would fail; the rest of the reply is kept.
    """
    return text if text.isascii() else _LONE_SURROGATE.sub("\ufffd", text)
