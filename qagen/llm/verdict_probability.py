"""Verdicts read as probabilities from the tokens a server says were likely where the verdict is written.

A small model's written rating is one draw from what it thinks: "Total rating: 4" may hold 0.45 of
"4" and 0.40 of "2". G-Eval (Liu et al., 2023) scores a rating as its expectation over the rating
tokens; a yes/no item is read as P(yes) the same way. Both need the server's `top_logprobs` at the
position the verdict is written (OpenAI, vLLM and llama.cpp's server return them when asked).

The rule, one for every verdict: the written token that covers the verdict's first character must
itself be a verdict token (a rating of the scale, `yes` or `no`); the verdict tokens among its
alternatives are weighed by their probabilities, renormalised over the verdict tokens. Anything else
(no tokens sent, tokens that do not spell the reply, a verdict split over several tokens, a written
token that is not a verdict, no alternatives, an impossible log probability: NaN, infinite or above 0)
gives None, and the caller keeps the written verdict: never a guess.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from qagen.llm.task import Reply, TokenChoice

_STRIPPED = " \t\n*_\"'`.:"
"""What may surround a verdict token ("4", " 4", "**4", "Yes", " yes.")."""


def _verdict_token(tokens: tuple[TokenChoice, ...], text: str, offset: int) -> TokenChoice | None:
    """The written token covering `text[offset]`, when the tokens spell the reply (`text` is the part
    of the content parsers read: the end of what the tokens spell, after any thinking)."""
    spelled = "".join(choice.token for choice in tokens)
    if not text or not spelled.rstrip().endswith(text.rstrip()):
        return None
    target = len(spelled.rstrip()) - len(text.rstrip()) + offset
    start = 0
    for choice in tokens:
        end = start + len(choice.token)
        if start <= target < end:
            return choice
        start = end
    return None


def _weighed(choice: TokenChoice, value_of: Callable[[str], float | None]) -> dict[float, float] | None:
    """The verdict values among the token's alternatives with their summed probabilities; None when
    the written token is no verdict."""
    if value_of(choice.token) is None or not all(_possible(logprob) for _, logprob in choice.top):
        return None
    found: dict[float, float] = {}
    for token, logprob in choice.top:
        value = value_of(token)
        if value is not None:
            found[value] = found.get(value, 0.0) + math.exp(logprob)
    return found or None


_ROUNDING = 1e-6
"""How far above 0 a server's log probability may be from rounding (a certain token sent as 1e-7)."""


def _possible(logprob: float) -> bool:
    """A log probability a server can mean: finite and at most 0. NaN, infinities and positive values
    (seen from a misconfigured server: P(yes) 0.27 for every draft) make the position unreadable."""
    return math.isfinite(logprob) and logprob <= _ROUNDING


def _rating_value(scale: range) -> Callable[[str], float | None]:
    def value(token: str) -> float | None:
        stripped = token.strip(_STRIPPED)
        return float(stripped) if stripped.isdigit() and int(stripped) in scale else None

    return value


def _yes_no_value(token: str) -> float | None:
    stripped = token.strip(_STRIPPED).lower()
    return 1.0 if stripped == "yes" else 0.0 if stripped == "no" else None


def expected_rating(reply: Reply, offset: int, scale: range = range(1, 6)) -> float | None:
    """The rating written at `reply.text[offset]` as its expectation over the scale's tokens."""
    if reply.tokens is None:
        return None
    choice = _verdict_token(reply.tokens, reply.text, offset)
    weights = None if choice is None else _weighed(choice, _rating_value(scale))
    if weights is None:
        return None
    return sum(value * weight for value, weight in weights.items()) / sum(weights.values())


def yes_probability(reply: Reply, offset: int) -> float | None:
    """P(yes) of the yes/no written at `reply.text[offset]`, renormalised over yes and no."""
    if reply.tokens is None:
        return None
    choice = _verdict_token(reply.tokens, reply.text, offset)
    weights = None if choice is None else _weighed(choice, _yes_no_value)
    if weights is None:
        return None
    return weights.get(1.0, 0.0) / sum(weights.values())
