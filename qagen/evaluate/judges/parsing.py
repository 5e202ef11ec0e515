"""Graded judge and boolean grader replies into values. The parsers never raise.

Like `qagen.generation.replies`, every parser returns a `Parsed*` value holding either the fields or a
failure `reason` (a `FailureKind`; `""` when the reply was read); the caller keeps the raw reply beside
it. A reply that cannot be read is a recorded failure, never a default score, and an out-of-range
score is never clamped into range.

Reply protocols (one compiled regex each, documented where it is defined):

- ``Feedback: ... [RESULT] N``, 1-5 (Prometheus's format: the cookbook's judge, `judge_correctness`).
- ``Grade: true|false`` after an explanation (the boolean graders), or a JSON object.

The RAGAS parts (``Verdict: Yes|No`` per numbered item, numbered lists, verbatim sentence
extraction) are read by `qagen.evaluate.judges.ragas_parsing`.

The first-verdict rule (the judges' form of `qagen.generation.replies`'s block rule): the verdict is the
*first* marker of the protocol in the reply whose value is not the prompt's own placeholder echoed
back (``<an integer ...>``, ``<true or false>``). Models that run on past their verdict invent
further blocks with other scores; those come later and never count. If the first real marker
holds no valid value the reply fails, even if a later marker would have one.

Untrusted text enters a judge prompt only through `qagen.llm.untrusted.neutralize`, which
defuses the markers these parsers read; `qagen.evaluate.judges.transcript.Transcript` keeps what a
verdict was made of.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from qagen.evaluate.judges.reply_common import EXPLANATION_LABEL, PLACEHOLDER, clean, json_object, yes
from qagen.failures import FailureKind
from qagen.llm.reply_rules import NUMBER, RESULT_MARKER, Reason, check_score, no_verdict

# --------------------------------------------------------------------------- results


class ParsedJudge(NamedTuple):
    """A graded judge's verdict: `score` on its scale and its feedback, or `reason`."""

    score: int | None
    feedback: str | None
    reason: Reason
    offset: int = 0
    """Where the score is written in the reply (for its expected rating); 0 when there is none."""


class ParsedGrade(NamedTuple):
    """A boolean grader's verdict and its explanation, or `reason` why there is none."""

    value: bool | None
    explanation: str | None
    reason: Reason


# --------------------------------------------------------------------------- graded judges

# After `[RESULT]`: "4", ": 4", "** 4", "**4**", "4/5", "4.0", "(4)", or the score on the next line.
# The number is captured as written (sign, decimals, scale) so 0, 7, 4.5 or 8/10 are reported as the
# failures they are instead of being read as some nearby valid score.
# (Separators are one character class: adjacent optional-whitespace groups backtrack polynomially.)
_AFTER_RESULT = re.compile(rf"\A[\s*:：=(\[]*{NUMBER}")
_FEEDBACK_LABEL = re.compile(r"\A\W*Feedback[ \t*]*:+[ \t*]*", re.IGNORECASE)
_DANGLING_FEEDBACK = re.compile(r"(?<!\w)Feedback[ \t*]*:+\W*\Z", re.IGNORECASE)


def parse_prometheus(reply: str, *, scale_max: int = 5) -> ParsedJudge:
    """Read `Feedback: ... [RESULT] N` (1 <= N <= scale_max) by the first-verdict rule.

    The feedback is the text before the marker without its `Feedback:` label; a template echo
    before the verdict is not part of it.
    """
    start = 0
    for marker in RESULT_MARKER.finditer(reply):
        tail = reply[marker.end() :]
        if PLACEHOLDER.match(tail):
            line_end = reply.find("\n", marker.end())
            start = len(reply) if line_end < 0 else line_end
            continue
        feedback = _FEEDBACK_LABEL.sub("", reply[start : marker.start()])
        feedback_text = clean(_DANGLING_FEEDBACK.sub("", feedback))
        match = _AFTER_RESULT.match(tail)
        if match is None:
            return ParsedJudge(None, feedback_text, FailureKind.NO_SCORE)
        score, reason = check_score(match.group("value"), match.group("scale"), 1, scale_max)
        return ParsedJudge(score, feedback_text, reason, marker.end() + match.start("value"))
    # A reply whose only markers were template echoes is the template answered back.
    reason = no_verdict(reply)
    echoed = start > 0 and reason is FailureKind.PARSE_FAILURE
    return ParsedJudge(None, None, FailureKind.TEMPLATE_ECHO if echoed else reason)


# --------------------------------------------------------------------------- boolean graders

# A line that starts with the label: "Grade: true", "**Grade:** false", "Grade: `true`.", "## Grade: yes".
# Line-initial only, so "... the Grade: true or false format ..." inside an explanation is not read.
_GRADE_LINE = re.compile(r"^[ \t>#*_-]*grade[ \t*]*[:：][ \t*]*(?P<value>.*)$", re.I | re.M)
_GRADE_KEYS = ("grade", "correct", "relevant", "grounded", "value")


def parse_grade(reply: str) -> ParsedGrade:
    """Read `Explanation: ...` then `Grade: true|false` (yes/no too), else a JSON object with
    `explanation` and one boolean under `grade`/`correct`/`relevant`/`grounded`/`value`.

    The grade is the first line starting with `Grade:` whose value is not the template's
    `<true or false>`; any other value there ("partially") fails the reply.
    """
    for line in _GRADE_LINE.finditer(reply):
        value = line.group("value")
        if PLACEHOLDER.match(value):
            continue
        explanation = clean(EXPLANATION_LABEL.sub("", reply[: line.start()].strip()))
        grade = yes(value)
        return ParsedGrade(grade, explanation, "" if grade is not None else FailureKind.INVALID_GRADE)
    obj = json_object(reply)
    if obj is None:
        return ParsedGrade(None, None, no_verdict(reply))
    found = [obj[k] for k in _GRADE_KEYS if k in obj]
    said = obj.get("explanation")
    explanation_text = clean(said) if isinstance(said, str) else None
    if len(found) != 1 or not isinstance(found[0], bool):
        return ParsedGrade(None, explanation_text, FailureKind.INVALID_GRADE if found else FailureKind.PARSE_FAILURE)
    return ParsedGrade(found[0], explanation_text, "")
