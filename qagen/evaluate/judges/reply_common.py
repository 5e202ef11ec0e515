"""What the judge-reply parsers share beyond `qagen.llm.reply_rules`: template echoes, labels,
yes/no values, JSON objects.

The parsers of `qagen.evaluate.judges.parsing` (graded judges, boolean graders) and
`qagen.evaluate.judges.ragas_parsing` (RAGAS parts) read replies with these pieces, so an echoed
answer template or a yes/no value means the same whichever parser meets it. Refusals, empty
replies and scores follow the rules every parser (the critics' too) shares, in
`qagen.llm.reply_rules`.
"""

from __future__ import annotations

import json
import re

# A marker followed by the prompt's placeholder (`<an integer ...>`, `{...}`, `(your ...)`) is the
# answer template echoed back, not a verdict.
# One character class before the bracket, so a long run of spaces cannot make the regex backtrack.
PLACEHOLDER = re.compile(r"[\s*:：]*[<{(][ \t]*[^\W\d_]")
# The `Explanation:` label that opens a grader's or a RAGAS item's reasoning (dropped from it).
EXPLANATION_LABEL = re.compile(r"\A\W*Explanation[ \t*]*[:：][ \t*]*", re.IGNORECASE)

# A yes/no value: the word, then nothing, or punctuation and whatever follows ("true.", "No (the
# context is silent)"). "true or false" is not a value: it is the template echoed back.
_BOOLEAN_VALUE = re.compile(
    r"""["'`*_]*(?P<word>true|false|yes|no)\b["'`*_]*[ \t]*(?:[.!,;:(\u2014\u2013-].*)?""", re.I
)

# A reply that is one Markdown code fence (```json ... ```): its body is the JSON.
_FENCE = re.compile(r"\A\s*```[a-zA-Z]*[ \t]*\n(?P<body>.*?)\n[ \t]*```\s*\Z", re.DOTALL)


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
