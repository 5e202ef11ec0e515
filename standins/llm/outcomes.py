"""What the stand-in LLM decides: ratings, judge scores, drafted questions, hash-chosen shares.

Everything here is a pure function of its arguments, so the same prompt always gets the same
decision, in any process, on any machine (only `hashlib`, never Python's salted `hash()`). Tests can
therefore compute the expected outcome (`score_for`, `judge_score`, `factoid_for`) without looking
at the server; `standins.llm.replies` writes these decisions into replies.
"""

from __future__ import annotations

import base64
import hashlib
import re

DEFAULT_PASS_RATE = 0.8

DUPLICATE_QUESTION = "Which port does the qagen stand-in service listen on by default?"
"""The question sent for the `duplicate_rate` share of contexts (so de-duplication is exercised)."""

# Words that never make a question's topic: function words, and the words the standalone critic
# punishes ("the passage", "the context", ...), which a generated question must not contain.
_STOPWORDS = frozenset(
    word
    for line in (
        "the and for are was were with that this these those from into onto over under than then",
        "there their they them you your our its has have had not but can could would should may",
        "might will shall does did done been being also such very more most some any each other",
        "which what when where who whom whose why how all both only own same just about above",
        "below after before again further once here out off per via use used using one two three",
        "passage passages context contexts document documents text texts mentioned according",
    )
    for word in line.split()
)
_WORD = re.compile(r"[^\W\d_]{3,}")
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")


def unit_interval(*parts: str) -> float:
    """A deterministic number in [0, 1) from `parts` (sha256, identical in every process)."""
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def score_for(criterion: str, question: str, pass_rate: float = DEFAULT_PASS_RATE) -> int:
    """The rating (1-5) the stand-in critic gives `question` on `criterion`.

    From sha256 of ``criterion + "\\n" + question.strip()``: with probability `pass_rate` (over
    questions) the rating is 4 or 5, otherwise 1, 2 or 3. Two independent parts of the digest
    decide pass/fail and the value, so raising `pass_rate` only ever turns failures into passes.
    """
    digest = hashlib.sha256(f"{criterion}\n{question.strip()}".encode()).digest()
    passes = int.from_bytes(digest[:8], "big") / 2.0**64 < pass_rate
    pick = int.from_bytes(digest[8:12], "big")
    return 4 + pick % 2 if passes else 1 + pick % 3


def judge_score(question: str, response: str) -> int:
    """The score (1-5) the stand-in judge gives `response` to `question`: sha256, uniform."""
    digest = hashlib.sha256(f"judge\n{question.strip()}\n{response.strip()}".encode()).digest()
    return 1 + int.from_bytes(digest[:4], "big") % 5


def first_sentence(text: str, limit: int = 200) -> str:
    """The first sentence of the first non-empty line, at most `limit` chars (cut at a word).

    The result is always a verbatim substring of `text`, so an answer is a true span of its chunk.
    """
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    end = _SENTENCE_END.search(line)
    sentence = line[: end.end()] if end else line
    if len(sentence) > limit:
        cut = sentence.rfind(" ", 0, limit + 1)
        sentence = sentence[: cut if cut > 0 else limit].rstrip()
    return sentence


def nth_sentence(text: str, number: int, limit: int = 200) -> str:
    """The `number`-th sentence (1: `first_sentence`) of the text's non-empty lines, each cut as
    `first_sentence` cuts it, counting again from the first when the text has fewer; a verbatim
    substring of `text`, so an answer is a true span of its chunk."""
    found: list[str] = []
    for line in text.splitlines():
        rest = line.strip()
        while rest:
            end = _SENTENCE_END.search(rest)
            sentence = rest[: end.end()] if end else rest
            rest = rest[len(sentence) :].strip()
            found.append(first_sentence(sentence, limit))
    return found[(number - 1) % len(found)] if found else ""


def pair_for(label: str, context: str, number: int) -> tuple[str, str]:
    """The (question, answer) of the `number`-th pair (from 2: the first is `draft_for`'s) the stand-in
    drafts for a prompt that asks for several from one passage: about its `number`-th sentence
    (`nth_sentence`), asked in the label's way (a factoid names the sentence's topic, any other type
    uses words of its own), with a digest of the context and the number, so each pair's question is its own."""
    digest = hashlib.sha256(f"{context}\x00pair {number}".encode()).hexdigest()
    answer = nth_sentence(context, number) or "Nothing is stated."
    if label == FACTOID_LABEL:
        return f"Which fact about {_topic(answer, 3)} is recorded under ref {digest[:10]}?", answer
    return f"How would someone look up the item filed as ref {digest[:10]}?", answer


def factoid_for(context: str, duplicate_rate: float = 0.0) -> tuple[str, str]:
    """The (question, answer) the stand-in generator drafts for `context`.

    The question names up to three content words of the context and a 10-hex-digit digest of it,
    so distinct contexts get distinct questions; the `duplicate_rate` share of contexts (by hash)
    get `DUPLICATE_QUESTION` instead. The answer is `first_sentence(context)`.
    """
    digest = hashlib.sha256(context.encode("utf-8")).hexdigest()
    answer = first_sentence(context) or "Nothing is stated."
    if unit_interval("duplicate", digest) < duplicate_rate:
        return DUPLICATE_QUESTION, answer
    return f"Which fact about {_topic(context, 3)} is recorded under ref {digest[:10]}?", answer


def _topic(context: str, count: int) -> str:
    """The first `count` distinct content words of `context`, or `this subject` when it has none."""
    words: list[str] = []
    for match in _WORD.finditer(context):
        word = match.group(0).lower()
        if word not in _STOPWORDS and word not in words:
            words.append(word)
            if len(words) == count:
                break
    return " ".join(words) if words else "this subject"


FACTOID_LABEL = "Factoid question"
COPIED_SHARE = 0.3
"""The share of drafts of a type the stand-in has no rule for that copy the passage's words
(the others are in words of its own): a check of the wording then has both to tell apart."""


UNANSWERABLE_MARK = "quantum teleport sync"
"""The feature no text has, which every unanswerable question the stand-in drafts asks about."""


MULTI_HOP_MARK = "as cross-referenced under ref"
"""In every multi-hop question the stand-in drafts."""


def single_hop(question: str, rate: float) -> bool:
    """The `rate` share of multi-hop questions (by question) the stand-in answers from their first passage
    alone: what a reader given that passage alone answers too."""
    return unit_interval("single-hop", question) < rate


SINGLE_HOP_MARK = "in one place as "
"""In a composed multi-hop question that one passage alone answers (`composed_for`), before its parts'
answers, encoded (URL-safe base64: no word of them in the question)."""


def composed_for(parts: tuple[tuple[str, str], ...], single_hop_rate: float = 0.0) -> tuple[str, str]:
    """The (question, answer) the stand-in composes from its parts' (question, answer)s (qagen's multi-hop
    drafts): a question naming the topic of each part's answer and the digest of them all, answered by
    the parts' answers in order. For the `single_hop_rate` share of questions either passage alone gives
    every part's answer (`lone_reader_answer`): the question carries them, encoded, after `SINGLE_HOP_MARK`."""
    digest = hashlib.sha256("\x00".join(f"{q}\x00{a}" for q, a in parts).encode("utf-8")).hexdigest()
    topics = " and ".join(_topic(answer, 2) for _, answer in parts)
    question = f"Which fact links {topics}, {MULTI_HOP_MARK} {digest[:10]}?"
    answers = " ".join(answer for _, answer in parts)
    if single_hop(question, single_hop_rate):
        encoded = base64.urlsafe_b64encode(answers.encode("utf-8")).decode("ascii")
        question = f"{question[:-1]}, {SINGLE_HOP_MARK}{encoded}?"
    return question, answers


def lone_reader_answer(question: str) -> str | None:
    """What a reader given one passage of a composed multi-hop question answers when that passage alone
    answers it (`composed_for`): every part's answer; None for the others."""
    marked = re.search(rf"{re.escape(SINGLE_HOP_MARK)}(?P<encoded>[A-Za-z0-9_=-]+)\?\Z", question)
    if marked is None:
        return None
    return base64.urlsafe_b64decode(marked.group("encoded")).decode("utf-8")


def draft_for(
    label: str, passages: tuple[str, ...], duplicate_rate: float = 0.0, single_hop_rate: float = 0.0
) -> tuple[str, str]:
    """The (question, answer) the stand-in drafts for a draft prompt with this question label.

    - `Factoid question`: `factoid_for` (as before question types).
    - several passages (a multi-hop draft): a question naming the topic of each and the digest of
      both, answered by the first sentence of each passage (of the first alone for the
      `single_hop_rate` share of questions).
    - `Unanswerable question`: a question on the passage's topic about a feature no text has, and
      an answer saying the documents do not say.
    - any other label (a type the stand-in has no rule for): a question in words of its own (none
      of the passage's content words: a user's wording) or, for the `COPIED_SHARE` of passages by
      hash, one that copies the passage's first ten words as written (a reworded question's
      `too_close`); answered by its first sentence.
    """
    if label == FACTOID_LABEL:
        return factoid_for(passages[0], duplicate_rate)
    digest = hashlib.sha256("\x00".join(passages).encode("utf-8")).hexdigest()
    if len(passages) > 1:
        topics = " and ".join(_topic(passage, 2) for passage in passages)
        question = f"Which fact links {topics}, {MULTI_HOP_MARK} {digest[:10]}?"
        used = passages[:1] if single_hop(question, single_hop_rate) else passages
        return question, " ".join(first_sentence(passage, 140) for passage in used)
    if label.lower().startswith("unanswerable"):
        question = f"Which release of {_topic(passages[0], 2)} added {UNANSWERABLE_MARK}, ref {digest[:10]}?"
        return question, "The documents do not say."
    answer = first_sentence(passages[0]) or "Nothing is stated."
    if unit_interval("copied", digest) < COPIED_SHARE:
        opening = " ".join(passages[0].split()[:10])
        return f"What does the text say about {opening}?", answer
    return f"How would someone look up the item filed as ref {digest[:10]}?", answer
