"""Judge replies into values, and untrusted text into safe prompt data. The parsers never raise.

Like `qagen.parsing`, every parser returns a `Parsed*` value holding either the fields or a failure
`reason`; the caller keeps the raw reply beside it. A reply that cannot be read is a recorded
failure, never a default score, and an out-of-range score is never clamped into range.

Reply protocols (one compiled regex each, documented where it is defined):

- ``prometheus``: ``Feedback: ... [RESULT] N``, 1-5 (the cookbook's judge, `judge_correctness`).
- ``mt_bench``: FastChat's ``Rating: [[N]]``, 1-10.
- ``json``: ``{"feedback": ..., "score": N}``, also nested one level (``{"evaluation": {...}}``), 1-5.
- ``ultrafeedback``: ``Rating: N (Label)`` / ``Rationale: ...`` per text, 1-5.
- ``Grade: true|false`` after an explanation (the boolean graders), or a JSON object.
- ``Verdict: Yes|No`` per numbered item (RAGAS statement / sentence / context verdicts), numbered
  lists of statements or questions, and verbatim sentence extraction.

The first-verdict rule (the judges' form of `qagen.parsing`'s block rule): the verdict is the
*first* marker of the protocol in the reply whose value is not the prompt's own placeholder echoed
back (``<an integer ...>``, ``<true or false>``). Models that run on past their verdict invent
further blocks with other scores; those come later and never count. If the first real marker
holds no valid value the reply fails, even if a later marker would have one.

Untrusted text (questions, answers, references, contexts) enters a judge prompt only through
`neutralize`, between the data tags of the prompt files (`DATA_TAGS`). Neutralising defuses the
markers these parsers read, so a judge that quotes an answer in its feedback cannot smuggle a
score in with it; `Transcript` keeps what a verdict was made of.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, NamedTuple, Protocol

from qagen.evaluate.records import JudgeVerdict
from qagen.llm import CallResult, ModelSettings
from qagen.prompts import load_prompt
from qagen.types import Usage

JudgeProtocol = Literal["prometheus", "mt_bench", "json", "ultrafeedback"]
JUDGE_SCALES: dict[JudgeProtocol, tuple[int, int]] = {
    "prometheus": (1, 5),
    "mt_bench": (1, 10),
    "json": (1, 5),
    "ultrafeedback": (1, 5),
}

# --------------------------------------------------------------------------- neutralising

# The tag names that delimit data in the judge prompts (tests check every prompt file uses only these).
DATA_TAGS = frozenset(
    {"question", "response", "answer", "reference_answer", "context", "statements", "sentences", "facts"}
)
_DATA_TAG = re.compile(rf"<(?=[ \t]*/?[ \t]*(?:{'|'.join(sorted(DATA_TAGS))})\b)", re.IGNORECASE)
_RESULT_MARKER = re.compile(r"\[(RESULT)\]", re.IGNORECASE)
_DOUBLE_BRACKET = re.compile(r"\[\[(?=[ \t]*[-+]?\d)")
# Reply labels whose value a parser reads. Each parser's label regex matches a subset of this one
# (the same words; only `*`, spaces and tabs before the colon, full-width colon included), so no
# neutralised label can be read (a property test checks it).
_LABEL_WORDS = r"grade|verdict|noncommittal|total[ \t]+rating|rating|score|statements|questions|relevant[ \t]+sentences"
# Not preceded by a letter or digit: every prefix a parser allows (`**`, `#`, `_`, `-`) is covered.
_LABEL_IN_DATA = re.compile(rf"(?<![^\W_])((?:{_LABEL_WORDS})[ \t*]*)[:：]", re.IGNORECASE)


def neutralize(text: str) -> str:
    """Defuse the structural strings of the judge prompts and replies inside untrusted `text`.

    - a data tag (`<response>`, `</context>`, ...) becomes `&lt;response>`: the data cannot close
      its own block and pose as prompt text;
    - `[RESULT]` becomes `[ RESULT ]` and `[[7` becomes `[ [7`: not a score marker to the parsers;
    - a reply label's colon (`Grade:`, `Verdict:`, `Total rating:`, `Score:` ...) becomes ` -`.

    Idempotent, and it changes nothing else, so the judge still reads the text as written.
    """
    text = _DATA_TAG.sub("&lt;", text)
    text = _RESULT_MARKER.sub(r"[ \1 ]", text)
    text = _DOUBLE_BRACKET.sub("[ [", text)
    return _LABEL_IN_DATA.sub(r"\1 -", text)


def numbered(items: Sequence[str]) -> str:
    """Items as `1. ...` lines, each neutralised and flattened to one line (so numbering stays exact)."""
    return "\n".join(f"{i}. {' '.join(neutralize(item).split())}" for i, item in enumerate(items, 1))


PASSAGE_SEPARATOR = "\n\n---\n\n"
"""Between retrieved passages in a prompt: no word in it, so it is never counted as a sentence."""


def passages(contexts: Sequence[str]) -> str:
    """Retrieved contexts for one prompt block: each neutralised, in rank order, apart."""
    return PASSAGE_SEPARATOR.join(neutralize(context).strip() for context in contexts)


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")
_HAS_WORD = re.compile(r"\w")


def split_sentences(text: str) -> list[str]:
    """Sentences for RAGAS's counts: lines, then `.`/`!`/`?` + space (or CJK `。！？`).

    Lines without a letter or digit (rules, code fences) are not sentences. Deliberately simple and
    deterministic: the same splitter counts the reference, the contexts and the extracted sentences.
    """
    return [
        sentence.strip()
        for line in text.splitlines()
        for sentence in _SENTENCE_END.split(line)
        if _HAS_WORD.search(sentence)
    ]


# --------------------------------------------------------------------------- results


class ParsedJudge(NamedTuple):
    """A graded judge's verdict: `score` on the protocol's scale and its feedback, or `reason`."""

    score: int | None
    feedback: str | None
    reason: str


class ParsedGrade(NamedTuple):
    """A boolean grader's verdict and its explanation, or `reason` why there is none."""

    value: bool | None
    explanation: str | None
    reason: str


class ParsedVerdicts(NamedTuple):
    """One Yes/No per numbered item (statements, sentences), with explanations, or `reason`."""

    verdicts: tuple[bool, ...] | None
    explanations: tuple[str, ...]
    reason: str


class ParsedItems(NamedTuple):
    """A numbered list (statements), possibly empty when the reply says `none`, or `reason`."""

    items: tuple[str, ...] | None
    reason: str


class ParsedQuestions(NamedTuple):
    """Questions generated from an answer and whether the answer was noncommittal, or `reason`."""

    questions: tuple[str, ...] | None
    noncommittal: bool | None
    reason: str


class ParsedExtraction(NamedTuple):
    """Sentences copied from the contexts (empty for "Insufficient Information"), or `reason`."""

    sentences: tuple[str, ...] | None
    reason: str


# --------------------------------------------------------------------------- shared helpers

_REFUSAL = re.compile(
    r"^\W*(?:I['’]m sorry|I am sorry|I apologi[sz]e|I cannot|I can['’]t|I can not|I won['’]t|"
    r"As an AI|Sorry, (?:but )?I)",
    re.IGNORECASE,
)
# A marker followed by the prompt's placeholder (`<an integer ...>`, `{...}`, `(your ...)`) is the
# answer template echoed back, not a verdict.
# One character class before the bracket, so a long run of spaces cannot make the regex backtrack.
_PLACEHOLDER = re.compile(r"[\s*:：]*[<{(][ \t]*[^\W\d_]")
_MAX_DIGITS = 6  # int() of a huge digit run raises; anything this long is out of range anyway


def _no_verdict(reply: str) -> str:
    if not reply.strip():
        return "empty_reply"
    if _REFUSAL.search(reply):
        return "refusal"
    return "parse_failure"


def _check_score(value: str, scale: str | None, low: int, high: int) -> tuple[int | None, str]:
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


def _clean(text: str) -> str | None:
    text = text.strip().strip("*#").strip()
    return text or None


# --------------------------------------------------------------------------- graded judges

_NUMBER = r"(?P<value>[-+]?\d+(?:[.,]\d+)?)(?:[ \t]*/[ \t]*(?P<scale>\d+))?"
# After `[RESULT]`: "4", ": 4", "** 4", "**4**", "4/5", "4.0", "(4)", or the score on the next line.
# The number is captured as written (sign, decimals, scale) so 0, 7, 4.5 or 8/10 are reported as the
# failures they are instead of being read as some nearby valid score.
# (Separators are one character class: adjacent optional-whitespace groups backtrack polynomially.)
_AFTER_RESULT = re.compile(rf"\A[\s*:：=(\[]*{_NUMBER}")
_FEEDBACK_LABEL = re.compile(r"\A\W*Feedback[ \t*]*:+[ \t*]*", re.IGNORECASE)
_DANGLING_FEEDBACK = re.compile(r"(?<!\w)Feedback[ \t*]*:+\W*\Z", re.IGNORECASE)
# FastChat's `[[N]]`. Its backup pattern (a single `[N]`) is deliberately not used: in real
# MT-Bench judgements it read `array[0]` in quoted code as a rating of 0.
_DOUBLE_BRACKET_SCORE = re.compile(r"\[\[[ \t]*(?P<value>[-+]?\d+(?:\.\d+)?)[ \t]*\]\]")
_RATING_LABEL_TAIL = re.compile(r"(?<!\w)Rating\W*\Z", re.IGNORECASE)
_ULTRA_TEXT_HEADER = re.compile(r"^[ \t]*#+[ \t]*Output for Text[ \t]*\d+.*$", re.IGNORECASE | re.MULTILINE)
_ULTRA_RATING = re.compile(rf"^[ \t*]*Rating[ \t*]*[:：][ \t*]*{_NUMBER}", re.I | re.M)
_ULTRA_RATIONALE = re.compile(r"^[ \t*]*Rationale[ \t*]*[:：][ \t*]*", re.I | re.M)


def parse_prometheus(reply: str, *, scale_max: int = 5) -> ParsedJudge:
    """Read `Feedback: ... [RESULT] N` (1 <= N <= scale_max) by the first-verdict rule.

    The feedback is the text before the marker without its `Feedback:` label; a template echo
    before the verdict is not part of it.
    """
    start = 0
    for marker in _RESULT_MARKER.finditer(reply):
        tail = reply[marker.end() :]
        if _PLACEHOLDER.match(tail):
            line_end = reply.find("\n", marker.end())
            start = len(reply) if line_end < 0 else line_end
            continue
        feedback = _FEEDBACK_LABEL.sub("", reply[start : marker.start()])
        feedback_text = _clean(_DANGLING_FEEDBACK.sub("", feedback))
        match = _AFTER_RESULT.match(tail)
        if match is None:
            return ParsedJudge(None, feedback_text, "no_score")
        score, reason = _check_score(match.group("value"), match.group("scale"), 1, scale_max)
        return ParsedJudge(score, feedback_text, reason)
    reason = _no_verdict(reply)
    return ParsedJudge(None, None, "template_echo" if start and reason == "parse_failure" else reason)


def parse_mt_bench(reply: str, *, scale_max: int = 10) -> ParsedJudge:
    """Read FastChat's `Rating: [[N]]` (1 <= N <= scale_max): the first `[[N]]` in the reply."""
    match = _DOUBLE_BRACKET_SCORE.search(reply)
    if match is None:
        return ParsedJudge(None, None, _no_verdict(reply))
    feedback = _clean(_RATING_LABEL_TAIL.sub("", reply[: match.start()]))
    score, reason = _check_score(match.group("value"), None, 1, scale_max)
    return ParsedJudge(score, feedback, reason)


def parse_ultrafeedback(reply: str, *, scale_max: int = 5) -> list[ParsedJudge]:
    """One verdict per rated text (`#### Output for Text k` sections; the whole reply if none)."""
    headers = list(_ULTRA_TEXT_HEADER.finditer(reply))
    if headers:
        ends = [h.start() for h in headers[1:]] + [len(reply)]
        sections = [reply[h.end() : end] for h, end in zip(headers, ends, strict=True)]
    else:
        sections = [reply]
    verdicts = []
    for section in sections:
        match = _ULTRA_RATING.search(section)
        if match is None:
            verdicts.append(ParsedJudge(None, None, _no_verdict(section)))
            continue
        rationale = _ULTRA_RATIONALE.search(section, match.end())
        feedback = _clean(section[rationale.end() :]) if rationale else None
        score, reason = _check_score(match.group("value"), match.group("scale"), 1, scale_max)
        verdicts.append(ParsedJudge(score, feedback, reason))
    return verdicts


# ---- JSON

_FENCE = re.compile(r"\A\s*```[a-zA-Z]*[ \t]*\n(?P<body>.*?)\n[ \t]*```\s*\Z", re.DOTALL)
_FEEDBACK_KEYS = ("feedback", "explanation", "rationale", "reasoning", "reason")


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


def _json_score(value: object, high: int) -> tuple[int | None, str]:
    if isinstance(value, bool) or value is None:
        return None, "invalid_score"
    if isinstance(value, int):
        return (value, "") if 1 <= value <= high else (None, "out_of_range")
    if isinstance(value, float):
        if not math.isfinite(value):
            return None, "invalid_score"
        if not value.is_integer():
            return None, "non_integer_score"
        return (int(value), "") if 1 <= value <= high else (None, "out_of_range")
    if isinstance(value, str):
        match = re.fullmatch(rf"\s*{_NUMBER}\s*", value)
        if match is None:
            return None, "invalid_score"
        return _check_score(match.group("value"), match.group("scale"), 1, high)
    return None, "invalid_score"


def parse_json_judge(reply: str, *, scale_max: int = 5) -> ParsedJudge:
    """Read `{"feedback": ..., "score": N}`, or the same object one level down (`{"evaluation": {...}}`)."""
    obj = json_object(reply)
    if obj is None:
        return ParsedJudge(None, None, _no_verdict(reply))
    holders = [obj] if "score" in obj else [v for v in obj.values() if isinstance(v, dict) and "score" in v]
    if not holders:
        return ParsedJudge(None, None, "no_score")
    if len(holders) > 1:
        return ParsedJudge(None, None, "ambiguous_score")
    holder = holders[0]
    feedback = next((v for k in _FEEDBACK_KEYS if isinstance(v := holder.get(k), str)), None)
    score, reason = _json_score(holder["score"], scale_max)
    return ParsedJudge(score, _clean(feedback) if feedback else None, reason)


def parse_judge(reply: str, protocol: JudgeProtocol, *, scale_max: int | None = None) -> ParsedJudge:
    """Any graded judge's reply, on the protocol's scale (`JUDGE_SCALES`) unless `scale_max` is given.

    For `ultrafeedback` the verdict on the first rated text counts (the first-verdict rule); use
    `parse_ultrafeedback` for replies that rate several texts on purpose.
    """
    high = scale_max if scale_max is not None else JUDGE_SCALES[protocol][1]
    if protocol == "prometheus":
        return parse_prometheus(reply, scale_max=high)
    if protocol == "mt_bench":
        return parse_mt_bench(reply, scale_max=high)
    if protocol == "json":
        return parse_json_judge(reply, scale_max=high)
    return parse_ultrafeedback(reply, scale_max=high)[0]


# --------------------------------------------------------------------------- boolean graders

# A yes/no value: the word, then nothing, or punctuation and whatever follows ("true.", "No (the
# context is silent)"). "true or false" is not a value: it is the template echoed back.
_BOOLEAN_VALUE = re.compile(
    r"""["'`*_]*(?P<word>true|false|yes|no)\b["'`*_]*[ \t]*(?:[.!,;:(\u2014\u2013-].*)?""", re.I
)
# A line that starts with the label: "Grade: true", "**Grade:** false", "Grade: `true`.", "## Grade: yes".
# Line-initial only, so "... the Grade: true or false format ..." inside an explanation is not read.
_GRADE_LINE = re.compile(r"^[ \t>#*_-]*grade[ \t*]*[:：][ \t*]*(?P<value>.*)$", re.I | re.M)
_EXPLANATION_LABEL = re.compile(r"\A\W*Explanation[ \t*]*[:：][ \t*]*", re.IGNORECASE)
_GRADE_KEYS = ("grade", "correct", "relevant", "grounded", "value")


def _yes(value: str) -> bool | None:
    match = _BOOLEAN_VALUE.fullmatch(value.strip())
    return None if match is None else match.group("word").lower() in ("true", "yes")


def parse_grade(reply: str) -> ParsedGrade:
    """Read `Explanation: ...` then `Grade: true|false` (yes/no too), else a JSON object with
    `explanation` and one boolean under `grade`/`correct`/`relevant`/`grounded`/`value`.

    The grade is the first line starting with `Grade:` whose value is not the template's
    `<true or false>`; any other value there ("partially") fails the reply.
    """
    for line in _GRADE_LINE.finditer(reply):
        value = line.group("value")
        if _PLACEHOLDER.match(value):
            continue
        explanation = _clean(_EXPLANATION_LABEL.sub("", reply[: line.start()].strip()))
        grade = _yes(value)
        return ParsedGrade(grade, explanation, "" if grade is not None else "invalid_grade")
    obj = json_object(reply)
    if obj is None:
        return ParsedGrade(None, None, _no_verdict(reply))
    found = [obj[k] for k in _GRADE_KEYS if k in obj]
    said = obj.get("explanation")
    explanation_text = _clean(said) if isinstance(said, str) else None
    if len(found) != 1 or not isinstance(found[0], bool):
        return ParsedGrade(None, explanation_text, "invalid_grade" if found else "parse_failure")
    return ParsedGrade(found[0], explanation_text, "")


# --------------------------------------------------------------------------- RAGAS parts

# A numbered item at the start of a line: "1.", "2)", "**3.**", "Statement 4:", "- 5.".
_ITEM = re.compile(
    r"^[ \t>*_-]*(?:(?:statement|sentence|context)[ \t]+)?(?P<n>\d{1,4})[ \t*]*[.):：]", re.IGNORECASE | re.MULTILINE
)
_VERDICT_LABEL = re.compile(r"(?<![\w-])verdict[ \t*]*[:：][ \t*]*(?P<value>.*)$", re.IGNORECASE | re.MULTILINE)


def _verdict_of(text: str) -> tuple[bool | None, str, str]:
    """(verdict, explanation, reason) from the first `Verdict:` label in `text`."""
    label = _VERDICT_LABEL.search(text)
    if label is None:
        return None, "", "missing_verdict"
    explanation = _clean(_EXPLANATION_LABEL.sub("", text[: label.start()].strip())) or ""
    verdict = _yes(label.group("value"))
    return verdict, explanation, "" if verdict is not None else "invalid_verdict"


def parse_verdict(reply: str) -> ParsedVerdicts:
    """One `Explanation: ... Verdict: Yes|No` reply (context precision): the first `Verdict:` label."""
    if not reply.strip() or _REFUSAL.search(reply):
        return ParsedVerdicts(None, (), _no_verdict(reply))
    verdict, explanation, reason = _verdict_of(reply)
    if verdict is None:
        return ParsedVerdicts(None, (explanation,), reason)
    return ParsedVerdicts((verdict,), (explanation,), "")


def _numbered_sections(reply: str, count: int) -> list[str]:
    """The texts of items 1..count: each runs from its number to the next accepted item; the last
    one to the next line numbered 1..count+1 (a restart or a run-on item), else to the end."""
    items = list(_ITEM.finditer(reply))
    accepted: list[int] = []  # indexes into `items`
    for index, item in enumerate(items):
        if len(accepted) < count and int(item.group("n")) == len(accepted) + 1:
            accepted.append(index)
    sections = []
    for k, index in enumerate(accepted):
        if k + 1 < len(accepted):
            end = items[accepted[k + 1]].start()
        else:
            later = (m for m in items[index + 1 :] if int(m.group("n")) <= count + 1)
            end = next((m.start() for m in later), len(reply))
        sections.append(reply[items[index].end() : end])
    return sections


def parse_verdicts(reply: str, count: int) -> ParsedVerdicts:
    """`count` numbered `N. Explanation: ... Verdict: Yes|No` items, in order.

    Items 1..count are read in sequence (`_numbered_sections`), and an item's verdict is its first
    `Verdict:` label: a repeated or restarted numbering after item `count` is a runaway continuation
    and ignored. A missing item or verdict fails the whole reply (never read as No). A reply
    without numbered items is accepted only if it has exactly `count` `Verdict:` labels, in order.
    """
    if count < 1:
        return ParsedVerdicts((), (), "")
    if not reply.strip() or _REFUSAL.search(reply):
        return ParsedVerdicts(None, (), _no_verdict(reply))
    sections = _numbered_sections(reply, count)
    if not _ITEM.search(reply):
        labels = list(_VERDICT_LABEL.finditer(reply))
        if len(labels) != count:
            return ParsedVerdicts(None, (), "missing_verdict" if len(labels) < count else "extra_verdicts")
        starts = [0] + [label.end() for label in labels[:-1]]
        sections = [reply[starts[i] : labels[i].end()] for i in range(count)]
    verdicts: list[bool] = []
    explanations: list[str] = []
    for section in sections:
        verdict, explanation, reason = _verdict_of(section)
        if verdict is None:
            return ParsedVerdicts(None, tuple(explanations), reason)
        verdicts.append(verdict)
        explanations.append(explanation)
    if len(verdicts) < count:
        return ParsedVerdicts(None, tuple(explanations), "missing_verdict")
    return ParsedVerdicts(tuple(verdicts), tuple(explanations), "")


_LIST_LINE = re.compile(r"^[ \t]*(?:(?P<n>\d{1,4})[ \t]*[.)]|[-*•])[ \t]+(?P<text>\S.*)$")


def _label(name: str) -> re.Pattern[str]:
    return re.compile(rf"^[ \t#*_]*{name}[ \t*]*[:：][ \t*]*(?P<rest>.*)$", re.IGNORECASE | re.MULTILINE)


_STATEMENTS_LABEL = _label("statements")
_QUESTIONS_LABEL = _label("questions")
_NONCOMMITTAL_LABEL = _label("noncommittal")
_RELEVANT_LABEL = _label(r"relevant[ \t]+sentences")
_NONE = re.compile(r"""["'`*_]*(?:none|n/a|no statements)["'`*_]*[ \t.]*""", re.IGNORECASE)
_INSUFFICIENT = re.compile(r"""["'`*_]*insufficient[ \t]+information["'`*_]*[ \t.]*""", re.IGNORECASE)


def _read_list(text: str) -> tuple[str, ...] | None:
    """The first list in `text`: numbered or bulleted lines (blank lines skipped, a preamble line
    before it allowed). It ends at the first other line (prose after the list), or where the
    numbering restarts at 1 (a runaway second list). None if there is none, or if it is the
    answer template echoed back (placeholders only)."""
    items: list[str] = []
    for line in text.splitlines():
        match = _LIST_LINE.match(line)
        if not items:
            if match is not None:
                items.append(match.group("text").strip())
            continue
        if not line.strip():
            continue
        if match is None or match.group("n") == "1":
            break
        items.append(match.group("text").strip())
    if not items or all(_PLACEHOLDER.match(item) for item in items):
        return None
    return tuple(items)


def _labelled_list(reply: str, label: re.Pattern[str]) -> tuple[str, ...] | None:
    """The list after the first `label` line that is not a template echo (or the reply's first list)."""
    for match in label.finditer(reply):
        items = _read_list(f"{match.group('rest')}\n{reply[match.end() :]}")
        if items is not None:
            return items
    return _read_list(reply)


def parse_statements(reply: str) -> ParsedItems:
    """`Statements:` then a numbered list; `Statements: none` is a valid empty list."""
    label = _STATEMENTS_LABEL.search(reply)
    said_none = label.group("rest") if label is not None else reply
    if said_none.strip() and _NONE.fullmatch(said_none.strip()):
        return ParsedItems((), "")
    items = _labelled_list(reply, _STATEMENTS_LABEL)
    return ParsedItems(None, _no_verdict(reply)) if items is None else ParsedItems(items, "")


def parse_questions(reply: str) -> ParsedQuestions:
    """`Questions:` then a numbered list, then `Noncommittal: yes|no`."""
    questions = _labelled_list(reply, _QUESTIONS_LABEL)
    if questions is None:
        return ParsedQuestions(None, None, _no_verdict(reply))
    label = _NONCOMMITTAL_LABEL.search(reply)
    if label is None:
        return ParsedQuestions(questions, None, "missing_noncommittal")
    noncommittal = _yes(label.group("rest"))
    return ParsedQuestions(questions, noncommittal, "" if noncommittal is not None else "invalid_noncommittal")


_LIST_MARKER = re.compile(r"\A(?:\d{1,4}[.)]|[-*•>])\s*")


def parse_extraction(reply: str) -> ParsedExtraction:
    """`Relevant sentences:` then sentences copied from the context one per line, or
    `Insufficient Information` (an empty extraction). Bullets, numbers and quotes are removed."""
    label = _RELEVANT_LABEL.search(reply)
    body = reply if label is None else f"{label.group('rest')}\n{reply[label.end() :]}"
    if not body.strip():
        return ParsedExtraction(None, _no_verdict(reply))
    if _INSUFFICIENT.fullmatch(body.strip()):
        return ParsedExtraction((), "")
    if _REFUSAL.search(body):
        return ParsedExtraction(None, "refusal")
    lines = (_LIST_MARKER.sub("", line.strip()).strip("\"'“”` ") for line in body.splitlines())
    return ParsedExtraction(tuple(line for line in lines if line), "")


def normalise_sentence(text: str) -> str:
    """The form sentences are compared in: case-folded, whitespace collapsed, outer quotes dropped."""
    return " ".join(text.casefold().split()).strip("\"'“”` ")


# --------------------------------------------------------------------------- verdict bookkeeping


class JudgeClient(Protocol):
    """What a judge needs of a model: `qagen.llm.LLMClient`, or a test's scripted fake."""

    @property
    def settings(self) -> ModelSettings: ...

    async def complete(self, prompt: str, *, system: str | None = None) -> CallResult: ...


@dataclass
class Transcript:
    """Every call one verdict is made of: raw replies, summed usage, prompt hashes, call errors."""

    metric: str
    model: str
    raw: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    prompts: dict[str, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def note(self, *names: str) -> None:
        """Record the hashes of the prompts used (a changed prompt must never pass for the old one)."""
        for name in names:
            self.prompts[name] = load_prompt(name).hash

    def record(self, call: CallResult) -> str | None:
        """Account for one call; its reply text, or None if the call failed (then see `call_failed`)."""
        self.usage = Usage(
            input_tokens=self.usage.input_tokens + call.usage.input_tokens,
            output_tokens=self.usage.output_tokens + call.usage.output_tokens,
        )
        if call.text is None:
            self.errors.append(f"{call.error}: {call.detail}" if call.detail else call.error)
            return None
        self.raw.append(call.text)
        return call.text

    def call_failed(self, **detail: object) -> JudgeVerdict:
        """The verdict after a failed call: reason `api_error:<kind>` (`api_error` alone when the kind
        is unknown), so a resumed run can tell by prefix a call worth retrying from an unreadable reply."""
        kind = self.errors[-1].split(":", 1)[0] if self.errors else ""
        return self.verdict(None, "api_error" if kind in ("", "api_error") else f"api_error:{kind}", **detail)

    def verdict(self, value: float | None, reason: str = "", /, **detail: object) -> JudgeVerdict:
        """The verdict: `value` (None with a `reason` when it failed) and its parts in `detail`."""
        if (value is None) == (reason == ""):
            raise ValueError("a verdict has either a value or a failure reason")
        parts: dict[str, object] = {"model": self.model, "prompts": dict(self.prompts), **detail}
        if self.errors:
            parts["call_errors"] = list(self.errors)
        return JudgeVerdict(
            metric=self.metric, value=value, reason=reason, raw=list(self.raw), detail=parts, usage=self.usage
        )
