"""What the stand-in LLM "thinks" before it answers: a reasoning block holding decoys.

Reasoning models (DeepSeek-R1, Qwen3, ...) write their reasoning before the reply, inline between
``<think>`` tags or, behind vLLM's reasoning parser, in the message's ``reasoning_content``. That
reasoning often drafts a verdict in the reply's own protocol and then changes its mind. The
stand-in's reasoning does exactly that, with values that always differ from the real reply's, so a
client that reads the reasoning as the reply is caught by the values it stored:

- ``critique``: ``Evaluation: ...`` and ``Total rating: N`` with N (1-5) != the real rating;
- ``judge``: ``Feedback: ... [RESULT] N`` with N (1-5) != the real score;
- ``generation``: ``Factoid question: ...`` / ``Answer: ...``, a pair unlike any the generator drafts;
- ``grader``: ``Grade: true|false``, the opposite of the real grade;
- ``ragas_context_precision``: ``Verdict: Yes|No``, the opposite of the real verdict;
- ``answer``: a first-guess answer;
- the other evaluator prompts: reasoning without a decoy value.

`reasoning_for` is a pure function of the reply and the request key (sha256 only), like every other
decision of the stand-in, and the `Decoy` it returns is what the request log records.
"""

from __future__ import annotations

from dataclasses import dataclass

from standins.llm.outcomes import unit_interval
from standins.llm.replies import Reply, rating_reply

DECOY_ANSWER = "A first guess, which the final answer replaces."
"""The answer of the decoy pair (generation) and the decoy answer (RAG answer prompts)."""

# Never a digit outside the decoy values: a parser must not find a stray number to read.
_FEEDBACK = {
    1: "At first sight the response looks completely wrong.",
    2: "At first sight the response looks mostly wrong.",
    3: "At first sight the response looks partly right.",
    4: "At first sight the response looks mostly right.",
    5: "At first sight the response looks completely right.",
}


@dataclass(frozen=True)
class Decoy:
    """The reasoning text (no tags) and the decoy values it holds, for the request log."""

    text: str
    score: int | None = None  # critique/judge rating, grader grade (0/1), precision verdict (0/1)
    question: str | None = None  # generation
    answer: str | None = None  # generation and RAG answers


def _other_rating(real: int | None, *parts: str) -> int:
    """A rating in 1-5 that is not `real`, chosen by hash."""
    choices = [n for n in range(1, 6) if n != real]
    return choices[int(unit_interval("decoy-score", *parts) * len(choices))]


def reasoning_for(reply: Reply, request_key: str) -> Decoy:
    """The reasoning a model might write before `reply`: drafts that the reply then contradicts."""
    kind = reply.prompt
    if kind == "critique":
        score = _other_rating(reply.score, request_key)
        draft = rating_reply(reply.criterion or "unknown", score, "canonical")
        text = (
            "Let me weigh the question against the criterion before I rate it.\n"
            f"{draft}\n"
            "On reflection that first rating does not hold up, so I rate it again below."
        )
        return Decoy(text, score=score)
    if kind == "judge":
        score = _other_rating(reply.score, request_key)
        text = (
            "Let me compare the response with the reference answer first.\n"
            f"Feedback: {_FEEDBACK[score]} [RESULT] {score}\n"
            "That verdict was premature; the final feedback follows."
        )
        return Decoy(text, score=score)
    if kind == "generation":
        question = f"Which draft detail is noted under scratch label {request_key[:10]}?"
        text = (
            "Let me draft a question before writing the final pair.\n"
            f"Factoid question: {question}\n"
            f"Answer: {DECOY_ANSWER}\n"
            "That draft is too vague, so the final pair asks something else."
        )
        return Decoy(text, question=question, answer=DECOY_ANSWER)
    if kind == "grader" and reply.score in (0, 1):
        grade = 1 - reply.score
        text = (
            "Let me read the material once before grading.\n"
            "Explanation: A first reading, made in haste.\n"
            f"Grade: {'true' if grade else 'false'}\n"
            "I should check that again before I answer."
        )
        return Decoy(text, score=grade)
    if kind == "ragas_context_precision" and reply.score in (0, 1):
        verdict = 1 - reply.score
        text = (
            "Let me read the context once before deciding.\n"
            "Explanation: A first reading, made in haste.\n"
            f"Verdict: {'Yes' if verdict else 'No'}\n"
            "I should check that again before I answer."
        )
        return Decoy(text, score=verdict)
    if kind == "answer":
        text = f"Let me think about what the documents say.\nA first guess: {DECOY_ANSWER}\nLet me check that again."
        return Decoy(text, answer=DECOY_ANSWER)
    return Decoy("Let me go through the material once before answering.\nNow I can write the answer.")
