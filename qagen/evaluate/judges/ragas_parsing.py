"""RAGAS judge replies into values: Yes/No verdicts, numbered lists, extracted sentences. Never raises.

Like `qagen.evaluate.judges.parsing`, every parser returns a `Parsed*` value holding either the
fields or a failure `reason` (a `FailureKind`; `""` when the reply was read), and a reply that
cannot be read is a recorded failure, never a default.

Reply protocols:

- ``Verdict: Yes|No`` per numbered item (RAGAS statement / sentence / context verdicts);
- numbered lists of statements (``Statements:``) or questions (``Questions:``, then
  ``Noncommittal: yes|no``);
- sentences copied verbatim from the contexts (``Relevant sentences:``), or
  ``Insufficient Information``.

Sentences are counted by `split_sentences` and compared in the form of `normalise_sentence`.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from qagen.evaluate.judges.reply_common import EXPLANATION_LABEL, PLACEHOLDER, clean, yes
from qagen.failures import FailureKind
from qagen.llm.reply_rules import REFUSAL, Reason, no_verdict


class ParsedVerdicts(NamedTuple):
    """One Yes/No per numbered item (statements, sentences), with explanations, or `reason`."""

    verdicts: tuple[bool, ...] | None
    explanations: tuple[str, ...]
    reason: Reason


class ParsedItems(NamedTuple):
    """A numbered list (statements), possibly empty when the reply says `none`, or `reason`."""

    items: tuple[str, ...] | None
    reason: Reason


class ParsedQuestions(NamedTuple):
    """Questions generated from an answer and whether the answer was noncommittal, or `reason`."""

    questions: tuple[str, ...] | None
    noncommittal: bool | None
    reason: Reason


class ParsedExtraction(NamedTuple):
    """Sentences copied from the contexts (empty for "Insufficient Information"), or `reason`."""

    sentences: tuple[str, ...] | None
    reason: Reason


# --------------------------------------------------------------------------- sentences

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


def normalise_sentence(text: str) -> str:
    """The form sentences are compared in: case-folded, whitespace collapsed, outer quotes dropped."""
    return " ".join(text.casefold().split()).strip("\"'“”` ")


# --------------------------------------------------------------------------- verdicts

# A numbered item at the start of a line: "1.", "2)", "**3.**", "Statement 4:", "- 5.".
_ITEM = re.compile(
    r"^[ \t>*_-]*(?:(?:statement|sentence|context)[ \t]+)?(?P<n>\d{1,4})[ \t*]*[.):：]", re.IGNORECASE | re.MULTILINE
)
_VERDICT_LABEL = re.compile(r"(?<![\w-])verdict[ \t*]*[:：][ \t*]*(?P<value>.*)$", re.IGNORECASE | re.MULTILINE)


def _verdict_of(text: str) -> tuple[bool | None, str, Reason]:
    """(verdict, explanation, reason) from the first `Verdict:` label in `text`."""
    label = _VERDICT_LABEL.search(text)
    if label is None:
        return None, "", FailureKind.MISSING_VERDICT
    explanation = clean(EXPLANATION_LABEL.sub("", text[: label.start()].strip())) or ""
    verdict = yes(label.group("value"))
    return verdict, explanation, "" if verdict is not None else FailureKind.INVALID_VERDICT


def parse_verdict(reply: str) -> ParsedVerdicts:
    """One `Explanation: ... Verdict: Yes|No` reply (context precision): the first `Verdict:` label."""
    if not reply.strip() or REFUSAL.search(reply):
        return ParsedVerdicts(None, (), no_verdict(reply))
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
    if not reply.strip() or REFUSAL.search(reply):
        return ParsedVerdicts(None, (), no_verdict(reply))
    sections = _numbered_sections(reply, count)
    if not _ITEM.search(reply):
        labels = list(_VERDICT_LABEL.finditer(reply))
        if len(labels) != count:
            return ParsedVerdicts(
                None, (), FailureKind.MISSING_VERDICT if len(labels) < count else FailureKind.EXTRA_VERDICTS
            )
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
        return ParsedVerdicts(None, tuple(explanations), FailureKind.MISSING_VERDICT)
    return ParsedVerdicts(tuple(verdicts), tuple(explanations), "")


# --------------------------------------------------------------------------- lists and extraction

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
    if not items or all(PLACEHOLDER.match(item) for item in items):
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
    return ParsedItems(None, no_verdict(reply)) if items is None else ParsedItems(items, "")


def parse_questions(reply: str) -> ParsedQuestions:
    """`Questions:` then a numbered list, then `Noncommittal: yes|no`."""
    questions = _labelled_list(reply, _QUESTIONS_LABEL)
    if questions is None:
        return ParsedQuestions(None, None, no_verdict(reply))
    label = _NONCOMMITTAL_LABEL.search(reply)
    if label is None:
        return ParsedQuestions(questions, None, FailureKind.MISSING_NONCOMMITTAL)
    noncommittal = yes(label.group("rest"))
    return ParsedQuestions(
        questions, noncommittal, "" if noncommittal is not None else FailureKind.INVALID_NONCOMMITTAL
    )


_LIST_MARKER = re.compile(r"\A(?:\d{1,4}[.)]|[-*•>])\s*")


def parse_extraction(reply: str) -> ParsedExtraction:
    """`Relevant sentences:` then sentences copied from the context one per line, or
    `Insufficient Information` (an empty extraction). Bullets, numbers and quotes are removed."""
    label = _RELEVANT_LABEL.search(reply)
    body = reply if label is None else f"{label.group('rest')}\n{reply[label.end() :]}"
    if not body.strip():
        return ParsedExtraction(None, no_verdict(reply))
    if _INSUFFICIENT.fullmatch(body.strip()):
        return ParsedExtraction((), "")
    if REFUSAL.search(body):
        return ParsedExtraction(None, FailureKind.REFUSAL)
    lines = (_LIST_MARKER.sub("", line.strip()).strip("\"'“”` ") for line in body.splitlines())
    return ParsedExtraction(tuple(line for line in lines if line), "")
