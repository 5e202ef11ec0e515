"""Token log probabilities, as OpenAI sends them (`choices[i].logprobs.content`), for the replies whose
verdict a client may read from them: a critic's rating, a yes/no check and the `answer_correct` judge's yes/no.

The content is sent as three tokens: what precedes the verdict, the verdict, what follows; the verdict's
alternatives are chosen so the expectation keeps the written verdict's side of every whole-number
threshold (a rating d < 5 holds 0.9 of d and 0.1 of d + 1, so its expectation is d + 0.1; a 5 holds all
of it; a yes holds 0.9 of yes, a no 0.1), so a build's decisions are those of the written verdicts.
A doubtful yes (`ReplyPolicy.doubtful_yes_rate`) is written "Yes" but holds only 0.55 of it, below every
check's `yes_at`: as a small model's "Yes" at P(yes) 0.6 is, a verdict its written word and its
measurement disagree on; a doubtful no (`doubtful_no_rate`) is written "No" but holds 0.9 of yes. Other
replies are one token, certain.
"""

from __future__ import annotations

import math
import re
from typing import Any

_RATING = re.compile(r"Total rating:\**\s*\**(?P<value>[1-5])(?!\d)")


def _entry(token: str, alternatives: list[tuple[str, float]]) -> dict[str, Any]:
    top = [{"token": alt, "logprob": math.log(p), "bytes": None} for alt, p in alternatives]
    return {"token": token, "logprob": top[0]["logprob"] if top else 0.0, "bytes": None, "top_logprobs": top}


DOUBTFUL_YES = 0.55
"""P(yes) of a doubtful yes: below the lowest `yes_at` of the bundled checks (0.6)."""


DOUBTFUL_NO = 0.9
"""P(yes) of a doubtful no: written "No", but its tokens hold mostly yes, above every check's cut."""

IMPOSSIBLE_LOGPROBS = {"nan": math.nan, "positive": 0.4}
"""Log probabilities no probability has (`ReplyPolicy.impossible_logprobs`), as a misconfigured server sends."""


def logprobs_content(
    content: str | None, kind: str, *, doubtful: bool = False, impossible: str | None = None, p_yes: float | None = None
) -> list[dict[str, Any]] | None:
    """The `logprobs.content` list of a reply of prompt kind `kind` (None for no content); `doubtful`: a
    yes that holds only `DOUBTFUL_YES` of its probability, or a no that holds `DOUBTFUL_NO` of yes;
    `impossible`: a yes/no whose alternatives' log probabilities are that kind of `IMPOSSIBLE_LOGPROBS`;
    `p_yes`: a yes/no's P(yes) as given (the hidden truth's, `standins.llm.truth`)."""
    if not content:
        return None
    if kind in ("check", "judge_answer_correct") and content in ("Yes", "No"):
        other = "No" if content == "Yes" else "Yes"
        share = p_yes if p_yes is not None else {
            ("Yes", False): 0.9, ("Yes", True): DOUBTFUL_YES, ("No", False): 0.1, ("No", True): DOUBTFUL_NO
        }[content, doubtful]  # fmt: skip
        entry = _entry(content, [(content, max(share, 1 - share)), (other, min(share, 1 - share))])
        if impossible is not None:
            for alternative in entry["top_logprobs"]:
                alternative["logprob"] = IMPOSSIBLE_LOGPROBS[impossible]
        return [entry]
    match = _RATING.search(content) if kind == "critique" else None
    if match is None:
        return [_entry(content, [(content, 1.0)])]
    value = int(match.group("value"))
    alternatives = [(str(value), 1.0)] if value == 5 else [(str(value), 0.9), (str(value + 1), 0.1)]
    pieces = [content[: match.start("value")], content[match.end("value") :]]
    found = [_entry(pieces[0], [(pieces[0], 1.0)])] if pieces[0] else []
    found.append(_entry(str(value), alternatives))
    if pieces[1]:
        found.append(_entry(pieces[1], [(pieces[1], 1.0)]))
    return found
