"""Replies as parsers may read them: thinking set apart, cut-off replies marked, absurd sizes cut.

Every rule about the shape of a reply lives here, and every reply passes through `normalise_reply`
before any parser sees it (both backends build their `Reply` with it). The rules, in order:

- `reasoning_content` (vLLM's and llama.cpp's reasoning parsers): the thinking; parsers read the content.
- content opening with `<think>...</think>` (or `<thinking>`): the block(s) are the thinking;
  parsers read what follows.
- content with `</think>` but no opening tag (the chat template opened it, as DeepSeek-R1's does):
  what precedes is the thinking; parsers read what follows.
- content opening with `<think>` never closed: truncated (the cap was reached while thinking).
- `finish_reason: "length"` (the output cap was reached): truncated.
- content over `MAX_REPLY_CHARS` (`qagen.output_cap`, the cap RAG systems' answers share): cut to that
  size first, the cut written at its end.

A truncated reply is a failure with its own reason (`truncated`), never parsed: "Total rating: 4
because" and "Answer: It is abo" are not answers. The thinking is kept beside the reply, never
read for a verdict: a critic's "Total rating: 1" written while thinking does not beat its final
"Total rating: 5". A reply over `MAX_REPLY_CHARS` is cut before it is stored, and the cut is
written at its end, so a 2 MB runaway reply costs neither disk nor memory downstream.
"""

from __future__ import annotations

import re

from qagen.llm.task import Reply, TokenChoice
from qagen.output_cap import MAX_REPLY_CHARS, cap_text
from qagen.records import Usage

__all__ = ["MAX_REPLY_CHARS", "normalise_reply"]

# A leading thinking block: `<think>` or `<thinking>` (any case), up to its own closing tag.
_THINK_OPEN = re.compile(r"\A\s*<(think|thinking)>", re.IGNORECASE)
_THINK_CLOSE = {"think": re.compile(r"</think>", re.IGNORECASE), "thinking": re.compile(r"</thinking>", re.IGNORECASE)}
# The closing tag alone: templates that open the block themselves leave only `</think>` in the reply.
_BARE_CLOSE = re.compile(r"</think(?:ing)?>", re.IGNORECASE)
_ANY_OPEN = re.compile(r"<think(?:ing)?>", re.IGNORECASE)


def normalise_reply(
    content: str,
    usage: Usage,
    *,
    reasoning_content: str | None = None,
    finish_reason: str | None = None,
    tokens: tuple[TokenChoice, ...] | None = None,
) -> Reply:
    """The `Reply` for what a server sent (see the module's table)."""
    content, cut_from = cap_text(content)
    cut = cut_from is not None
    text, thinking, unterminated = _split_thinking(content)
    reasoning = "\n\n".join(part for part in (reasoning_content, thinking) if part) or None
    truncated = unterminated or finish_reason == "length"
    text = "" if truncated else text
    return Reply(
        text=text,
        usage=usage,
        raw=content if content != text else None,
        reasoning=reasoning,
        truncated=truncated,
        cut=cut,
        tokens=tokens if tokens and not cut else None,
    )


def _split_thinking(content: str) -> tuple[str, str | None, bool]:
    """(the text after any leading thinking blocks, the thinking, whether a block never closed)."""
    thoughts: list[str] = []
    rest = content
    while (opening := _THINK_OPEN.match(rest)) is not None:
        closing = _THINK_CLOSE[opening.group(1).lower()].search(rest, opening.end())
        if closing is None:
            thoughts.append(rest[opening.end() :].strip())
            return "", "\n\n".join(thoughts), True
        thoughts.append(rest[opening.end() : closing.start()].strip())
        rest = rest[closing.end() :]
    if not thoughts:
        bare = _BARE_CLOSE.search(rest)
        # Only when no block was opened before it: `<think>x</think>` inside an answer is text.
        if bare is not None and _ANY_OPEN.search(rest, 0, bare.start()) is None:
            thoughts.append(rest[: bare.start()].strip())
            rest = rest[bare.end() :]
    return rest.lstrip(), ("\n\n".join(thoughts) or None), False
