"""What the stand-in LLM says: the reply to a recognised prompt, well-formed or malformed on purpose.

The prompt is recognised by `standins.llm.prompt_recognition`, and what the reply decides (ratings,
scores, drafted questions) comes from `standins.llm.outcomes`, so the same request always gets
the same reply, in any process, on any machine. Replies by prompt kind:

- ``judge``: ``Feedback: ... [RESULT] N`` with ``N = judge_score(instruction, response)``.
- ``critique``: ``Evaluation: ...`` then ``Total rating: N`` with ``N = score_for(criterion, question)``.
- ``generation``: ``<Label>: {q}`` then ``Answer: {a}`` (`draft_for`, the label a question type's;
  `factoid_for` for ``Factoid question``; `composed_for` for a composing prompt's parts), then
  ``Evidence: {sentence}`` when the prompt asks for it: the answer's sentence, copied; a prompt that
  asks for several numbered pairs gets that pair first, then one about each next sentence
  (`pair_for`), numbered in one of `PAIRS_FORMATS`, at most `max_pairs` of them; for the
  `evidence_miss_rate` share of contexts a sentence the chunk does not hold (`MISSING_EVIDENCE`),
  and for the `rule_break_rate` share a factoid that breaks one of the prompt's rules
  (`RULE_BREAKS`). With `recorded_drafts`, a context found there gets its recorded reply instead.
- the evaluator's RAGAS-style and grader prompts: answered by `standins.llm.eval_replies`.
- ``rerank``: the passages' identifiers by word overlap with the question (`standins.llm.rerank`).
- ``answer``: a short plain answer.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from standins.llm import truth
from standins.llm.eval_replies import EVAL_KINDS, eval_reply, truncate
from standins.llm.outcomes import (
    DEFAULT_PASS_RATE,
    FACTOID_LABEL,
    MULTI_HOP_MARK,
    UNANSWERABLE_MARK,
    composed_for,
    draft_for,
    factoid_for,
    first_sentence,
    judge_score,
    lone_reader_answer,
    pair_for,
    score_for,
    unit_interval,
)
from standins.llm.prompt_recognition import PromptInfo, PromptKind, classify_prompt
from standins.llm.rerank import listwise_reply

ScorePolicy = Callable[[str, str], int]
"""`(criterion, question) -> rating`; any int may be returned (0 or 7 test range checks)."""
JudgePolicy = Callable[[str, str], int]
"""`(instruction, response) -> score`."""

REFUSAL = "I'm sorry, but I can't help with that."
MISSING_EVIDENCE = "The stand-in wrote this sentence itself, and no chunk of the corpus holds it."
"""The evidence quoted for the `evidence_miss_rate` share of contexts."""
MISSING_ANSWER = "Zorblax quintessa frumious vorpal."
"""Their answer: words no chunk holds (a quote the chunk does not hold is forgiven when the answer is there)."""
RULE_BREAKS: tuple[str, ...] = ("source_pointing", "answer_in_question", "ungrounded_answer")
"""The rules a `rule_break_rate` draft breaks (one each, chosen by hash): its question points at
its source, its answer is written in its question, or its answer says the context lacks it."""
UNGROUNDED_ANSWER = "The context does not mention it; based on general knowledge, it is the default."
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
# How a reply of several pairs numbers them: as qagen's prompt shows it ("canonical": the number on a line
# of its own), and the ways models vary it.
PAIRS_FORMATS: tuple[str, ...] = ("canonical", "inline_number", "bold", "pair_heading", "numbered_labels")
JUDGE_FORMATS: tuple[str, ...] = ("canonical", "newline", "slash_five")

# Malformed replies that make sense for each prompt kind (a rating of 0 or 7 needs a rating).
MALFORMED_KINDS: dict[PromptKind, tuple[str, ...]] = {
    "critique": ("empty", "refusal", "truncated", "out_of_range", "no_rating"),
    "judge": ("empty", "refusal", "truncated", "out_of_range", "no_rating"),
    "generation": ("empty", "refusal", "truncated", "no_structure"),
    "answer": ("empty", "refusal"),
    "check": ("empty", "refusal"),
    "reader": ("empty", "refusal"),
    "rerank": ("empty", "refusal"),
    **dict.fromkeys(EVAL_KINDS, ("empty", "refusal", "truncated")),
    "judge_answer_correct": ("empty", "refusal"),  # one word: nothing to cut short
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


def _choose(options: tuple[str, ...], *parts: str) -> str:
    return options[int(unit_interval(*parts) * len(options))]


@dataclass(frozen=True)
class ReplyPolicy:
    """The knobs that shape replies (all fractions are shares of requests, chosen by hash)."""

    pass_rate: float | Mapping[str, float] = DEFAULT_PASS_RATE
    format_variety: float = 0.0
    generation_format_variety: float = 0.0
    duplicate_rate: float = 0.0
    malformed_rate: float = 0.0
    evidence_miss_rate: float = 0.0
    rule_break_rate: float = 0.0
    recorded_drafts: Mapping[str, str] | None = None
    """Recorded generation replies by context (whitespace runs as single spaces): replayed as they are."""
    score_policy: ScorePolicy | None = None
    judge_policy: JudgePolicy | None = None
    logprobs: bool = False
    """Send token log probabilities when a request asks for them (`standins.llm.logprobs`); False: a server
    that never sends them (most do not unless asked; some never do)."""
    doubtful_yes_rate: float = 0.0
    """Share of the yes/no checks written "Yes" (by request) whose token probabilities hold only 0.55 of
    yes (`standins.llm.logprobs`): read from them, the verdict is a no."""
    doubtful_no_rate: float = 0.0
    """Share of the yes/no checks written "No" (by request) whose token probabilities hold 0.9 of yes: read
    from them, the verdict is a yes."""
    impossible_logprobs: str | None = None
    """Send the yes/no checks' alternatives with impossible log probabilities (`nan` or `positive`:
    `standins.llm.logprobs.IMPOSSIBLE_LOGPROBS`), as a misconfigured server does."""
    refuse_logprobs: bool = False
    """Answer 400 to a request that asks for token log probabilities (as OpenAI's reasoning models do)."""
    good_rate: float | None = None
    """A hidden truth (`standins.llm.truth`): this share of the drafted questions is good, and the `supported`
    check's P(yes) much higher for them (sent as its token probabilities; written Yes from 0.5). None: none."""
    truth_bad_high: float = truth.BAD_HIGH
    """With `good_rate`: the highest P(yes) of the questions that are not good (higher: a weaker score)."""
    reader_mismatch_rate: float = 0.0
    """Share of reader checks (by question) answered with something else than the drafted answer."""
    reader_unanswered_rate: float = 0.0
    """Share of reader checks (by question) that say the passage does not answer the question."""
    answerable_rate: float = 0.0
    """Share of unanswerable questions (by question) that the corpus search answers, as the reader says."""
    single_hop_rate: float = 0.0
    """Share of multi-hop questions (by question) drafted from their first passage alone, which a reader
    given that passage alone answers (the others it does not)."""
    max_pairs: int | None = None
    """A draft prompt that asks for several numbered pairs (qagen's `per_chunk`) is answered with at most
    this many (fewer than asked: a reply that stops short); None: as many as it asks."""

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
    question: str | None = None  # critique: the question rated
    p_yes: float | None = None  # a yes/no check's P(yes) from the hidden truth (`standins.llm.truth`)


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


def _generation_reply(
    question: str, answer: str, fmt: str, evidence: str | None = None, label: str = FACTOID_LABEL
) -> str:
    quoted = f"\nEvidence: {evidence}" if evidence is not None else ""
    if fmt == "bold":
        return f"**{label}:** {question}\n**Answer:** {answer}" + quoted.replace("Evidence:", "**Evidence:**")
    if fmt == "echo_marker":
        return f"Output:::\n{label}: {question}\nAnswer: {answer}{quoted}"
    if fmt == "blank_line":
        return f"{label}: {question}\n\nAnswer: {answer}{quoted}"
    return f"{label}: {question}\nAnswer: {answer}{quoted}"


def pairs_reply(pairs: list[tuple[str, str, str | None]], label: str, fmt: str) -> str:
    """A reply of several numbered (question, answer, evidence) pairs in format `fmt` (`PAIRS_FORMATS`)."""
    written: list[str] = []
    for number, (question, answer, evidence) in enumerate(pairs, 1):
        quoted = f"\nEvidence: {evidence}" if evidence is not None else ""
        if fmt == "inline_number":
            written.append(f"{number}. {label}: {question}\nAnswer: {answer}{quoted}")
        elif fmt == "bold":
            quoted = quoted.replace("Evidence:", "**Evidence:**")
            written.append(f"**{number}.**\n**{label}:** {question}\n**Answer:** {answer}{quoted}")
        elif fmt == "pair_heading":
            written.append(f"Pair {number}:\n{label}: {question}\nAnswer: {answer}{quoted}")
        elif fmt == "numbered_labels":
            quoted = quoted.replace("Evidence:", f"Evidence {number}:")
            written.append(f"{label} {number}: {question}\nAnswer {number}: {answer}{quoted}")
        else:
            written.append(f"{number}.\n{label}: {question}\nAnswer: {answer}{quoted}")
    return "\n\n".join(written)


def _pairs_draft(info: PromptInfo, policy: ReplyPolicy, request_key: str) -> Reply:
    """The generator's reply to a prompt that asks for several pairs: the one-pair reply's question and
    answer first (`_draft`, its knobs included), then one about each next sentence of the passage
    (`pair_for`), at most `max_pairs` of them."""
    first = _draft(dataclasses.replace(info, pairs=1), dataclasses.replace(policy, generation_format_variety=0.0), "")
    label = info.label or FACTOID_LABEL
    read = _ONE_PAIR.match(first.content)
    if read is None:  # a recorded reply, replayed as it is
        return first
    pairs = [(read.group("question"), read.group("answer"), read.group("evidence"))]
    context = info.context or ""
    for number in range(2, info.pairs + 1):
        question, answer = pair_for(label, context, number)
        pairs.append((question, answer, answer if info.asks_evidence else None))
    given = pairs[: info.pairs if policy.max_pairs is None else min(info.pairs, policy.max_pairs)]
    fmt = _variant(PAIRS_FORMATS, policy.generation_format_variety, request_key)
    return Reply(pairs_reply(given, label, fmt), first.kind, "generation", format=fmt)


# The one-pair reply `_generation_reply` writes in its canonical format.
_ONE_PAIR = re.compile(
    r"\A[^:\n]+: (?P<question>[^\n]*)\nAnswer: (?P<answer>[^\n]*)(?:\nEvidence: (?P<evidence>[^\n]*))?\Z"
)


def recorded_key(context: str) -> str:
    """How `ReplyPolicy.recorded_drafts` is keyed: the context with its whitespace runs as single spaces."""
    return " ".join(context.split())


def _draft(info: PromptInfo, policy: ReplyPolicy, request_key: str) -> Reply:
    """The generator's reply (see the module docstring)."""
    if info.parts:
        question, answer = composed_for(info.parts, policy.single_hop_rate)
        fmt = _variant(GENERATION_FORMATS, policy.generation_format_variety, request_key)
        label = info.label or FACTOID_LABEL
        return Reply(_generation_reply(question, answer, fmt, None, label), "generation", "generation", format=fmt)
    context = info.context or ""
    if policy.recorded_drafts is not None:
        recorded = policy.recorded_drafts.get(recorded_key(context))
        if recorded is not None:
            return Reply(recorded, "generation", "generation", format="recorded")
    label = info.label or FACTOID_LABEL
    if label != FACTOID_LABEL:  # another question type's prompt: `draft_for`, no rule broken on purpose
        question, answer = draft_for(label, info.passages or (context,), policy.duplicate_rate, policy.single_hop_rate)
        fmt = _variant(GENERATION_FORMATS, policy.generation_format_variety, request_key)
        quote = answer if info.asks_evidence else None
        return Reply(_generation_reply(question, answer, fmt, quote, label), "generation", "generation", format=fmt)
    question, answer = factoid_for(context, policy.duplicate_rate)
    evidence = answer if info.asks_evidence else None
    digest = recorded_key(context)
    kind = "generation"
    if unit_interval("evidence-miss", digest) < policy.evidence_miss_rate:
        evidence, answer, kind = MISSING_EVIDENCE, MISSING_ANSWER, "generation:evidence_miss"
    elif unit_interval("rule-break", digest) < policy.rule_break_rate:
        rule = _choose(RULE_BREAKS, "rule-kind", digest)
        kind = f"generation:{rule}"
        if rule == "source_pointing":
            question = question.removesuffix("?") + " in the context?"
        elif rule == "answer_in_question":
            question = f"{question.removesuffix('?')} -- is it {answer}?"
        else:
            answer = UNGROUNDED_ANSWER
    fmt = _variant(GENERATION_FORMATS, policy.generation_format_variety, request_key)
    return Reply(_generation_reply(question, answer, fmt, evidence), kind, "generation", format=fmt)


PASSING_SCORE = 4
"""The score at which a yes/no check of the stand-in says yes (qagen's default threshold)."""
NOT_ANSWERED = "NOT IN PASSAGE"
OTHER_ANSWER = "Something else entirely, unrelated to the question."


def reader_answer(info: PromptInfo, policy: ReplyPolicy) -> str:
    """The reader check's answer: what the stand-in drafts from these passages (the factoid's answer and
    each passage's first sentence: every type's drafted answer is among them), or, by the question's
    hash, another answer or none; an unanswerable question (the stand-in's own) is not answered, unless
    the corpus answers it (`answerable_rate`)."""
    question = info.question or ""
    if UNANSWERABLE_MARK in question:
        return (
            "Version 2.1 added it." if unit_interval("answerable", question) < policy.answerable_rate else NOT_ANSWERED
        )
    passages = info.passages or (info.context or "",)
    if MULTI_HOP_MARK in question and len(passages) == 1:
        # One passage of a multi-hop question: it answers only a question one passage answers.
        return lone_reader_answer(question) or NOT_ANSWERED
    if unit_interval("reader-unanswered", question) < policy.reader_unanswered_rate:
        return NOT_ANSWERED
    if unit_interval("reader-mismatch", question) < policy.reader_mismatch_rate:
        return OTHER_ANSWER
    parts = [factoid_for(passages[0])[1], *(first_sentence(passage, 140) for passage in passages)]
    return " ".join(part for part in parts if part)


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
        label, passages = info.label or FACTOID_LABEL, info.passages or (info.context or "",)
        question, answer = composed_for(info.parts) if info.parts else draft_for(label, passages)
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
        question=good.question,
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
        good = Reply(
            rating_reply(criterion, score, fmt), "critique", "critique", criterion, score, fmt, question=info.question
        )
    elif info.kind == "check":
        criterion = info.criterion or "unknown"
        hidden = (
            truth.p_yes(info.question or "", policy.good_rate, policy.truth_bad_high)
            if policy.good_rate is not None and criterion == truth.TRUTH_CHECK
            else None
        )
        yes = policy.score(criterion, info.question or "") >= PASSING_SCORE if hidden is None else hidden >= 0.5
        good = Reply(
            "Yes" if yes else "No", "check", "check", criterion, 5 if yes else 1, "canonical", question=info.question,
            p_yes=hidden,
        )  # fmt: skip
    elif info.kind == "reader":
        good = Reply(
            reader_answer(info, policy), "reader", "reader", info.criterion, None, "canonical", question=info.question
        )
    elif info.kind == "generation":
        good = _pairs_draft(info, policy, request_key) if info.pairs > 1 else _draft(info, policy, request_key)
    elif info.kind == "judge":
        score = policy.judge(info.question or "", info.response or "")
        fmt = _variant(JUDGE_FORMATS, policy.format_variety, request_key)
        good = Reply(_judge_reply(score, fmt), "judge", "judge", score=score, format=fmt)
    elif info.kind == "rerank":
        good = Reply(listwise_reply(text) or "", "rerank", "rerank", format="canonical")
    elif info.evaluation is not None:
        said = eval_reply(info.evaluation)
        good = Reply(said.content, info.kind, info.kind, info.criterion, said.score, "canonical")
    else:
        good = Reply(_rag_answer(text), "answer", "answer", format="plain")
    if unit_interval("malformed", request_key, str(reply_number)) < policy.malformed_rate:
        which = _choose(MALFORMED_KINDS[info.kind], "malformed-kind", request_key, str(reply_number))
        return _malformed(info, good, which, request_key)
    return good
