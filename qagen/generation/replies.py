"""Parsers for the text protocols of the default prompts. They never raise and never guess.

Every parser returns a `Parsed*` value with either the fields or a failure `reason`; the caller
keeps the raw reply beside it. A reply that cannot be read is a recorded failure, never a default
score, and an out-of-range score is never clamped into range.

The block rule (one rule for every protocol, decided from the real replies in
`shared/reference/data/real_llm_outputs.jsonl`):

1. Split the reply into blocks at continuation markers: a line that is only `Feedback:::`,
   `Answer:::` or `Output:::` (markdown bold allowed). Models write these when they run on past
   their verdict (Mixtral's "runaway continuations" invent further `Feedback:::` blocks with other
   ratings) and when they echo the prompt's answer template.
2. Drop blocks that are empty or are the prompt's own template echoed back (they still hold its
   placeholders, e.g. "(your rating").
3. The verdict is read from the first remaining block only. If that block has no valid verdict the
   reply fails, even if a later (invented) block has one: a later block is not the model's answer
   to our prompt.

What a reply without a verdict is (empty, a refusal, unreadable) and how a number becomes a score
are the rules every parser shares, `qagen.llm.reply_rules`; the `reason` of a result is a
`FailureKind`, or `""` when the reply was read.

Untrusted text (a chunk, a drafted question) enters the generator and critic prompts only through
`qagen.llm.untrusted.neutralize`, between the data tags of the prompt files. A model that quotes
that text in its reply then cannot smuggle a verdict in with it: the markers these parsers read no
longer occur in it.
"""

from __future__ import annotations

import re
from functools import cache
from typing import NamedTuple

from qagen.failures import FailureKind
from qagen.generation.checks.words import content_words
from qagen.llm.reply_rules import NUMBER, Reason, check_score, no_verdict
from qagen.llm.reply_rules import ParsedYesNo as ParsedYesNo
from qagen.llm.reply_rules import parse_yes_no as parse_yes_no

# Step 1 of the block rule: a line that is only a continuation marker.
_CONTINUATION_MARKER = re.compile(
    r"^[ \t]*\**[ \t]*(?:Feedback|Answer|Output)[ \t]*:::[ \t]*\**[ \t]*$",
    re.IGNORECASE | re.MULTILINE,
)
# Placeholders of the prompts' answer templates; a block holding one is an echo of the template.
_TEMPLATE_ECHO = re.compile(
    r"\((?:your rationale|your rating|your [\w -]*question\)|your answer to the |in one sentence, why"
    r"|the sentence of the context that holds)",
    re.IGNORECASE,
)

# "Total rating: 4", "Total rating:  2", "**Total rating:** 4", "Total Rating: **4**",
# "Total rating: 4/5", "Total rating: 4.0", "Total rating:\n4" (the rating on the next line).
# The number is captured as written (`reply_rules.NUMBER`: sign, decimals, scale) so that 0, 7,
# 4.5 or 8/10 are reported as the failures they are instead of being read as a nearby valid score.
_TOTAL_RATING = re.compile(rf"total[ \t]+rating[ \t]*\**[ \t]*[:：][ \t]*\**\s*\**[ \t]*{NUMBER}", re.IGNORECASE)
# The label before a critic's rationale ("Evaluation:", "**Evaluation:**").
_EVALUATION_LABEL = re.compile(r"\**[ \t]*Evaluation[ \t]*\**[ \t]*:[ \t]*\**", re.IGNORECASE)

# The generator's protocol: `<label>: ...` then `Answer: ...` (a line-initial `Answer:`, never the
# `Answer:::` block marker), the label a question type's (`Factoid question`, `Multi-hop question`).
FACTOID_LABEL = "Factoid question"


@cache
def _question_label(label: str) -> re.Pattern[str]:
    """`Factoid question:`, `**Factoid question:**`, `Factoid  question :` (spaces between the words
    free), or a line that starts with `Question:` after at most two words of its own: small models
    drop the type's word or write another type's (of the multi-hop and reworded drafts Qwen2.5-1.5B
    made from git's documentation, 7 of 14 were labelled `Question:`; on SQLite's, 3 of 30 drafts of
    other types were labelled `Factoid question:`; SmolLM2 labels its factoids `Question:`). Three
    words or more before it ("Here is a question:") are prose, not a label."""
    words = r"[ \t]+".join(re.escape(word) for word in label.split())
    return re.compile(
        rf"(?:\**[ \t]*{words}|^[ \t]*\**[ \t]*(?:[\w-]+[ \t]+){{0,2}}Question)[ \t]*\**[ \t]*:[ \t]*\**",
        re.IGNORECASE | re.MULTILINE,
    )


@cache
def _question_words(label: str) -> re.Pattern[str]:
    """What every match of `_question_label(label)` holds: the label's words, or `Question`. Looked for
    first in an answer, which seldom holds either: the whole pattern, tried at every position of an
    answer, costs as much as the rest of reading the reply."""
    words = r"[ \t]+".join(re.escape(word) for word in label.split())
    return re.compile(rf"{words}|Question", re.IGNORECASE)


# The optional evidence line echoed as its own placeholder ("Evidence: (the sentence of the context
# that holds the answer, ...)"): a small model copies the template's line when it has no sentence to
# quote. The line says nothing, so it is dropped before the block rule, which would otherwise take the
# whole block, a readable question and answer with it, for an echo of the template.
_ECHOED_EVIDENCE_LINE = re.compile(
    r"^[ \t]*\**[ \t]*Evidence[ \t]*\**[ \t]*:[ \t]*\**[ \t]*\(the sentence of the context that holds[^\n]*$",
    re.IGNORECASE | re.MULTILINE,
)


_ANSWER_LABEL = re.compile(
    # Line-initial, or on the question's own line right after its question mark ("Question: Q? Answer: A").
    r"(?:^[ \t]*|(?<=\?)[ \t]+)\**[ \t]*Answer[ \t]*\**[ \t]*:(?!::)[ \t]*\**",
    re.IGNORECASE | re.MULTILINE,
)
# A question written with no label at all: the block's first line up to its question mark, before an
# `Answer:` on the same line or a later one (blank lines between), a question with no label-like "word: "
# in it ("What is X?\nAnswer: Y": Qwen2.5-1.5B wrote 2 of 64 drafts so on Python's documentation, and
# "What is X?\n\nAnswer: Y" 1 of 36 later; "Here is a question: What is X?" is prose, not a question).
_UNLABELLED_QUESTION = re.compile(
    r"\A\s*(?P<question>(?:[^\n:]|:(?!\s))*\?)(?:[ \t]*\n(?:[ \t]*\n)*|[ \t]+)"
    r"(?=[ \t]*\**[ \t]*Answer[ \t]*\**[ \t]*:(?!::))"
)
# A reply that is one such question and nothing else, read for a type whose reply needs no answer (an
# unanswerable question, a composed multi-hop one): most of the 6 of 36 drafts Qwen2.5-Coder-1.5B lost to
# parsing in a typed build of Python's documentation ("Output:::\nWhat is the name of the module that
# provides UUID objects ...?").
_LONE_QUESTION = re.compile(r"\A\s*(?P<question>(?:[^\n:]|:(?!\s))*\?)\s*\Z")
# The evidence line the default prompt asks for after the answer (optional: older prompts and the
# user's own do not ask for it); line-initial, like `Answer:`.
_EVIDENCE_LABEL = re.compile(r"^[ \t]*\**[ \t]*Evidence[ \t]*\**[ \t]*:[ \t]*\**", re.IGNORECASE | re.MULTILINE)
# Quotes a model puts around a copied sentence ("...", “...”, `...`), taken off the evidence.
_QUOTES = "\"'“”‘’«»`"


class ParsedRating(NamedTuple):
    """A critic's verdict: `score` 1-5 and its rationale, or `reason` why there is none."""

    score: int | None
    rationale: str | None
    reason: Reason
    offset: int = -1
    """Where the rating's number starts in the reply (for its probability); -1 without a rating."""


class ParsedQA(NamedTuple):
    """A drafted question and answer (and the evidence sentence, when the reply quotes one), or
    `reason` why the reply holds none."""

    question: str | None
    answer: str | None
    reason: Reason
    evidence: str | None = None


def verdict_blocks(reply: str) -> list[str]:
    """The reply's blocks after steps 1 and 2 of the module's rule (first block = the answer)."""
    # (Every marker holds `:::`: a reply without one is one block, unsearched.)
    blocks = _CONTINUATION_MARKER.split(reply) if ":::" in reply else [reply]
    return [b for b in blocks if b.strip() and not _TEMPLATE_ECHO.search(b)]


def parse_rating(reply: str, *, scale_max: int = 5) -> ParsedRating:
    """Read `Evaluation: ... Total rating: N` (1 <= N <= scale_max) from a critic's reply."""
    blocks = verdict_blocks(reply)
    if not blocks:
        # Every block was the answer template echoed back: neither empty nor a refusal, nor
        # unreadable text either (what `no_verdict` calls a parse failure).
        unread = no_verdict(reply)
        return ParsedRating(None, None, FailureKind.TEMPLATE_ECHO if unread is FailureKind.PARSE_FAILURE else unread)
    block = blocks[0]
    match = _TOTAL_RATING.search(block)
    if match is None:
        return ParsedRating(None, None, no_verdict(block))
    score, reason = check_score(match.group("value"), match.group("scale"), 1, scale_max)
    # The blocks are pieces of the reply in order: the first kept one is found first.
    offset = reply.find(block) + match.start("value")
    return ParsedRating(score, _rationale_before(block, match.start()), reason, offset)


def _rationale_before(block: str, end: int) -> str | None:
    head = block[:end]
    labels = list(_EVALUATION_LABEL.finditer(head))
    text = head[labels[-1].end() :] if labels else head
    text = text.strip().strip("*").strip()
    return text or None


def parse_factoid_qa(reply: str) -> ParsedQA:
    """Read `Factoid question: ... Answer: ...` (and an optional `Evidence: ...` line after the
    answer) from a generator's reply."""
    return parse_labelled_qa(reply, FACTOID_LABEL)


def parse_labelled_qa(reply: str, label: str, *, answer_optional: bool = False) -> ParsedQA:
    """Read `<label>: ... Answer: ...` (and an optional `Evidence: ...` line after the answer) from a
    generator's reply (`label`: a question type's). `answer_optional`: a question with no `Answer:`
    line after it is read, its answer empty (a type whose reference answer is not the drafted one)."""
    labelled = _question_label(label)
    # (An echoed evidence line holds the template's `(`: a reply without one has none to drop.)
    without_echo = _ECHOED_EVIDENCE_LINE.sub("", reply) if "(" in reply else reply
    for block in verdict_blocks(without_echo):
        question_label = (
            labelled.search(block)
            or _UNLABELLED_QUESTION.match(block)
            or (_LONE_QUESTION.match(block) if answer_optional else None)
        )
        if question_label is None:
            continue
        labelled_here = question_label.re is labelled
        rest = block[question_label.end() :] if labelled_here else block
        answer_label = _ANSWER_LABEL.search(rest)
        if answer_label is None and not answer_optional:
            return ParsedQA(None, None, FailureKind.NO_ANSWER)
        question = (rest if answer_label is None else rest[: answer_label.start()]).strip()
        answer = "" if answer_label is None else rest[answer_label.end() :]
        # A model that drafts several pairs in one block: keep the first pair only.
        next_question = labelled.search(answer) if _question_words(label).search(answer) else None
        if next_question is not None:
            answer = answer[: next_question.start()]
        evidence: str | None = None
        evidence_label = _EVIDENCE_LABEL.search(answer)
        if evidence_label is not None:
            evidence = answer[evidence_label.end() :].strip().strip("*").strip().strip(_QUOTES).strip() or None
            answer = answer[: evidence_label.start()]
        answer = answer.strip()
        if not question:
            return ParsedQA(None, None, FailureKind.EMPTY_QUESTION)
        if not answer and not answer_optional:
            return ParsedQA(None, None, FailureKind.EMPTY_ANSWER)
        return ParsedQA(question, answer, "", evidence)
    return ParsedQA(None, None, no_verdict(reply))


ECHOED_EXAMPLE_SHARE = 0.6
"""A question that holds this share of the content words of one of its prompt's example questions
copies the example (Qwen2.5-1.5B asked the unanswerable prompt's own example about `acme deploy`, and
the same with difflib put in, in 2 of 16 unanswerable drafts of Python's documentation)."""


def prompt_examples(prompt_text: str, label: str) -> tuple[str, ...]:
    """The example questions a draft prompt shows after the type's label (its template's own
    `(your ...)` line aside)."""
    found = []
    for match in _question_label(label).finditer(prompt_text):
        line = prompt_text[match.end() :].split("\n", 1)[0].strip()
        if line and not line.startswith("("):
            found.append(line)
    return tuple(found)


def echoes_example(question: str, examples: tuple[str, ...]) -> bool:
    """The drafted question copies one of the prompt's example questions (`ECHOED_EXAMPLE_SHARE`)."""
    if not examples:
        return False
    asked = set(content_words(question))
    for example in examples:
        words = set(content_words(example))
        if words and len(words & asked) / len(words) >= ECHOED_EXAMPLE_SHARE:
            return True
    return False


NOT_ANSWERED_MARKER = "NOT IN PASSAGE"
"""What the reader prompts ask the model to write when the passages do not answer the question."""

# The reader's reply: an optional `Answer:` label, then its answer up to the first blank line (a
# small model adds an explanation after it, which is not its answer). The marker, or a sentence that
# opens by saying the passage does not answer, is a "not answered".
_READER_LABEL = re.compile(r"\A[\s*_]*(?:answer[ \t]*\**[ \t]*:)?[\s*_]*", re.IGNORECASE)
_NOT_ANSWERED = re.compile(
    rf"\A\W*(?:{re.escape(NOT_ANSWERED_MARKER)}|(?:the\s+)?(?:passages?|context|text)s?\s+(?:does|do)\s+not\s+"
    r"(?:answer|say|mention|provide|contain|specify|state))",
    re.IGNORECASE,
)


class ParsedReaderAnswer(NamedTuple):
    """A reader's answer (None when it says the passages do not answer), or why the reply is unreadable."""

    answer: str | None
    reason: Reason


def parse_reader_answer(reply: str) -> ParsedReaderAnswer:
    """Read a reader check's reply: its answer, or that the passages do not answer the question."""
    text = _READER_LABEL.sub("", reply, count=1)
    answer = text.split("\n\n", 1)[0].strip().strip("*").strip()
    if _NOT_ANSWERED.match(answer):
        return ParsedReaderAnswer(None, "")
    if not answer:
        return ParsedReaderAnswer(None, no_verdict(reply))
    return ParsedReaderAnswer(answer, "")


# --- several pairs in one reply (`BuildConfig.per_chunk`) ------------------------------------------
# A reply asked for several question/answer pairs numbers them as the prompt shows (`1.` on a line of its
# own, then the labelled pair), or in the ways models vary it: the number before the label on the same
# line (`1. Factoid question: ...`), in markdown (`**1.**`, `### Pair 1`), named (`Pair 2:`), or after the
# label (`Factoid question 2: ... Answer 2: ...`), or no number at all (each pair opened by its label).
# A pair opens at a line that is such a number alone, at a line that opens with a question label (a
# number before it or in it allowed; a label right after a number line opens no second pair), or at a
# numbered line that ends with a question mark (an unlabelled pair). A number needs a word before it
# (`Pair`) or a `.`, `)` or `:` after it, so a line of an answer that opens with a figure ("12 bytes") or
# a decimal ("1.5 s") opens no pair; nor does a numbered line of an answer's own list, which asks nothing.
_PAIR_NUMBER = re.compile(
    r"[ \t]*(?:\#{1,6}[ \t]*)?[*_]{0,3}[ \t]*"
    r"(?:(?:pair|q&a|qa)[ \t]*\#?\d{1,2}(?:[ \t]*[*_]{0,3}[ \t]*[.):])?|\#?\d{1,2}[ \t]*[*_]{0,3}[ \t]*[.):](?!\d))"
    r"[ \t]*[*_]{0,3}[ \t]*",
    re.IGNORECASE,
)
# A question label at the start of a line's text: a type's (`Factoid question`), or any `Question` after at
# most two words (as `_question_label` reads one), with its number when it has one.
_PAIR_LABEL = re.compile(
    r"[*_]{0,3}[ \t]*(?:[\w-]+[ \t]+){0,2}question(?:[ \t]+\#?\d{1,2})?[ \t]*[*_]{0,3}[ \t]*:", re.IGNORECASE
)
# A label with the pair's number in it (`Factoid question 2:`, `Answer 2:`, `Evidence 2:`): read without the
# number, as the one-pair protocol writes it. Line-initial, or an answer's label right after the question mark.
_NUMBERED_LABEL = re.compile(
    r"(?P<label>(?:^[ \t]*|(?<=\?)[ \t]+)[*_]{0,3}[ \t]*(?:(?:[\w-]+[ \t]+){0,2}question|answer|evidence))"
    r"[ \t]+\#?\d{1,2}(?=[ \t]*[*_]{0,3}[ \t]*:)",
    re.IGNORECASE | re.MULTILINE,
)


class ParsedPair(NamedTuple):
    """One pair of a reply asked for several: what was read from it, and the part of the reply it was read from."""

    qa: ParsedQA
    text: str
    """The reply's text from the pair's opening to the next pair's, verbatim."""


class ParsedPairs(NamedTuple):
    """The pairs read from a reply asked for several, in the reply's order (at most as many as asked),
    or `reason` why it holds none."""

    pairs: tuple[ParsedPair, ...]
    reason: Reason
    """Why the reply holds no pair at all (a refusal, an empty reply, prose); "" when it holds one."""
    beyond: int = 0
    """Pairs written after the ones asked for (a runaway continuation), not read; the raw reply keeps them."""


def _opening(line: str) -> str | None:
    """`number` for a line that is a pair's number alone, `pair` for one that opens a pair's question
    (see `_PAIR_NUMBER`), None for any other line."""
    number = _PAIR_NUMBER.match(line)
    rest = line[number.end() :] if number else line
    if number is not None and not rest.strip(" \t*_:"):
        return "number"
    if _PAIR_LABEL.match(rest) or (number is not None and rest.rstrip(" \t*_").endswith("?")):
        return "pair"
    return None


def _pair_openings(text: str) -> list[int]:
    """Where each pair of the reply opens (offsets of line starts), in order."""
    openings: list[int] = []
    after_number = False  # only blank lines since a number line: the label under it opens no second pair
    offset = 0
    for line in text.splitlines(keepends=True):
        kind = _opening(line.rstrip("\r\n"))
        if kind == "number" or (kind == "pair" and not after_number):
            openings.append(offset)
        if kind is not None or line.strip():
            after_number = kind == "number"
        offset += len(line)
    return openings


def parse_pairs(reply: str, label: str, asked: int, *, answer_optional: bool = False) -> ParsedPairs:
    """Read the pairs of a reply asked for `asked` question/answer pairs: each pair (`_PAIR_NUMBER` says
    where one opens) read by the one-pair parser (`parse_labelled_qa`, its number taken out of its labels).
    A part that is the prompt's template echoed back is no pair. A reply in which no pair opens is read as
    one pair (a reply of one unlabelled pair), else as none, with its reason."""
    openings = _pair_openings(reply)
    pairs: list[ParsedPair] = []
    for start, end in zip(openings, [*openings[1:], len(reply)], strict=False):
        text = reply[start:end]
        number = _PAIR_NUMBER.match(text)
        body = _NUMBERED_LABEL.sub(r"\g<label>", text[number.end() :] if number else text)
        qa = parse_labelled_qa(body, label, answer_optional=answer_optional)
        if qa.reason and _TEMPLATE_ECHO.search(body):
            continue
        pairs.append(ParsedPair(qa, text))
    if not pairs:
        whole = parse_labelled_qa(reply, label, answer_optional=answer_optional)
        if whole.reason:
            return ParsedPairs((), whole.reason)
        pairs.append(ParsedPair(whole, reply))
    return ParsedPairs(tuple(pairs[:asked]), "", max(0, len(pairs) - asked))
