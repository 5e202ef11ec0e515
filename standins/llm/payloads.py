"""The OpenAI-shaped JSON the stand-in LLM reads and sends: chat messages, completions, errors, models.

Usage figures count about four characters per token (`standins.llm.shaping.tokens`), the same
rule that cuts a reply short at the request's `max_tokens` (`standins.llm.shaping.shape`).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from typing import Any

from standins.llm.logprobs import logprobs_content
from standins.llm.outcomes import unit_interval
from standins.llm.replies import ReplyPolicy
from standins.llm.shaping import Shaped, tokens

DEFAULT_MODEL = "stand-in"
CHAT_PATHS = frozenset({"/v1/chat/completions", "/chat/completions"})
MODELS_PATHS = frozenset({"/v1/models", "/models"})


def completion(
    request: dict[str, Any],
    messages: list[Any],
    shaped: Shaped,
    sha: str,
    *,
    kind: str = "",
    p_yes: float | None = None,
    replies: ReplyPolicy | None = None,
    cached_tokens: int | None = None,
) -> dict[str, Any]:
    """The `chat.completion` body answering `request` with `shaped` (`n` copies of it); when the server's
    `replies` policy sends token log probabilities and the request asks for them, the tokens of the reply
    of prompt kind `kind` (`standins.llm.logprobs`), a yes doubtful for the policy's `doubtful_yes_rate`
    of the requests (by their hash), a no for its `doubtful_no_rate`; `p_yes`: a yes/no's P(yes) as the
    hidden truth gives it (`standins.llm.truth`), instead of either.

    ``reasoning_content`` is a field of the message only when the reply has reasoning there, and
    then ``usage`` tells its tokens apart (``completion_tokens_details.reasoning_tokens``). With
    `cached_tokens` (the `prefix_cache` knob, `standins.llm.prefix_cache`), ``usage`` says how many
    prompt tokens were cached, as OpenAI does (``prompt_tokens_details.cached_tokens``).
    """
    message: dict[str, Any] = {"role": "assistant", "content": shaped.content}
    if shaped.reasoning_content is not None:
        message["reasoning_content"] = shaped.reasoning_content
    n = request.get("n")
    choices = n if isinstance(n, int) and 1 <= n <= 16 else 1
    prompt_tokens = tokens(whole_prompt(messages))
    reasoning_tokens = tokens(shaped.reasoning_content) * choices
    completion_tokens = tokens(shaped.content) * choices + reasoning_tokens
    usage: dict[str, Any] = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    if cached_tokens is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
    if shaped.reasoning_content is not None:
        usage["completion_tokens_details"] = {"reasoning_tokens": reasoning_tokens}
    asked = replies is not None and replies.logprobs and request.get("logprobs") is True
    doubtful = replies is not None and (
        unit_interval("doubtful-yes", sha) < replies.doubtful_yes_rate
        if shaped.content == "Yes"
        else unit_interval("doubtful-no", sha) < replies.doubtful_no_rate
    )
    impossible = replies.impossible_logprobs if replies is not None else None
    written = (
        logprobs_content(shaped.content, kind, doubtful=doubtful, impossible=impossible, p_yes=p_yes) if asked else None
    )
    sent = {"content": written, "refusal": None} if written is not None else None
    return {
        "id": "chatcmpl-" + hashlib.sha256(f"{sha}:{time.time_ns()}".encode()).hexdigest()[:24],
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request["model"],
        "choices": [
            {"index": i, "message": dict(message), "logprobs": sent, "finish_reason": shaped.finish_reason}
            for i in range(choices)
        ],
        "usage": usage,
    }


def model_object(name: str) -> dict[str, Any]:
    """One entry of `GET /v1/models`."""
    return {"id": name, "object": "model", "created": 0, "owned_by": "qagen-stand-in"}


def error_body(message: str, type_: str, code: str | None, param: str | None = None) -> dict[str, Any]:
    """An OpenAI error object."""
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


def encode(payload: Mapping[str, Any]) -> bytes:
    """`payload` as UTF-8 JSON bytes."""
    text = json.dumps(payload, ensure_ascii=False)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        # A reply holding a lone surrogate (half an emoji cut off): sent as the `\ud83d` escape,
        # as a JavaScript server would send it, so clients meet what real servers send.
        return json.dumps(payload).encode("ascii")


def message_text(message: Any) -> str:
    """The text of a chat message whose content is a string or a list of content parts."""
    if not isinstance(message, dict):
        return ""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def whole_prompt(messages: list[Any]) -> str:
    """Every message's text, joined: what `prompt_tokens` counts and a prompt cache holds."""
    return "".join(message_text(m) for m in messages)


def prompt_text(messages: list[Any]) -> str:
    """The last user message (the prompt templates are sent as one); else the last message."""
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            return message_text(message)
    return message_text(messages[-1])
