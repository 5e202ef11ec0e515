"""What the stand-in LLM says to the evaluator's RAGAS-style and LangSmith-style grader prompts.

A sibling of `standins.llm.replies` (which dispatches here): recognise one of the prompt files
`prompts/ragas_*.txt` and `prompts/grader_*.txt` from the text of the user message, read the data
between its tags, and answer in that prompt's protocol. Replies are pure functions of the prompt
text (sha256 only), so a test can check every value the evaluator computes against what the
stand-in said: each reply is logged with a `score` (`EvalReply.score`, documented per kind below).

The stand-in does not read for meaning. Where a verdict is asked for, a hash of the judged texts
decides it at a fixed rate (`SUPPORT_RATE`, ...), so test runs see both verdicts, reproducibly.

Kinds (each named after its prompt file) and the logged `score`:

- ``ragas_faithfulness_statements``: one statement per sentence of the answer (``Statements:
  none`` for a noncommittal answer); score = number of statements.
- ``ragas_faithfulness_verdicts``: ``N. Explanation: ... Verdict: Yes|No`` per statement;
  score = number of Yes (so faithfulness = score / statements).
- ``ragas_answer_relevancy``: ``Questions:`` with the asked count of questions, then
  ``Noncommittal: yes|no``; score = 1 if noncommittal, else 0.
- ``ragas_context_precision``: one ``Explanation: ... Verdict: Yes|No`` (one context per call);
  score = 1 for Yes, 0 for No.
- ``ragas_context_recall``: a verdict per numbered reference sentence; score = number of Yes.
- ``ragas_context_relevance``: context sentences copied verbatim, one per line, or
  ``Insufficient Information``; score = number of distinct sentences copied.
- ``judge_answer_correct`` (qagen's `answer_correct` judge): ``Yes`` when the response holds at least half
  of the reference's words of four letters or more, else ``No`` (so a reference judged against itself is
  correct, another question's reference seldom); score = 1 for Yes, 0 for No.
- ``grader`` (criterion: the registered grader, ``correct``, ``relevant``, ``grounded``,
  ``retrieval_relevant`` or one registered later, told apart by the sections of the user message:
  `grader_layouts`): ``Explanation: ...`` then ``Grade: true|false``; score = 1 for true, 0 for false.
  The abstention judge's verdict is read from the answer (true when it says the documents do not
  hold the answer), the others are drawn by hash.
"""

from __future__ import annotations

import hashlib
import re
from typing import Literal, NamedTuple

from standins.llm.qagen_prompts import judge_prompts

EvalKind = Literal[
    "ragas_faithfulness_statements",
    "ragas_faithfulness_verdicts",
    "ragas_answer_relevancy",
    "ragas_context_precision",
    "ragas_context_recall",
    "ragas_context_relevance",
    "judge_answer_correct",
    "grader",
]
EVAL_KINDS: tuple[EvalKind, ...] = (
    "ragas_faithfulness_statements",
    "ragas_faithfulness_verdicts",
    "ragas_answer_relevancy",
    "ragas_context_precision",
    "ragas_context_recall",
    "ragas_context_relevance",
    "judge_answer_correct",
    "grader",
)

SUPPORT_RATE = 0.7
"""Share of statements (faithfulness) and reference sentences (context recall) judged supported."""
USEFUL_RATE = 0.6
"""Share of contexts judged useful for reaching the reference answer (context precision)."""
EXTRACT_RATE = 0.5
"""Share of context sentences copied out as relevant (context relevance)."""
GRADE_RATE = 0.7
"""Share of grader verdicts that are `true`."""

# Each RAGAS prompt file opens with its own instruction sentence: the kind is the one whose opening
# the prompt starts with (data comes later, so a quoted prompt inside the data cannot match).
_OPENINGS: tuple[tuple[re.Pattern[str], EvalKind], ...] = (
    (re.compile(r"Given a question and an answer, create one or more statements"), "ragas_faithfulness_statements"),
    (re.compile(r"Consider the given context and the following statements"), "ragas_faithfulness_verdicts"),
    (re.compile(r"Generate (?P<count>\d+) different questions for the given answer"), "ragas_answer_relevancy"),
    (re.compile(r"Given a question, a reference answer and a context, verify"), "ragas_context_precision"),
    (re.compile(r"Given a question, a context and the numbered sentences of a reference"), "ragas_context_recall"),
    (re.compile(r"Please extract relevant sentences from the provided context"), "ragas_context_relevance"),
    (re.compile(r"You grade answers to questions about"), "judge_answer_correct"),
)
# The abstention judge's verdict is read from the answer, not drawn by hash: an answer that says the
# documents do not hold it declines; any other commits (the stand-in's own RAG answers never decline).
_DECLINES = re.compile(
    r"\b(?:I don['’]t know|I do not know|there (?:is|are) no|no (?:information|mention)|"
    r"not (?:mentioned|provided|given|stated|specified|available)|"
    r"do(?:es)? not (?:say|mention|answer|contain|provide|specify)|cannot be "
    r"(?:answered|determined|deduced))\b",
    re.I,
)
_GRADER_SECTION = re.compile(r"(?P<label>[A-Z][A-Z ]*[A-Z]):\n<(?P<tag>[a-z_]+)>\n(?P<body>.*?)\n</(?P=tag)>\s*", re.S)
# Untrusted data reaches the prompts neutralised, so a closing data tag inside it is `&lt;/...>`:
# the first line that is exactly the closing tag ends the block.
_NUMBERED = re.compile(r"^\d+\.[ \t]+(?P<text>.*)$", re.M)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")
_HAS_WORD = re.compile(r"\w")
_CONTENT_WORD = re.compile(r"[^\W\d_]{4,}")
_NONCOMMITTAL = re.compile(
    r"\b(?:I don['’]t know|I do not know|not sure|no specific answer|cannot be (?:deduced|answered))\b", re.I
)
# (false, true) explanations per grader: distinct texts, so a reply tells which grader sent it.
_GRADER_EXPLANATIONS: dict[str, tuple[str, str]] = {
    "correct": (
        "The student answer conflicts with the ground truth.",
        "The student answer agrees with the ground truth.",
    ),
    "relevant": ("The student answer does not address the question.", "The student answer addresses the question."),
    "grounded": (
        "The student answer says things the facts do not.",
        "Every claim of the student answer is in the facts.",
    ),
    "retrieval_relevant": ("The facts are unrelated to the question.", "The facts share keywords with the question."),
    "abstention": ("The answer commits to an answer.", "The answer says the documents do not answer it."),
}
_GENERIC_EXPLANATION = ("The grader's condition does not hold.", "The grader's condition holds.")
_QUESTION_TEMPLATES = (
    "What does the text say about {topic}?",
    "Which fact is given about {topic}?",
    "What is stated about {topic}?",
    "What is recorded about {topic}?",
)


class EvalPrompt(NamedTuple):
    """An evaluator prompt as the stand-in understood it: its kind, the grader's name, its data."""

    kind: EvalKind
    criterion: str | None
    blocks: dict[str, str]
    asked: int = 0  # answer relevancy: the number of questions asked for


class EvalReply(NamedTuple):
    content: str
    score: int


def _share(*parts: str) -> float:
    """A deterministic number in [0, 1) from `parts` (sha256: the same in every process)."""
    digest = hashlib.sha256("\x1f".join(("eval", *parts)).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def _block(text: str, tag: str) -> str | None:
    match = re.search(rf"^<{tag}>\n(?P<body>.*?)\n?^</{tag}>$", text, re.M | re.S)
    return match.group("body") if match else None


def _sentences(text: str) -> list[str]:
    """Lines, then `.`/`!`/`?` + space: the sentences a careful judge would copy or check."""
    return [s.strip() for line in text.splitlines() for s in _SENTENCE_END.split(line) if _HAS_WORD.search(s)]


def classify_eval_prompt(text: str) -> EvalPrompt | None:
    """The evaluator prompt `text` is, or None if it is none of them."""
    for opening, kind in _OPENINGS:
        match = opening.match(text)
        if match is None:
            continue
        tags = ("question", "answer", "reference_answer", "context", "statements", "sentences", "response")
        blocks = {tag: body for tag in tags if (body := _block(text, tag)) is not None}
        count = int(match.group("count")) if "count" in opening.groupindex else 0
        return EvalPrompt(kind, None, blocks, count)
    labels: list[str] = []
    blocks = {}
    position = 0
    while (section := _GRADER_SECTION.match(text, position)) is not None:
        labels.append(section.group("label"))
        blocks[section.group("tag")] = section.group("body")
        position = section.end()
    criterion = grader_layouts().get(tuple(labels)) if position == len(text) else None
    return EvalPrompt("grader", criterion, blocks) if criterion else None


def _sections(text: str) -> tuple[str, ...] | None:
    """The labels of a text made of labelled data sections only, in order; None for any other text."""
    labels: list[str] = []
    position = 0
    while (section := _GRADER_SECTION.match(text, position)) is not None:
        labels.append(section.group("label"))
        position = section.end()
    return tuple(labels) if labels and position == len(text) else None


def grader_layouts() -> dict[tuple[str, ...], str]:
    """The graders (and judges of two prompts), by the labels of their user message's data sections:
    the instructions are the system message, which the stand-in does not see, so the labels in order
    tell the graders apart. Read on every call (`qagen_prompts.judge_prompts`), so a grader registered
    while the stand-in runs in the same process is recognised."""
    layouts: dict[tuple[str, ...], str] = {}
    for name, text in judge_prompts():
        if (labels := _sections(text.strip())) is not None:
            layouts.setdefault(labels, name)
    return layouts


def _verdict_lines(items: list[str], context: str, salt: str) -> tuple[str, int]:
    lines = []
    supported = 0
    for number, item in enumerate(items, 1):
        yes = _share(salt, item, context) < SUPPORT_RATE
        supported += yes
        why = "The context states this." if yes else "The context does not state this."
        lines.append(f"{number}. Explanation: {why} Verdict: {'Yes' if yes else 'No'}")
    return "\n".join(lines), supported


def eval_reply(prompt: EvalPrompt) -> EvalReply:
    """The stand-in's reply to an evaluator prompt, in that prompt's protocol."""
    blocks = prompt.blocks
    if prompt.kind == "ragas_faithfulness_statements":
        answer = blocks.get("answer", "")
        statements = [] if _NONCOMMITTAL.search(answer) else _sentences(answer)
        if not statements:
            return EvalReply("Statements: none", 0)
        return EvalReply("Statements:\n" + "\n".join(f"{i}. {s}" for i, s in enumerate(statements, 1)), len(statements))
    if prompt.kind in ("ragas_faithfulness_verdicts", "ragas_context_recall"):
        items = _NUMBERED.findall(blocks.get("statements", blocks.get("sentences", "")))
        content, supported = _verdict_lines(items, blocks.get("context", ""), prompt.kind)
        return EvalReply(content, supported)
    if prompt.kind == "ragas_answer_relevancy":
        answer = blocks.get("answer", "")
        noncommittal = bool(_NONCOMMITTAL.search(answer))
        words = list(dict.fromkeys(word.lower() for word in _CONTENT_WORD.findall(answer)))
        topic = " ".join(words[:3]) or "this subject"
        questions = [
            _QUESTION_TEMPLATES[i % len(_QUESTION_TEMPLATES)].format(topic=topic) for i in range(max(1, prompt.asked))
        ]
        listed = "\n".join(f"{i}. {q}" for i, q in enumerate(questions, 1))
        return EvalReply(f"Questions:\n{listed}\nNoncommittal: {'yes' if noncommittal else 'no'}", int(noncommittal))
    if prompt.kind == "ragas_context_precision":
        useful = _share("useful", blocks.get("question", ""), blocks.get("context", "")) < USEFUL_RATE
        why = "The context holds what the reference answer says." if useful else "The context is about something else."
        return EvalReply(f"Explanation: {why}\nVerdict: {'Yes' if useful else 'No'}", int(useful))
    if prompt.kind == "judge_answer_correct":
        reference = {word.lower() for word in _CONTENT_WORD.findall(blocks.get("reference_answer", ""))}
        said = {word.lower() for word in _CONTENT_WORD.findall(blocks.get("response", ""))}
        correct = bool(reference) and 2 * len(reference & said) >= len(reference)
        return EvalReply("Yes" if correct else "No", int(correct))
    if prompt.kind == "ragas_context_relevance":
        question = blocks.get("question", "")
        sentences = dict.fromkeys(_sentences(blocks.get("context", "")))
        chosen = [s for s in sentences if _share("relevant", question, s) < EXTRACT_RATE]
        if not chosen:
            return EvalReply("Relevant sentences: Insufficient Information", 0)
        return EvalReply("Relevant sentences:\n" + "\n".join(chosen), len(chosen))
    if prompt.criterion == "abstention":
        grade = _DECLINES.search(blocks.get("answer", "")) is not None
    else:
        texts = (f"{tag}={body}" for tag, body in sorted(blocks.items()))
        grade = _share("grade", prompt.criterion or "", *texts) < GRADE_RATE
    why = _GRADER_EXPLANATIONS.get(prompt.criterion or "", _GENERIC_EXPLANATION)[grade]
    return EvalReply(f"Explanation: {why}\nGrade: {'true' if grade else 'false'}", int(grade))


# The label whose value a reply cut short by the token limit lacks (see `truncate`).
_VERDICT_LABELS: dict[EvalKind, str] = {
    "ragas_faithfulness_statements": "Statements:",
    "ragas_faithfulness_verdicts": "Verdict:",
    "ragas_answer_relevancy": "Noncommittal:",
    "ragas_context_precision": "Verdict:",
    "ragas_context_recall": "Verdict:",
    "ragas_context_relevance": "Relevant sentences:",
    "judge_answer_correct": "",
    "grader": "Grade:",
}


def truncate(kind: EvalKind, content: str) -> str:
    """`content` cut off just after its last verdict label, as a reply stopped by the token limit."""
    label = _VERDICT_LABELS[kind]
    cut = content.rfind(label)
    return content[: cut + len(label)] if cut >= 0 else content[: len(content) // 2]
