"""Untrusted text (questions, answers, references, contexts) made into safe judge-prompt data.

Untrusted text enters a judge prompt only through `neutralize`, between the data tags of the prompt
files (`DATA_TAGS`). Neutralising defuses the markers the reply parsers (`qagen.evaluate.judges.parsing`,
`qagen.evaluate.judges.ragas_parsing`) read, so a judge that quotes an answer in its feedback cannot smuggle
a score in with it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from qagen.llm.reply_rules import RESULT_MARKER

# The tag names that delimit data in the judge prompts (tests check every prompt file uses only these).
DATA_TAGS = frozenset(
    {"question", "response", "answer", "reference_answer", "context", "statements", "sentences", "facts"}
)
_DATA_TAG = re.compile(rf"<(?=[ \t]*/?[ \t]*(?:{'|'.join(sorted(DATA_TAGS))})\b)", re.IGNORECASE)
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
    text = RESULT_MARKER.sub(r"[ \1 ]", text)
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
