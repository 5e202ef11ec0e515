"""The rules every reply parser shares, the critics' (`qagen.generation.replies`) and the judges'
(`qagen.evaluate.judges.parsing`, `qagen.evaluate.judges.ragas_parsing`) alike.

A refusal, an empty reply, a number with decimals or one off the scale is the same failure
(`FailureKind`) whichever parser meets it, because they all read it with these pieces.

A parser's `reason` is a `Reason`: the `FailureKind` when the reply could not be read, the empty
string when it was. Success stays `""` (not None) because the callers keep the reason in `str`
fields and test it for truth (`if parsed.reason`) or compare it with `""`; and since `FailureKind`
is a `str` enum, `FailureKind.REFUSAL == "refusal"` holds wherever a caller compares strings.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Literal, NamedTuple, TypeAlias

from qagen.failures import FailureKind

Reason: TypeAlias = FailureKind | Literal[""]
"""Why a reply could not be read, or `""` when it was."""

# A refusal is recognised only at the very start of the reply (after punctuation or markup): a
# model that declines says so first, while "I cannot find X in the context" deep inside a real
# verdict's rationale must not turn that verdict into a refusal. Only for replies without a verdict.
REFUSAL = re.compile(
    r"^\W*(?:I['’]m sorry|I am sorry|I apologi[sz]e|I cannot|I can['’]t|I can not|I won['’]t|"
    r"As an AI|Sorry, (?:but )?I)",
    re.IGNORECASE,
)

# Prometheus's score marker (`[RESULT] 4`), read by `parse_prometheus` and defused in untrusted
# data by `qagen.llm.untrusted.neutralize` (one regex, so the two can never disagree on it).
RESULT_MARKER = re.compile(r"\[(RESULT)\]", re.IGNORECASE)

# A score as written, for the parsers' own regexes to embed: sign, decimals (`.` or `,`) and an
# optional `/scale`. Captured as written so that 0, 7, 4.5 or 8/10 are reported as the failures
# they are instead of being read as some nearby valid score.
NUMBER = r"(?P<value>[-+]?\d+(?:[.,]\d+)?)(?:[ \t]*/[ \t]*(?P<scale>\d+))?"

MAX_DIGITS = 6
"""Longest digit run read as a number: int() refuses runs over 4300 digits, and any number this
long is off every scale anyway, so it is reported as out of range before conversion."""


def no_verdict(reply: str) -> FailureKind:
    """Why a reply (or the part of it a parser looked in) without a verdict has none."""
    if not reply.strip():
        return FailureKind.EMPTY_REPLY
    if REFUSAL.search(reply):
        return FailureKind.REFUSAL
    return FailureKind.PARSE_FAILURE


def check_score(value: str, scale: str | None, low: int, high: int) -> tuple[int | None, Reason]:
    """A number captured by `NUMBER` (`value` and `scale` as written) as a score on `low..high`,
    or the failure it is: a `/scale` other than `/high`, decimals, or a value off the scale.

    Never raises (however long the digit runs) and never clamps or rounds into range.
    """
    if scale is not None and (len(scale) > MAX_DIGITS or int(scale) != high):
        return None, FailureKind.WRONG_SCALE
    whole, _, fraction = value.replace(",", ".").partition(".")
    if len(whole.lstrip("+-")) > MAX_DIGITS:
        return None, FailureKind.OUT_OF_RANGE
    # Decimals are judged as written, digit by digit (any script's zeros count as zeros): float()
    # would round 4.99999999999999999 to 5.0 and so read a score the model never gave.
    if any(unicodedata.digit(digit, 1) for digit in fraction):
        return None, FailureKind.NON_INTEGER
    number = int(whole)
    if not low <= number <= high:
        return None, FailureKind.OUT_OF_RANGE
    return number, ""


# A yes/no verdict: the reply's first word, after markdown or an `Answer:` label ("Yes.", "**No**",
# "Answer: yes, because ..."). A yes or no later in the text is not a verdict: the prompts ask for it
# first, and a rationale that says "no" about something else must not be read as one.
_YES_NO = re.compile(
    r"\A[\s*_\"'`]*(?:(?:final\s+)?answer[ \t]*\**[ \t]*:[\s*_\"'`]*)?(?P<verdict>yes|no)\b", re.IGNORECASE
)


class ParsedYesNo(NamedTuple):
    """A yes/no verdict (a critic's or a judge's), where it is written in the reply (for its
    probability), or why there is none."""

    yes: bool | None
    offset: int
    reason: Reason


def parse_yes_no(reply: str) -> ParsedYesNo:
    """Read a reply that opens with Yes or No."""
    match = _YES_NO.match(reply)
    if match is None:
        return ParsedYesNo(None, 0, no_verdict(reply))
    return ParsedYesNo(match.group("verdict").lower() == "yes", match.start("verdict"), "")
