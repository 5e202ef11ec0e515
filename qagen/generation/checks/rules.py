"""The rules the prompts already state, checked for free: each a named check with its own reason.

- `source_pointing`: a question that points at its source ("in the context", "according to the
  passage", "this manual page", "the author", "the situation described") is not standalone: the
  person asking a search engine has no passage in front of them.
- `answer_in_question`: an answer written inside its own question is trivial.
- `ungrounded_answer`: an answer that says the context does not hold it ("the context does not
  mention...", "based on general knowledge") is not grounded in it.
- `answer_pointing`: an answer that talks about its passage ("the context provides", "as mentioned in
  the passage", "the first passage states") is written about a text, not an answer a system can be
  scored against.
- `code_not_in_passages`: an answer that writes code (a `backticked` command, option or name) its
  passages do not hold took it from the model's memory, not from the document: small models answer
  "`git tag`" from a chunk that never names the command, or call a parameter `sleepfunc`.

The phrases are written for the languages qagen's users draft in (English, French, German,
Spanish, Italian, Portuguese; Chinese and Japanese for `source_pointing`) and all of them are tried
on every draft: the patterns are specific enough that one language's phrase does not occur in
another's questions.

Whether a check is on unless the user says otherwise (`default_on`) was decided on the reviewed
drafts (the replay mode of `benchmarks/bench_quality.py`, the README's table under "Checks before
the critics"): a check that rejected a draft the reviewer kept ships off.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Sequence
from functools import cached_property
from typing import NamedTuple

from qagen.config import FREE_CHECK_DEFAULTS
from qagen.corpus.evidence import normalise
from qagen.generation.checks.words import content_words


class FreeCheck(NamedTuple):
    """One rule: its name (the setting that turns it on or off), the reason a draft it rejects gets,
    what it asks, and the test (`(question, answer, passages' texts) -> rejected`)."""

    name: str
    reason: str
    description: str
    rejects: Callable[[str, str, Sequence[str]], bool]

    @property
    def default_on(self) -> bool:
        """Whether a build makes it unless it names its own checks (a setting: `FREE_CHECK_DEFAULTS`)."""
        return FREE_CHECK_DEFAULTS[self.name]


_SOURCE_NOUNS_EN = (
    r"context|passage|text|excerpt|extract|snippet|document|article|section|paragraph|page|manual page|man page"
    r"|tutorial|guide|story|example above|documentation provided"
)
# Each alternative is a phrase that only a text about a text in front of its reader uses.
_POINTING_EN = (
    # ... but not the idiom "in the context of foreign keys" (a reviewer keeps such questions).
    rf"\b(?:in|from|within|of|by|to)\s+(?:the|this|that)\s+(?:given\s+|provided\s+|above\s+|following\s+|"
    rf"previous\s+|same\s+|current\s+)?(?:{_SOURCE_NOUNS_EN})\b(?!\s+of\b)",
    # One of several passages a multi-hop draft was written from ("the first passage", "both texts").
    r"\b(?:(?:the|this|that)\s+(?:first|second|third|other|two|latter|former)|both)\s+"
    r"(?:passages?|excerpts?|extracts?|snippets?|contexts?|texts?)\b",
    r"\bpassages?\s+(?:1|2|one|two)\b",
    rf"\baccording\s+to\s+(?:the|this)\s+(?:{_SOURCE_NOUNS_EN}|author|writer)\b",
    rf"\b(?:this|the\s+(?:given|provided|above|following))\s+(?:{_SOURCE_NOUNS_EN})\b",
    r"\b(?:the\s+)?(?:situation|scenario|case|example|setup|story)\s+(?:described|mentioned|shown|given|above)\b",
    r"\b(?:described|mentioned|shown|given|discussed|listed)\s+(?:above|here|below)\b",
)
_SOURCE_POINTING_PHRASES = (
    # English
    *_POINTING_EN,
    r"\bthe\s+(?:author|writer|narrator)\b",
    # French
    r"\b(?:selon|d'après|dans)\s+(?:le|ce|cet|la|cette|l')\s*(?:texte|passage|contexte|document|extrait|article)\b",
    r"\bl'auteur\b",
    # German
    r"\b(?:im|in\s+diesem|laut\s+(?:dem|diesem)|gemäß\s+dem)\s+(?:Text|Kontext|Dokument|Abschnitt|Auszug|Artikel)\b",
    r"\bder\s+(?:Autor|Verfasser)\b",
    # Spanish, Italian, Portuguese
    r"\b(?:según|en|de\s+acuerdo\s+con)\s+(?:el|este|la|esta)\s+(?:texto|contexto|documento|pasaje|fragmento)\b",
    r"\b(?:secondo|nel|in\s+questo)\s+(?:il\s+)?(?:testo|contesto|documento|passaggio|brano)\b",
    r"\b(?:segundo|no|neste)\s+(?:o\s+)?(?:texto|contexto|documento|trecho)\b",
)


class _WordPhrases:
    r"""Phrases of which each begins a word (`\b`, then a letter), looked for case-blind.

    Python's `re` finds no shortcut into an alternation of case-blind phrases: it tries every phrase
    at every position of the text. Here `(?<!\w)(?=\w)` first turns away each position that begins
    no word, in one step; and an ASCII text (most drafts) is lower-cased and searched with the
    phrases lower-cased and case-sensitive, where `re` skips at once each phrase whose first letter
    is not the word's. Both find what the plain case-blind alternation finds, where it finds it
    (tests/generation/checks/test_free_checks.py): in ASCII text a case-blind letter matches nothing
    but its two cases (the other characters it matches, `ſ`, `K`, `İ`, are not ASCII)."""

    def __init__(self, phrases: tuple[str, ...]) -> None:
        # Lower-cased, a phrase must mean what it meant case-blind in ASCII text: no upper-case escape
        # (`\S`) or inline flag, and no letter outside ASCII that matches one inside it (`ſ`, `İ`).
        if any(re.search(r"\\[A-Z]|\(\?[aiLmsux-]", phrase) for phrase in phrases):
            raise ValueError("write the phrases with no upper-case escape (`\\S`, `\\W`) and no inline flag")
        if any(re.search(re.escape(char), string.ascii_letters, re.IGNORECASE) for char in _non_ascii(phrases)):
            raise ValueError("write the phrases with no letter outside ASCII that matches one inside it (`ſ`, `İ`)")
        self._phrases = phrases

    # Compiled when first searched, not when the module is imported, which a build does before its
    # first call: about 2 ms of CPU each.
    @cached_property
    def _any(self) -> re.Pattern[str]:
        return re.compile(rf"(?<!\w)(?=\w)(?:{'|'.join(self._phrases)})", re.IGNORECASE)

    @cached_property
    def _ascii(self) -> re.Pattern[str]:
        lowered = (phrase.removeprefix(r"\b").lower() for phrase in self._phrases)
        return re.compile(rf"(?<!\w)(?=\w)(?:{'|'.join(lowered)})")

    def span(self, text: str) -> tuple[int, int] | None:
        """Where the first phrase found in `text` is; None when there is none."""
        found = self._ascii.search(text.lower()) if text.isascii() else self._any.search(text)
        return None if found is None else found.span()

    def found(self, text: str) -> bool:
        return self.span(text) is not None


def _non_ascii(phrases: tuple[str, ...]) -> set[str]:
    return {char for phrase in phrases for char in phrase if not char.isascii()}


_SOURCE_POINTING = _WordPhrases(_SOURCE_POINTING_PHRASES)

# An answer written about its passage: the question's phrases (but "the writer", a CSV writer in an
# answer, is no author), and the passage as the subject of what it says ("the context provides").
_ANSWER_POINTING_PHRASES = (
    *_POINTING_EN,
    r"\bthe\s+(?:given\s+|provided\s+)?(?:context|passages?|excerpts?)\s+(?:also\s+)?"
    r"(?:provides?|states?|says|mentions?|describes?|explains?|shows?|notes?|gives?|indicates?)\b",
)
_ANSWER_POINTING = _WordPhrases(_ANSWER_POINTING_PHRASES)

# A span of code in an answer: `git tag`, ``True`` (reStructuredText's double backticks hold one).
_CODE_SPAN = re.compile(r"`([^`\n]+)`")

# An answer that says it is not drawn from the chunk.
_NOT_GROUNDED_PHRASES = (
    # English
    r"\b(?:the\s+)?(?:given\s+|provided\s+)?(?:context|passage|text|document|excerpt)\s+(?:provided\s+|given\s+)?"
    r"(?:does\s+not|doesn't|did\s+not|fails\s+to)\s+(?:explicitly\s+|directly\s+|specifically\s+)?"
    r"(?:mention|provide|contain|specify|say|state|include|give|describe|discuss|hold|explain)",
    r"\bnot\s+(?:explicitly\s+|directly\s+)?(?:mentioned|stated|specified|provided|given|found|described)\s+"
    r"in\s+the\s+(?:given\s+|provided\s+)?(?:context|passage|text|document|excerpt)",
    r"\b(?:based\s+on|from|using)\s+(?:general|common|my|prior|background)\s+knowledge\b",
    r"\bno\s+(?:information|mention)\s+(?:is\s+given\s+|is\s+provided\s+)?(?:about|of|on|in)\s+",
    r"\bcannot\s+be\s+(?:determined|answered|found|inferred)\s+(?:from|with|based\s+on)\b",
    # French
    r"\b(?:le\s+)?(?:texte|contexte|passage|document)\s+ne\s+(?:mentionne|précise|dit|contient|fournit)\s+pas\b",
    r"\bn'est\s+pas\s+(?:mentionné|précisé|indiqué)e?\s+dans\b",
    # German
    r"\b(?:wird|ist)\s+im\s+(?:Text|Kontext|Dokument)\s+nicht\b",
    # Spanish, Italian, Portuguese
    r"\bno\s+se\s+(?:menciona|especifica|indica)\b",
    r"\bnon\s+(?:è|viene)\s+(?:menzionat|specificat|indicat)[oa]\b",
    r"\bnão\s+(?:é|está)\s+(?:mencionad|especificad|indicad)[oa]\b",
)
_NOT_GROUNDED = _WordPhrases(_NOT_GROUNDED_PHRASES)


# Chinese and Japanese, apart: no word boundaries, so each phrase is whole ("根据上下文" points at a
# text; "上下文切换", a context switch, does not). The bundled example corpus holds a Chinese document.
_SOURCE_NOUNS_ZH = r"上下文|上文|原文|本文|文中|文章|文本|段落|材料|资料|文档|这段话|这段文字|这篇文章|该文"
_SOURCE_NOUNS_JA = r"文章|文脈|テキスト|本文|記事|段落|資料|文書|一節|抜粋|コンテキスト|パッセージ"
_SOURCE_POINTING_CJK = re.compile(
    "|".join(
        (
            # Chinese: "according to the context/text", "mentioned in the text", "this article"
            rf"(?:根据|依据|按照|基于|据)(?:所给|给定|提供的|以上|上述)?(?:{_SOURCE_NOUNS_ZH})",
            rf"(?:{_SOURCE_NOUNS_ZH})(?:中|里)?(?:提到|提及|所述|所说|描述|指出|介绍|给出|列出)",
            r"本文|文中|上文中",
            # Japanese: "according to this passage", "in the above text", "the writer"
            rf"(?:{_SOURCE_NOUNS_JA})(?:によると|によれば|に基づくと|に基づいて|から判断すると|の中で|中で|中の)",
            rf"(?:この|その|本|上記の|以下の|与えられた|前述の)(?:{_SOURCE_NOUNS_JA})",
            r"本文中|筆者",
        )
    )
)


def points_at_source(question: str, _answer: str = "", _passages: Sequence[str] = ()) -> bool:
    """The question refers to a text the asker is not reading ("in the context", "the author")."""
    if _SOURCE_POINTING.found(question):
        return True
    # Every Chinese or Japanese phrase holds a character outside ASCII.
    return not question.isascii() and _SOURCE_POINTING_CJK.search(question) is not None


def answer_in_question(question: str, answer: str, _passages: Sequence[str] = ()) -> bool:
    """The answer, as whole words (case and punctuation aside), is written in its question, and it
    has at least one content word (an answer "a" or "the" says nothing either way). A one-word answer
    must be written with its own case: the exception `Full` is not given away by "a full queue"."""
    needle = normalise(answer)  # (looked for first: seldom there, and cheaper than the content words)
    if not needle or f" {needle} " not in f" {normalise(question)} " or not content_words(answer):
        return False
    word = answer.strip().strip(".")
    return len(word.split()) > 1 or re.search(rf"(?<!\w){re.escape(word)}(?!\w)", question) is not None


def says_not_grounded(_question: str, answer: str, _passages: Sequence[str] = ()) -> bool:
    """The answer says the context does not hold it, or that it comes from elsewhere."""
    return _NOT_GROUNDED.found(answer)


def answer_points_at_source(_question: str, answer: str, _passages: Sequence[str] = ()) -> bool:
    """The answer talks about its passage ("the context provides", "as mentioned in the passage")."""
    return _ANSWER_POINTING.found(answer)


def _code_form(text: str) -> str:
    """Code as compared: runs of spaces and hyphens one space (`git commit` is a man page's `git-commit`),
    a shell prompt and an empty call's parentheses dropped (`b16encode()` is the docs' `b16encode(s)`)."""
    text = re.sub(r"[\s-]+", " ", text).strip(" .,;:")
    return re.sub(r"\(\)$", "", re.sub(r"^[$>]\s*", "", text)).strip()


def code_not_in_passages(_question: str, answer: str, passages: Sequence[str]) -> bool:
    """A span of code in the answer (between backticks) that none of its passages holds, letter case
    kept (`True` is not `true`)."""
    spans = [form for span in _CODE_SPAN.findall(answer) if (form := _code_form(span))]
    if not spans:
        return False
    texts = [_code_form(passage) for passage in passages]
    return any(not any(span in text for text in texts) for span in spans)


SOURCE_POINTING = "question_points_at_source"
ANSWER_IN_QUESTION = "answer_in_question"
ANSWER_NOT_GROUNDED = "answer_not_grounded"
ANSWER_POINTING = "answer_points_at_source"
CODE_NOT_IN_PASSAGES = "answer_code_not_in_passages"

FREE_CHECKS: tuple[FreeCheck, ...] = (
    FreeCheck(
        "source_pointing",
        SOURCE_POINTING,
        'the question points at its source ("in the context", "the author", "this manual page")',
        points_at_source,
    ),
    FreeCheck(
        "answer_in_question",
        ANSWER_IN_QUESTION,
        "the answer is written inside its own question",
        answer_in_question,
    ),
    FreeCheck(
        "ungrounded_answer",
        ANSWER_NOT_GROUNDED,
        'the answer says the context does not hold it ("the context does not mention", "general knowledge")',
        says_not_grounded,
    ),
    FreeCheck(
        "answer_pointing",
        ANSWER_POINTING,
        'the answer talks about its passage ("the context provides", "as mentioned in the passage")',
        answer_points_at_source,
    ),
    FreeCheck(
        "code_not_in_passages",
        CODE_NOT_IN_PASSAGES,
        "the answer writes code (between backticks) that its passages do not hold",
        code_not_in_passages,
    ),
)
"""Every free check, in the order they are tried (the first that rejects gives the reason)."""

QUESTION_CHECKS = frozenset({"source_pointing"})
"""The checks that read the question alone: those a draft whose answer is no text of its passages
(an unanswerable question's abstention) is checked on."""

FREE_CHECK_NAMES: tuple[str, ...] = tuple(check.name for check in FREE_CHECKS)


def free_check(name: str) -> FreeCheck:
    """The check called `name`."""
    return next(check for check in FREE_CHECKS if check.name == name)


def failed_check(
    question: str, answer: str, enabled: frozenset[str] | set[str], passages: Sequence[str]
) -> FreeCheck | None:
    """The first enabled check that rejects the draft, or None. `passages`: the texts the draft was
    written from, always given: a check of the answer's code against none would reject all code."""
    for check in FREE_CHECKS:
        if check.name in enabled and check.rejects(question, answer, passages):
            return check
    return None
