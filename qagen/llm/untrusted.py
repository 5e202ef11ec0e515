"""Untrusted text (a chunk, a drafted question, a RAG answer, a reference, a context) made into safe
prompt data, for the generator and critic prompts and the judge prompts alike.

Untrusted text enters a prompt only through `neutralize` (or `numbered` / `passages`, which use it),
between the data tags of the prompt files (`DATA_TAGS`). Neutralising defuses the markers the reply
parsers read (`qagen.generation.replies`, `qagen.evaluate.judges.parsing`,
`qagen.evaluate.judges.ragas_parsing`), so a model that quotes the data in its reply cannot smuggle
a verdict, a question or a score in with it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from qagen.llm.reply_rules import RESULT_MARKER

DATA_TAGS = frozenset(
    {
        # The generator and critic prompts (qa_generation, critique_*).
        "question",
        "context",
        # The judge prompts (judge_*, grader_*, ragas_*).
        "response",
        "answer",
        "reference_answer",
        "statements",
        "sentences",
        "facts",
    }
)
"""The tag names that delimit data in the prompt files (a test checks every prompt uses only these)."""

# `<` opening or closing a data tag, whatever the case or spacing (`<context>`, `< / Context>`,
# `<context index=1>`): the model would read any of them as the end or start of a block.
_DATA_TAG = re.compile(rf"<(?=[ \t]*/?[ \t]*(?:{'|'.join(sorted(DATA_TAGS))})\b)", re.IGNORECASE)
# `[[` before a number: FastChat's MT-Bench score format (`Rating: [[7]]`), which a judge trained on
# it could take for a verdict even though no parser here reads it.
_DOUBLE_BRACKET = re.compile(r"\[\[(?=[ \t]*[-+]?\d)")
# The reply labels the parsers read, both families':
# - critics and generator: `Total rating:`, `Evaluation:`, `Factoid question:`, `Answer:`, and the
#   `Answer:::` / `Output:::` / `Feedback:::` block markers, the generator's `Evidence:`, plus the
#   prompts' own `Question:` and `Context:` labels;
# - judges: `Grade:`, `Verdict:`, `Noncommittal:`, `Rating:`, `Score:`, `Statements:`,
#   `Questions:`, `Relevant sentences:`.
# Each parser's label regex allows only `*`, spaces and tabs between the words and the colon (a
# full-width colon included), so replacing the whole colon run defuses every form, `Answer:::`
# too; "not preceded by a letter or digit" covers every prefix a parser allows (`**`, `#`, `_`,
# `-`, a line start).
_LABELS = (
    ("total", "rating"), ("rating",), ("evaluation",), ("factoid", "question"), ("question",), ("questions",),
    ("answer",), ("evidence",), ("feedback",), ("output",), ("context",), ("grade",), ("verdict",),
    ("noncommittal",), ("score",), ("statements",), ("relevant", "sentences"),
)  # fmt: skip
"""Each label as its words (spaces or tabs between them)."""
_COLON_RUN = re.compile("[:：]+")
# A label is looked for only where a colon run is, backwards from it: in the text reversed, from the
# colon run on, `[ \t*]*` then a label spelled backwards, not preceded (in the text) by a letter or
# digit. Scanning every position of a chunk for a label instead costs about as much as the rest of
# a draft's prompt, and chunks have few colons.
_LABEL_BEFORE_COLON = re.compile(
    r"[ \t*]*(?:"
    + "|".join(r"[ \t]+".join(word[::-1] for word in reversed(label)) for label in _LABELS)
    + r")(?![^\W_])",
    re.IGNORECASE,
)


def neutralize(text: str) -> str:
    """Defuse the structural strings of every prompt family inside untrusted `text`.

    - a data tag (`<context>`, `</response>`, ...) becomes `&lt;context>`: the data cannot close
      its own block and pose as prompt text;
    - `[RESULT]` becomes `[ RESULT ]` and `[[7` becomes `[ [7`: not a score marker to a parser;
    - a reply label's colons (`Total rating:`, `Factoid question:`, `Answer:::`, `Grade:`,
      `Verdict：`...) become ` -`, so a quote of the data in a reply is never read as a verdict, a
      question or a new block.

    One function for the generator and critic prompts and the judge prompts, defusing the union
    of both families' markers. That is safe for both: every edit only splits a marker (a `<`
    spelled `&lt;`, a space inside brackets, ` -` for a colon run) and leaves the words as
    written, so the model reads the text as before, and a marker of the other family is no
    legitimate part of either's data (a parser of some family reads each of them). It is
    idempotent (no edit leaves or creates a marker) and changes nothing else.
    """
    # Each marker holds a `<` or a `[`: a text with neither (most chunks) is not searched for them.
    if "<" in text:
        text = _DATA_TAG.sub("&lt;", text)
    if "[" in text:
        text = RESULT_MARKER.sub(r"[ \1 ]", text)
        text = _DOUBLE_BRACKET.sub("[ [", text)
    return _defuse_labels(text)


def _defuse_labels(text: str) -> str:
    """Each colon run after a reply label (`_LABELS`, then any `*`, spaces and tabs) as ` -`."""
    if ":" not in text and "：" not in text:
        return text
    backwards, length = text[::-1], len(text)
    pieces: list[str] = []
    copied = 0
    for run in _COLON_RUN.finditer(text):
        if _LABEL_BEFORE_COLON.match(backwards, length - run.start()):
            pieces += (text[copied : run.start()], " -")
            copied = run.end()
    if not pieces:
        return text
    pieces.append(text[copied:])
    return "".join(pieces)


def numbered(items: Sequence[str]) -> str:
    """Items as `1. ...` lines, each neutralised and flattened to one line (so numbering stays exact)."""
    return "\n".join(f"{i}. {' '.join(neutralize(item).split())}" for i, item in enumerate(items, 1))


PASSAGE_SEPARATOR = "\n\n---\n\n"
"""Between retrieved passages in a prompt: no word in it, so it is never counted as a sentence."""


def passages(contexts: Sequence[str]) -> str:
    """Retrieved contexts for one prompt block: each neutralised, in rank order, apart."""
    return PASSAGE_SEPARATOR.join(neutralize(context).strip() for context in contexts)
