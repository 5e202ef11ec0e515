"""What every judge-reply parser shares: refusals, template echoes, scores, yes/no values, JSON objects.

The parsers of `qagen.evaluate.judges.parsing` (graded judges, boolean graders) and
`qagen.evaluate.judges.ragas_parsing` (RAGAS parts) read replies with these pieces, so a refusal, an echoed
answer template or an out-of-range number means the same failure whichever parser meets it.
"""

from __future__ import annotations

import json
import re

# Prometheus's score marker (`[RESULT] 4`); `untrusted_text.neutralize` defuses it in data.
RESULT_MARKER = re.compile(r"\[(RESULT)\]", re.IGNORECASE)

REFUSAL = re.compile(
    r"^\W*(?:I['’]m sorry|I am sorry|I apologi[sz]e|I cannot|I can['’]t|I can not|I won['’]t|"
    r"As an AI|Sorry, (?:but )?I)",
    re.IGNORECASE,
)
# A marker followed by the prompt's placeholder (`<an integer ...>`, `{...}`, `(your ...)`) is the
# answer template echoed back, not a verdict.
# One character class before the bracket, so a long run of spaces cannot make the regex backtrack.
PLACEHOLDER = re.compile(r"[\s*:：]*[<{(][ \t]*[^\W\d_]")
_MAX_DIGITS = 6  # int() of a huge digit run raises; anything this long is out of range anyway

# A score as written: sign, decimals (`.` or `,`) and an optional `/scale`.
NUMBER = r"(?P<value>[-+]?\d+(?:[.,]\d+)?)(?:[ \t]*/[ \t]*(?P<scale>\d+))?"

EXPLANATION_LABEL = re.compile(r"\A\W*Explanation[ \t*]*[:：][ \t*]*", re.IGNORECASE)

# A yes/no value: the word, then nothing, or punctuation and whatever follows ("true.", "No (the
# context is silent)"). "true or false" is not a value: it is the template echoed back.
_BOOLEAN_VALUE = re.compile(
    r"""["'`*_]*(?P<word>true|false|yes|no)\b["'`*_]*[ \t]*(?:[.!,;:(\u2014\u2013-].*)?""", re.I
)

_FENCE = re.compile(r"\A\s*```[a-zA-Z]*[ \t]*\n(?P<body>.*?)\n[ \t]*```\s*\Z", re.DOTALL)


def no_verdict(reply: str) -> str:
    """Why a reply without a verdict has none: `empty_reply`, `refusal` or `parse_failure`."""
    if not reply.strip():
        return "empty_reply"
    if REFUSAL.search(reply):
        return "refusal"
    return "parse_failure"


def check_score(value: str, scale: str | None, low: int, high: int) -> tuple[int | None, str]:
    """A captured number (as written) on `low..high`, or the reason it is not a valid score."""
    if scale is not None and (len(scale) > _MAX_DIGITS or int(scale) != high):
        return None, "wrong_scale"
    value = value.replace(",", ".")
    if len(value.split(".")[0].lstrip("+-")) > _MAX_DIGITS:
        return None, "out_of_range"
    number = float(value)
    if not number.is_integer():
        return None, "non_integer_score"
    if not low <= number <= high:
        return None, "out_of_range"
    return int(number), ""


def clean(text: str) -> str | None:
    """`text` without surrounding whitespace and Markdown emphasis, or None if nothing is left."""
    text = text.strip().strip("*#").strip()
    return text or None


def yes(value: str) -> bool | None:
    """True for true/yes, False for false/no (with trailing punctuation and remarks), else None."""
    match = _BOOLEAN_VALUE.fullmatch(value.strip())
    return None if match is None else match.group("word").lower() in ("true", "yes")


def json_object(reply: str) -> dict[str, object] | None:
    """The reply's JSON object: the whole reply, a reply that is one code fence, or the text from
    the first `{` to the end (after a preamble like "Here is my evaluation:"). Never an object in the
    middle of prose: an answer quoted in an explanation could hold one."""
    fenced = _FENCE.match(reply)
    text = (fenced.group("body") if fenced else reply).strip()
    brace = text.find("{")
    if brace < 0:
        return None
    try:
        value = json.loads(text[brace:])
    except (ValueError, RecursionError):  # RecursionError: absurdly deep nesting in a hostile reply
        return None
    return value if isinstance(value, dict) else None
