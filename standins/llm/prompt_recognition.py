"""Which of qagen's prompts the stand-in LLM was sent, and the parts of it its reply depends on.

Prompt kinds, decided from the text of the last user message:

- ``judge``: contains ``[RESULT]`` and ``###Response to evaluate:`` (Prometheus-style judge);
  the instruction and the response under evaluation are read from their sections.
- ``critique``: contains ``Total rating:``; the criterion is the registered critic
  (`qagen.critics.CRITICS`, and the critics question types ask with prompts of their own,
  `qagen.question_types`) whose prompt's own instruction line it holds (`critic_phrases`;
  ``unknown`` if none matches), and the rated question is read from it.
- ``generation``: a draft prompt: its answer template has a line ``<Label> question: (your ...``
  (``Factoid question``, ``Multi-hop question``: any question type's) and it embeds ``Context:``;
  the label and the passages (the chunk, or each ``Passage N:``) are read from it, and how many
  numbered pairs it asks for (``numbering the pairs from 1 to N``: qagen's ``per_chunk``; else one). A composing
  prompt (qagen's multi-hop drafts: `qagen.generation.compose`) embeds, instead of passages, the
  parts' questions and answers (``Question 1:`` ... ``</question>``, ``Answer 1:`` ... ``</answer>``),
  read as its `parts`.
- the evaluator's RAGAS-style and grader prompts (``ragas_*``, ``grader``), recognised by how their
  prompt files begin (`standins.llm.eval_replies`, which documents each protocol).
- ``rerank``: qagen's listwise rerank prompt, told by its opening (`standins.llm.rerank`).
- ``answer``: anything else (e.g. a RAG reader prompt).

When several markers occur (a chunk may quote a prompt template), the earliest one wins, since
every template states its instructions before the material it embeds (`classify_prompt`).

A prompt may open with the passages it is about in a data block, the frame every call about one draft
shares (qagen's `qagen.generation.passage_frame`): its placeholders then refer to the passages above.
The frame is read apart (`split_frame`): the kind is told from what follows it, and a draft prompt's
passages are the frame's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from standins.llm.eval_replies import EvalKind, EvalPrompt, classify_eval_prompt
from standins.llm.qagen_prompts import critic_prompts
from standins.llm.rerank import LISTWISE_OPENING

PromptKind = Literal["generation", "critique", "check", "reader", "judge", "rerank", "answer"] | EvalKind

# The checks whose prompts end in their own instruction (the passage comes first, for the servers'
# prefix caches): a yes/no item, and a reader that answers from the passages or says it cannot.
_YES_NO_ENDING = "Answer with one word, Yes or No."
_READER_ENDING = re.compile(r"write exactly: NOT IN PASSAGE\b.*</question>\s*Answer:\s*\Z", re.DOTALL)
_TAGGED_QUESTION = re.compile(r"<question>\s*(?:Question:[ \t]*)?(?P<question>.*?)\s*</question>", re.DOTALL)

_PLACEHOLDER = re.compile(r"\{[a-z_]+\}")
_FRAME = re.compile(r"\A<context>\n(?P<body>.*?)\n</context>\n\n", re.DOTALL)
"""qagen's frame (`qagen.generation.passage_frame.frame`, not imported: the stand-in never imports qagen).
The passages in it are neutralised, so the first closing tag is the frame's own."""
_SEPARATOR = "\n\n---\n\n"
"""Between the frame's passages (`qagen.llm.untrusted.PASSAGE_SEPARATOR`)."""
_MIN_PHRASE = 12
"""The shortest instruction text that names a critic: shorter ones could occur in any prompt."""


def critic_phrases() -> list[tuple[str, str]]:
    """Each critic prompt's phrase, with its critic's name: the text before the first placeholder
    of the first line no other critic prompt has (the line that says what it rates). Read on every
    call, so a critic registered while the stand-in runs is recognised."""
    prompts = [(name, [line.strip() for line in text.splitlines() if line.strip()]) for name, text in critic_prompts()]
    phrases: list[tuple[str, str]] = []
    for position, (name, own) in enumerate(prompts):
        others = {line for other, (_, their) in enumerate(prompts) if other != position for line in their}
        for line in own:
            phrase = _PLACEHOLDER.split(line)[0].strip()
            if line not in others and len(phrase) >= _MIN_PHRASE:
                phrases.append((name, phrase))
                break
    return phrases


@dataclass(frozen=True)
class PromptInfo:
    """What the stand-in understood from a prompt."""

    kind: PromptKind
    text: str  # the prompt, after its frame when it opens with one (`split_frame`)
    criterion: str | None = None
    question: str | None = None  # critique: the rated question; judge: the instruction
    context: str | None = None  # generation: the chunk (the first passage)
    label: str | None = None  # generation: the question's label (`Factoid question`, a type's)
    passages: tuple[str, ...] = ()  # generation: every passage (one, or each `Passage N:`)
    asks_evidence: bool = False  # generation: the prompt asks for the evidence sentence (`Evidence:`)
    parts: tuple[tuple[str, str], ...] = ()  # generation: a composing prompt's parts, (question, answer) each
    pairs: int = 1  # generation: the question/answer pairs the prompt asks for (qagen's `per_chunk`)
    response: str | None = None  # judge: the response under evaluation
    evaluation: EvalPrompt | None = None  # ragas_* and grader: what `eval_replies` read from the prompt


def _line_labels(label: str, text: str) -> list[re.Match[str]]:
    return list(re.finditer(rf"^[ \t]*{re.escape(label)}[ \t]*", text, re.MULTILINE))


# A draft prompt's answer template: `Factoid question: (your factoid question)`, any type's label.
_DRAFT_TEMPLATE = re.compile(r"^(?P<label>[A-Z][\w-]*(?: [\w-]+)* question): \(your ", re.MULTILINE)
_PASSAGE = re.compile(r"^[ \t]*Passage \d+:[ \t]*", re.MULTILINE)
# A draft prompt that asks for several numbered pairs (qagen's `qa_*_pairs` prompts), before its answer template.
_PAIRS = re.compile(r"numbering the pairs from 1 to (?P<pairs>\d+)")
# A composing prompt's parts: `Question 1: ...` up to its closing data tag, then `Answer 1: ...` up to its own.
_PART = re.compile(
    r"^[ \t]*Question (?P<number>\d+):[ \t]*(?P<question>.*?)\s*</question>\s*<answer>\s*"
    r"Answer (?P=number):[ \t]*(?P<answer>.*?)\s*</answer>",
    re.MULTILINE | re.DOTALL,
)


def extract_parts(text: str) -> tuple[tuple[str, str], ...]:
    """The (question, answer) of each part a composing prompt shows, in order."""
    return tuple((found.group("question"), found.group("answer")) for found in _PART.finditer(text))


def extract_passages(text: str) -> tuple[str, ...]:
    """The passages inside a draft prompt of several (`Passage 1: ...`), each up to its closing data tag."""
    starts = list(_PASSAGE.finditer(text))
    found: list[str] = []
    for number, start in enumerate(starts):
        end = starts[number + 1].start() if number + 1 < len(starts) else text.rfind("Output:::")
        body = text[start.end() : end if end > start.end() else len(text)]
        found.append(body.strip().split("</context>")[0].rstrip())
    return tuple(found)


def split_frame(text: str) -> tuple[tuple[str, ...], str]:
    """The passages of the frame a prompt opens with (none: it has no frame), and the prompt after it."""
    found = _FRAME.match(text)
    if found is None:
        return (), text
    body = found.group("body")
    if not _PASSAGE.match(body):
        return (body.strip(),), text[found.end() :]
    return tuple(part.strip() for part in _PASSAGE.split(body.replace(_SEPARATOR, "\n")) if part.strip()), text[
        found.end() :
    ]


def extract_context(text: str) -> str:
    """The chunk inside a QA-generation prompt.

    Starts after the first line-initial ``Context:`` that follows the template's
    ``Factoid question:`` (any type's label) instructions (so a chunk holding its own ``Context:`` lines is kept
    whole), falling back to the last ``Context:`` line; ends at the final ``Output:::``, or at the
    closing ``</context>`` data tag before it.
    """
    labels = _line_labels("Context:", text)
    if not labels:
        return ""
    template = _DRAFT_TEMPLATE.search(text)
    instructions = template.start() if template is not None else -1
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


def _check_prompt(text: str, kind: PromptKind) -> PromptInfo:
    """A yes/no or reader prompt: its critic (by its phrase), its question (the last tagged one: the
    prompt's own comes after the passages) and its passages (the first data block)."""
    places = [(text.find(phrase), critic) for critic, phrase in critic_phrases() if phrase in text]
    questions = list(_TAGGED_QUESTION.finditer(text))
    opening, closing = text.find("<context>"), text.find("</context>")
    context = text[opening + len("<context>") : closing].strip() if 0 <= opening < closing else ""
    return PromptInfo(
        kind=kind,
        text=text,
        criterion=min(places)[1] if places else "unknown",
        question=questions[-1].group("question") if questions else "",
        context=context,
        passages=tuple(part.strip() for part in _PASSAGE.split(context) if part.strip()) or (context,),
    )


def classify_prompt(text: str) -> PromptInfo:
    """Recognise the prompt kind and pull out the parts the reply depends on.

    Embedded material (a chunk, a question, retrieved documents) may quote any prompt, even these
    templates: the cookbook a corpus may hold prints them all. Every template puts its
    instructions first, so the kind is the one whose marker appears earliest, and markers inside
    a RAG prompt's retrieved documents do not count. The evaluator's prompts are told by how they
    begin, which no other template shares.
    """
    if LISTWISE_OPENING.match(text):
        return PromptInfo(kind="rerank", text=text)
    ending = text.rstrip()
    if ending.endswith(_YES_NO_ENDING) or _READER_ENDING.search(ending):
        return _check_prompt(text, "check" if ending.endswith(_YES_NO_ENDING) else "reader")
    framed, text = split_frame(text)
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
    template = _DRAFT_TEMPLATE.search(text, 0, limit)
    parts = extract_parts(text[: template.start()]) if template is not None else ()
    if template is not None and (
        parts or "Context:" in text[template.start() :] or _PASSAGE.search(text, template.start())
    ):
        found["generation"] = template.start()
    kind: PromptKind = min(found, key=found.__getitem__) if found else "answer"
    if kind == "judge":
        return PromptInfo(
            kind="judge",
            text=text,
            question=_unwrap(_section(text, "###The instruction to evaluate:", "###Response to evaluate:")),
            response=_unwrap(_section(text, "###Response to evaluate:", "###Reference Answer")),
        )
    if kind == "critique":
        places = [(text.find(phrase), critic) for critic, phrase in critic_phrases() if phrase in text]
        criterion = min(places)[1] if places else "unknown"
        return PromptInfo(kind="critique", text=text, criterion=criterion, question=extract_question(text))
    if kind == "generation" and parts:
        assert template is not None
        return PromptInfo(kind="generation", text=text, label=template.group("label"), parts=parts)
    if kind == "generation":
        assert template is not None
        passages = framed or extract_passages(text) or (extract_context(text),)
        label = template.group("label")
        asks = _line_labels("Evidence:", text[template.start() : text.find("Context:", template.start())])
        pairs = _PAIRS.search(text, 0, template.start())
        return PromptInfo(
            kind="generation",
            text=text,
            context=passages[0],
            label=label,
            passages=passages,
            asks_evidence=bool(asks),
            pairs=int(pairs.group("pairs")) if pairs is not None else 1,
        )
    return PromptInfo(kind="answer", text=text)
