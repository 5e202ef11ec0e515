"""Verdicts read from token probabilities: the wire format, the position rule, and the fallbacks."""

from __future__ import annotations

import json
import math

import pytest

from qagen.llm.backends import ModelSettings
from qagen.llm.completions import chat_body, parse_completion
from qagen.llm.task import Reply, TokenChoice, user_request
from qagen.llm.verdict_probability import expected_rating, yes_probability
from qagen.records import Usage


def _choice(token: str, *alternatives: tuple[str, float]) -> TokenChoice:
    """A written token and its alternatives given as probabilities (stored as log probabilities)."""
    return TokenChoice(token, tuple((alt, math.log(p)) for alt, p in alternatives))


def _reply(*tokens: TokenChoice) -> Reply:
    return Reply("".join(choice.token for choice in tokens), Usage(), tokens=tokens)


def test_the_body_asks_for_top_logprobs_only_when_set() -> None:
    request = user_request("Rate it.")
    assert "logprobs" not in chat_body(ModelSettings(spec="openai:m"), request)
    assert "logprobs" not in chat_body(ModelSettings(spec="openai:m", top_logprobs=0), request)
    body = chat_body(ModelSettings(spec="openai:m", top_logprobs=5), request)
    assert (body["logprobs"], body["top_logprobs"]) == (True, 5)


def test_the_tokens_of_a_completion_are_read_with_their_alternatives() -> None:
    body = {
        "choices": [
            {
                "message": {"content": "Yes"},
                "finish_reason": "stop",
                "logprobs": {
                    "content": [
                        {
                            "token": "Yes",
                            "logprob": -0.1,
                            "top_logprobs": [{"token": "Yes", "logprob": -0.1}, {"token": "No", "logprob": -2.4}],
                        }
                    ]
                },
            }
        ],
        "usage": {"prompt_tokens": 9, "completion_tokens": 1},
    }
    reply = parse_completion(json.dumps(body).encode())
    assert reply.tokens == (TokenChoice("Yes", (("Yes", -0.1), ("No", -2.4))),)
    assert yes_probability(reply, 0) == pytest.approx(math.exp(-0.1) / (math.exp(-0.1) + math.exp(-2.4)))
    # A server that sends none (or sends them in another shape) gives no tokens: the written verdict decides.
    for logprobs in (None, {}, {"content": None}, {"content": [{"no": "token"}]}, "yes"):
        body["choices"][0]["logprobs"] = logprobs  # type: ignore[index]
        assert parse_completion(json.dumps(body).encode()).tokens is None


def test_a_rating_is_its_expectation_over_the_rating_tokens() -> None:
    reply = _reply(
        _choice("Evaluation", ("Evaluation", 1.0)),
        _choice(": fine.\nTotal rating:", ("x", 1.0)),
        _choice(" 4", (" 4", 0.5), (" 2", 0.3), (" 5", 0.1), (" the", 0.1)),
    )
    offset = reply.text.index("4")
    # Renormalised over the rating tokens: (4*.5 + 2*.3 + 5*.1) / .9
    assert expected_rating(reply, offset) == pytest.approx((4 * 0.5 + 2 * 0.3 + 5 * 0.1) / 0.9)


@pytest.mark.parametrize(
    ("tokens", "offset"),
    [
        # The written token at the verdict's place is no rating of the scale.
        ((_choice("Total rating: "), _choice("40", ("40", 0.9), ("4", 0.1))), 14),
        # The tokens do not spell the reply.
        ((_choice("Total rating: 3", ("3", 1.0)),), 99),
    ],
)
def test_no_probability_without_a_rating_token_where_the_rating_is_written(
    tokens: tuple[TokenChoice, ...], offset: int
) -> None:
    assert expected_rating(_reply(*tokens), offset) is None


def test_no_tokens_no_probability_and_thinking_before_the_reply_is_skipped() -> None:
    assert expected_rating(Reply("Total rating: 4", Usage()), 14) is None
    assert yes_probability(Reply("Yes", Usage()), 0) is None
    # The tokens spell the thinking too; the reply parsers read is what follows it.
    thinking = (_choice("<think>no idea</think>\n"), _choice("No", ("No", 0.75), ("Yes", 0.25)))
    reply = Reply("No", Usage(), raw="<think>no idea</think>\nNo", tokens=thinking)
    assert yes_probability(reply, 0) == pytest.approx(0.25)


def test_yes_and_no_in_any_case_and_spacing_count_together() -> None:
    reply = _reply(_choice("Yes", ("Yes", 0.6), (" yes", 0.1), ("No", 0.2), ("NO", 0.05), ("Maybe", 0.05)))
    assert yes_probability(reply, 0) == pytest.approx(0.7 / 0.95)


@pytest.mark.parametrize(
    "alternatives",
    [
        (("Yes", math.nan), ("No", -1.0)),
        (("Yes", 0.7), ("No", -1.0)),  # positive: no probability's logarithm
        (("Yes", -1.0), ("No", math.inf)),
        (("Yes", -math.inf), ("No", -math.inf)),
        (),  # no alternatives sent
    ],
    ids=["nan", "positive", "infinite", "minus-infinity-only", "empty"],
)
def test_impossible_log_probabilities_are_no_measurement(alternatives: tuple[tuple[str, float], ...]) -> None:
    reply = _reply(TokenChoice("Yes", alternatives))
    assert yes_probability(reply, 0) is None  # the written verdict decides then, never a number made of them
    rating = _reply(TokenChoice("Total rating: ", (("Total rating: ", -0.01),)), TokenChoice("4", alternatives))
    assert expected_rating(rating, len("Total rating: ")) is None


def test_a_log_probability_rounded_just_above_zero_is_read() -> None:
    reply = _reply(TokenChoice("Yes", (("Yes", 1e-7), ("No", -9.0))))
    assert yes_probability(reply, 0) == pytest.approx(1 / (1 + math.exp(-9.0)), abs=1e-6)
