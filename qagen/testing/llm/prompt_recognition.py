"""Which of qagen's prompts the stand-in LLM was sent, and the parts of it its reply depends on.

Prompt kinds, decided from the text of the last user message:

- ``judge``: contains ``[RESULT]`` and ``###Response to evaluate:`` (Prometheus-style judge);
  the instruction and the response under evaluation are read from their sections.
- ``critique``: contains ``Total rating:``; the criterion comes from the phrase of the default
  critique prompts (``unknown`` if none matches), and the rated question is read from it.
- ``generation``: contains ``Factoid question:`` and ``Context:``; the chunk is read from it.
- the evaluator's RAGAS-style and grader prompts (``ragas_*``, ``grader``), recognised by how their
  prompt files begin (`qagen.testing.llm.eval_replies`, which documents each protocol).
- ``rerank``: qagen's listwise rerank prompt, told by its opening (`qagen.testing.llm.rerank`).
- ``answer``: anything else (e.g. a RAG reader prompt).

When several markers occur (a chunk may quote a prompt template), the earliest one wins, since
every template states its instructions before the material it embeds (`classify_prompt`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from qagen.testing.llm.eval_replies import EvalKind, EvalPrompt, classify_eval_prompt
from qagen.testing.llm.rerank import LISTWISE_OPENING

PromptKind = Literal["generation", "critique", "judge", "rerank", "answer"] | EvalKind

# The sentence of each default critique prompt that names its criterion.
CRITERION_PHRASES: dict[str, str] = {
    "groundedness": "how well one can answer the given question unambiguously with the given context",
    "relevance": "how useful this question can be to",
    "standalone": "how context-independent this question is",
}


@dataclass(frozen=True)
class PromptInfo:
    """What the stand-in understood from a prompt."""

    kind: PromptKind
    text: str
    criterion: str | None = None
    question: str | None = None  # critique: the rated question; judge: the instruction
    context: str | None = None  # generation: the chunk
    asks_evidence: bool = False  # generation: the prompt asks for the evidence sentence (`Evidence:`)
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
    if LISTWISE_OPENING.match(text):
        return PromptInfo(kind="rerank", text=text)
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
        asks = _line_labels("Evidence:", text[generation : text.find("Context:", generation)])
        return PromptInfo(kind="generation", text=text, context=extract_context(text), asks_evidence=bool(asks))
    return PromptInfo(kind="answer", text=text)
