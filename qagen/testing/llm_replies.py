"""What the stand-in LLM says: recognise the prompt from its text, then answer deterministically.

Everything here is a pure function of the prompt text and a few knobs, so the same request always
gets the same reply, in any process, on any machine (only `hashlib`, never Python's salted
`hash()`). Tests can therefore compute the expected outcome (`score_for`, `judge_score`,
`factoid_for`) without looking at the server.

Prompt kinds, decided from the text of the last user message:

- ``judge``: contains ``[RESULT]`` and ``###Response to evaluate:`` (Prometheus-style judge);
  the reply is ``Feedback: ... [RESULT] N`` with ``N = judge_score(instruction, response)``.
- ``critique``: contains ``Total rating:``; the criterion comes from the phrase of the default
  critique prompts (``unknown`` if none matches); the reply is ``Evaluation: ...`` then
  ``Total rating: N`` with ``N = score_for(criterion, question)``.
- ``generation``: contains ``Factoid question:`` and ``Context:``; the reply is
  ``Factoid question: {q}`` then ``Answer: {a}``.
- the evaluator's RAGAS-style and grader prompts (``ragas_*``, ``grader``), recognised by how their
  prompt files begin; answered by `qagen.testing.eval_replies`, which documents each protocol.
- ``answer``: anything else (e.g. a RAG reader prompt); a short plain answer.

When several markers occur (a chunk may quote a prompt template), the earliest one wins, since
every template states its instructions before the material it embeds (`classify_prompt`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

from qagen.testing.eval_replies import EVAL_KINDS, EvalKind, EvalPrompt, classify_eval_prompt, eval_reply, truncate

PromptKind = Literal["generation", "critique", "judge", "answer"] | EvalKind
ScorePolicy = Callable[[str, str], int]
"""`(criterion, question) -> rating`; any int may be returned (0 or 7 test range checks)."""
JudgePolicy = Callable[[str, str], int]
"""`(instruction, response) -> score`."""

DEFAULT_PASS_RATE = 0.8

# The sentence of each default critique prompt that names its criterion.
CRITERION_PHRASES: dict[str, str] = {
    "groundedness": "how well one can answer the given question unambiguously with the given context",
    "relevance": "how useful this question can be to",
    "standalone": "how context-independent this question is",
}

DUPLICATE_QUESTION = "Which port does the qagen stand-in service listen on by default?"
"""The question sent for the `duplicate_rate` share of contexts (so de-duplication is exercised)."""
REFUSAL = "I'm sorry, but I can't help with that."
FALLBACK_ANSWER = "The stand-in model has no specific answer to that."

# Critique reply formats seen from real models; "canonical" is the prompt's own protocol.
RATING_FORMATS: tuple[str, ...] = (
    "canonical",  # Evaluation: ...\nTotal rating: 4
    "bold",  # **Evaluation:** ...\n\n**Total rating:** 4
    "slash_five",  # Total rating: 4/5
    "decimal",  # Total rating: 4.0
    "next_line",  # Total rating:\n4
    "labelled",  # Total rating: 4 (Good)
    "runaway",  # Mixtral: the verdict, then invented "Feedback:::" blocks with other ratings
)
GENERATION_FORMATS: tuple[str, ...] = ("canonical", "bold", "echo_marker", "blank_line")
JUDGE_FORMATS: tuple[str, ...] = ("canonical", "newline", "slash_five")

# Malformed replies that make sense for each prompt kind (a rating of 0 or 7 needs a rating).
MALFORMED_KINDS: dict[PromptKind, tuple[str, ...]] = {
    "critique": ("empty", "refusal", "truncated", "out_of_range", "no_rating"),
    "judge": ("empty", "refusal", "truncated", "out_of_range", "no_rating"),
    "generation": ("empty", "refusal", "truncated", "no_structure"),
    "answer": ("empty", "refusal"),
    **dict.fromkeys(EVAL_KINDS, ("empty", "refusal", "truncated")),
}

_LABELS = {1: "Very poor", 2: "Poor", 3: "Fair", 4: "Good", 5: "Excellent"}
# No digits in rationales: a rating parser must find the number after "Total rating:", and a
# stray digit in the canonical format would make a lenient parser look right by accident.
_RATIONALES: dict[str, dict[int, str]] = {
    "groundedness": {
        5: "The context states the answer directly and unambiguously.",
        4: "The context contains the answer, with a little room for interpretation.",
        3: "The context only partly supports an answer to the question.",
        2: "The context touches the topic but does not settle the answer.",
        1: "The context does not hold the information needed to answer.",
    },
    "relevance": {
        5: "This question is highly useful to practitioners of the field.",
        4: "This question is useful to most practitioners.",
        3: "This question is of moderate use to practitioners.",
        2: "This question is of little practical use.",
        1: "This question is not useful to practitioners at all.",
    },
    "standalone": {
        5: "The question makes complete sense by itself.",
        4: "The question is clear by itself given access to documentation.",
        3: "The question is somewhat understandable on its own.",
        2: "The question leans on a setting that is not given.",
        1: "The question cannot be understood without further information.",
    },
}
_GENERIC_RATIONALE = {
    5: "Excellent on this criterion.",
    4: "Good on this criterion.",
    3: "Acceptable on this criterion.",
    2: "Weak on this criterion.",
    1: "Poor on this criterion.",
}
_FEEDBACK = {
    5: "The response is completely correct, accurate, and factual.",
    4: "The response is mostly correct, accurate, and factual.",
    3: "The response is somewhat correct, accurate, and factual.",
    2: "The response is mostly incorrect, inaccurate, or not factual.",
    1: "The response is completely incorrect, inaccurate, or not factual.",
}

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


def _choose(options: tuple[str, ...], *parts: str) -> str:
    return options[int(unit_interval(*parts) * len(options))]


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
    words: list[str] = []
    for match in _WORD.finditer(context):
        word = match.group(0).lower()
        if word not in _STOPWORDS and word not in words:
            words.append(word)
            if len(words) == 3:
                break
    topic = " ".join(words) if words else "this subject"
    return f"Which fact about {topic} is recorded under ref {digest[:10]}?", answer


# --------------------------------------------------------------------------- prompt recognition


@dataclass(frozen=True)
class PromptInfo:
    """What the stand-in understood from a prompt."""

    kind: PromptKind
    text: str
    criterion: str | None = None
    question: str | None = None  # critique: the rated question; judge: the instruction
    context: str | None = None  # generation: the chunk
    response: str | None = None  # judge: the response under evaluation
    evaluation: EvalPrompt | None = None  # ragas_* and grader: what `eval_replies` read from the prompt


def _line_labels(label: str, text: str) -> list[re.Match[str]]:
    return list(re.finditer(rf"^[ \t]*{re.escape(label)}[ \t]*", text, re.MULTILINE))


def extract_context(text: str) -> str:
    """The chunk inside a QA-generation prompt.

    Starts after the first line-initial ``Context:`` that follows the template's
    ``Factoid question:`` instructions (so a chunk holding its own ``Context:`` lines is kept
    whole), falling back to the last ``Context:`` line; ends at the final ``Output:::``, or at the
    closing ``</context>`` data tag before it.
    """
    labels = _line_labels("Context:", text)
    if not labels:
        return ""
    instructions = text.find("Factoid question:")
    after = [m for m in labels if m.start() > instructions] if instructions >= 0 else []
    begin = (after[0] if after else labels[-1]).end()
    end = text.rfind("Output:::")
    body = text[begin : end if end >= begin else len(text)].strip()
    return body.removesuffix("</context>").rstrip()


def extract_question(text: str) -> str:
    """The question inside a critique prompt.

    The first line-initial ``Question:`` after the template's ``Total rating:`` instructions
    (so a groundedness context holding FAQ-style ``Question:`` lines cannot be mistaken for it),
    falling back to the last ``Question:`` line; ends at a blank line, ``Context:``,
    ``Answer:::`` or the closing ``</question>`` data tag.
    """
    labels = _line_labels("Question:", text)
    if not labels:
        return ""
    instructions = _line_labels("Total rating:", text)
    after = [m for m in labels if instructions and m.start() > instructions[0].start()]
    rest = text[(after[0] if after else labels[-1]).end() :]
    stop = re.search(r"\n[ \t]*\n|\n[ \t]*Context:|\n[ \t]*Answer:::|\n[ \t]*</question>", rest)
    return rest[: stop.start() if stop else len(rest)].strip()


def _section(text: str, start_label: str, end_label: str) -> str:
    begin = text.find(start_label)
    if begin < 0:
        return ""
    begin += len(start_label)
    end = text.find(end_label, begin)
    if end < 0:
        nxt = text.find("\n###", begin)
        end = nxt if nxt >= 0 else len(text)
    return text[begin:end].strip()


_WRAPPED = re.compile(r"\A<(?P<tag>[a-z_]+)>\n?(?P<body>.*?)\n?</(?P=tag)>\Z", re.DOTALL)


def _unwrap(section: str) -> str:
    """The text inside the judge prompt's data tags (`<question>...</question>`), or the section as is."""
    match = _WRAPPED.match(section.strip())
    return match.group("body").strip() if match else section


def classify_prompt(text: str) -> PromptInfo:
    """Recognise the prompt kind and pull out the parts the reply depends on.

    Embedded material (a chunk, a question, retrieved documents) may quote any prompt, even these
    templates: the cookbook a corpus may hold prints them all. Every template puts its
    instructions first, so the kind is the one whose marker appears earliest, and markers inside
    a RAG prompt's retrieved documents do not count. The evaluator's prompts are told by how they
    begin, which no other template shares.
    """
    evaluation = classify_eval_prompt(text)
    if evaluation is not None:
        return PromptInfo(kind=evaluation.kind, text=text, criterion=evaluation.criterion, evaluation=evaluation)
    documents = [p for p in (text.find("Extracted documents"), text.find("Document 0:::")) if p >= 0]
    limit = min(documents, default=len(text))
    found: dict[PromptKind, int] = {}
    judge = text.find("[RESULT]", 0, limit)
    if judge >= 0 and "###Response to evaluate:" in text[judge:]:
        found["judge"] = judge
    critique = text.find("Total rating:", 0, limit)
    if critique >= 0:
        found["critique"] = critique
    generation = text.find("Factoid question:", 0, limit)
    if generation >= 0 and "Context:" in text[generation:]:
        found["generation"] = generation
    kind: PromptKind = min(found, key=found.__getitem__) if found else "answer"
    if kind == "judge":
        return PromptInfo(
            kind="judge",
            text=text,
            question=_unwrap(_section(text, "###The instruction to evaluate:", "###Response to evaluate:")),
            response=_unwrap(_section(text, "###Response to evaluate:", "###Reference Answer")),
        )
    if kind == "critique":
        phrases = {c: text.find(p) for c, p in CRITERION_PHRASES.items() if p in text}
        criterion = min(phrases, key=phrases.__getitem__) if phrases else "unknown"
        return PromptInfo(kind="critique", text=text, criterion=criterion, question=extract_question(text))
    if kind == "generation":
        return PromptInfo(kind="generation", text=text, context=extract_context(text))
    return PromptInfo(kind="answer", text=text)


# --------------------------------------------------------------------------- replies


@dataclass(frozen=True)
class ReplyPolicy:
    """The knobs that shape replies (all fractions are shares of requests, chosen by hash)."""

    pass_rate: float | Mapping[str, float] = DEFAULT_PASS_RATE
    format_variety: float = 0.0
    generation_format_variety: float = 0.0
    duplicate_rate: float = 0.0
    malformed_rate: float = 0.0
    score_policy: ScorePolicy | None = None
    judge_policy: JudgePolicy | None = None

    def pass_rate_for(self, criterion: str) -> float:
        """The pass rate of one critic (a criterion missing from a mapping gets the default)."""
        if isinstance(self.pass_rate, Mapping):
            return float(self.pass_rate.get(criterion, DEFAULT_PASS_RATE))
        return float(self.pass_rate)

    def score(self, criterion: str, question: str) -> int:
        """The critic's rating: the caller's `score_policy`, else `score_for`."""
        if self.score_policy is not None:
            return int(self.score_policy(criterion, question))
        return score_for(criterion, question, self.pass_rate_for(criterion))

    def judge(self, question: str, response: str) -> int:
        """The judge's score: the caller's `judge_policy`, else `judge_score`."""
        if self.judge_policy is not None:
            return int(self.judge_policy(question, response))
        return judge_score(question, response)


@dataclass(frozen=True)
class Reply:
    """A reply and what it is, for the request log."""

    content: str
    kind: str  # the prompt kind, or "malformed"
    prompt: PromptKind
    criterion: str | None = None
    score: int | None = None
    format: str | None = None
    malformed: str | None = None
    finish_reason: str = "stop"


def rating_reply(criterion: str, score: int, fmt: str) -> str:
    """A critic's reply giving `score` in format `fmt` (one of `RATING_FORMATS`)."""
    why = _RATIONALES.get(criterion, _GENERIC_RATIONALE).get(score, "No further remarks.")
    if fmt == "bold":
        return f"**Evaluation:** {why}\n\n**Total rating:** {score}"
    if fmt == "slash_five":
        return f"Evaluation: {why}\nTotal rating: {score}/5"
    if fmt == "decimal":
        return f"Evaluation: {why}\nTotal rating: {score}.0"
    if fmt == "next_line":
        return f"Evaluation: {why}\nTotal rating:\n{score}"
    if fmt == "labelled":
        return f"Evaluation: {why}\n\nTotal rating: {score} ({_LABELS.get(score, 'Unrated')})"
    if fmt == "runaway":
        other = 1 + score % 5  # always a different, valid rating: only the first block counts
        other_why = _RATIONALES.get(criterion, _GENERIC_RATIONALE)[other]
        return (
            f"Evaluation: {why}\nTotal rating:  {score}\n\n\n"
            f"Feedback:::\nEvaluation:  {other_why}\nTotal rating:  {other}"
        )
    return f"Evaluation: {why}\nTotal rating: {score}"


def _generation_reply(question: str, answer: str, fmt: str) -> str:
    if fmt == "bold":
        return f"**Factoid question:** {question}\n**Answer:** {answer}"
    if fmt == "echo_marker":
        return f"Output:::\nFactoid question: {question}\nAnswer: {answer}"
    if fmt == "blank_line":
        return f"Factoid question: {question}\n\nAnswer: {answer}"
    return f"Factoid question: {question}\nAnswer: {answer}"


def _judge_reply(score: int, fmt: str) -> str:
    feedback = _FEEDBACK.get(score, "The response was assessed against the rubric.")
    if fmt == "newline":
        return f"Feedback: {feedback}\n[RESULT] {score}"
    if fmt == "slash_five":
        return f"Feedback: {feedback} [RESULT] {score}/5"
    return f"Feedback: {feedback} [RESULT] {score}"


def _rag_answer(text: str) -> str:
    marker = text.find("Document 0:::")
    if marker < 0:
        return FALLBACK_ANSWER
    document = text[marker + len("Document 0:::") :]
    following = document.find("Document 1:::")
    return first_sentence(document[: following if following >= 0 else len(document)]) or (FALLBACK_ANSWER)


def _variant(options: tuple[str, ...], share: float, request_key: str) -> str:
    if unit_interval("format", request_key) < share:
        return _choose(options[1:], "format-kind", request_key)
    return options[0]


def _malformed(info: PromptInfo, good: Reply, which: str, request_key: str) -> Reply:
    """A broken variant of `good`: what a real model sometimes sends instead of the protocol."""
    content = ""
    finish_reason = "stop"
    score: int | None = None
    if which == "refusal":
        content = REFUSAL
    elif which == "truncated":
        # Cut off by the token limit just before the verdict: the label is there, the value is not.
        finish_reason = "length"
        if info.kind == "critique":
            content = good.content.split("Total rating:")[0] + "Total rating:"
        elif info.evaluation is not None:
            content = truncate(info.evaluation.kind, good.content)
        elif info.kind == "judge":
            content = good.content.split("[RESULT]")[0].rstrip()
        else:
            content = good.content.split("Answer:")[0].rstrip()
    elif which == "out_of_range":
        score = 0 if unit_interval("out-of-range", request_key) < 0.5 else 7
        if info.kind == "critique":
            content = rating_reply(good.criterion or "unknown", score, "canonical")
        else:
            content = f"Feedback: {_FEEDBACK[3]} [RESULT] {score}"
    elif which == "no_rating":
        head = good.content.split("Total rating:")[0].split("[RESULT]")[0].strip()
        content = f"{head} Overall, I would call it reasonably good."
    elif which == "no_structure":
        question, answer = factoid_for(info.context or "")
        content = f"A good question here would be: {question} The answer is: {answer}"
    return Reply(
        content=content,
        kind="malformed",
        prompt=info.kind,
        criterion=info.criterion,
        score=score,
        format=None,
        malformed=which,
        finish_reason=finish_reason,
    )


def make_reply(text: str, *, request_key: str, reply_number: int = 1, policy: ReplyPolicy | None = None) -> Reply:
    """The reply to prompt `text`.

    `request_key` (the sha256 of the request body) chooses the format variant; `reply_number` (the
    n-th answered attempt of that body) joins it in choosing malformed replies, so re-asking the
    same prompt can get a well-formed reply, as with a real model sampling at temperature > 0.
    """
    policy = policy or ReplyPolicy()
    info = classify_prompt(text)
    if info.kind == "critique":
        criterion = info.criterion or "unknown"
        score = policy.score(criterion, info.question or "")
        fmt = _variant(RATING_FORMATS, policy.format_variety, request_key)
        good = Reply(rating_reply(criterion, score, fmt), "critique", "critique", criterion, score, fmt)
    elif info.kind == "generation":
        question, answer = factoid_for(info.context or "", policy.duplicate_rate)
        fmt = _variant(GENERATION_FORMATS, policy.generation_format_variety, request_key)
        good = Reply(_generation_reply(question, answer, fmt), "generation", "generation", format=fmt)
    elif info.kind == "judge":
        score = policy.judge(info.question or "", info.response or "")
        fmt = _variant(JUDGE_FORMATS, policy.format_variety, request_key)
        good = Reply(_judge_reply(score, fmt), "judge", "judge", score=score, format=fmt)
    elif info.evaluation is not None:
        said = eval_reply(info.evaluation)
        good = Reply(said.content, info.kind, info.kind, info.criterion, said.score, "canonical")
    else:
        good = Reply(_rag_answer(text), "answer", "answer", format="plain")
    if unit_interval("malformed", request_key, str(reply_number)) < policy.malformed_rate:
        which = _choose(MALFORMED_KINDS[info.kind], "malformed-kind", request_key, str(reply_number))
        return _malformed(info, good, which, request_key)
    return good
