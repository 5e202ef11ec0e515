"""The cookbook's Prometheus-style correctness judge: the answer against the reference, raw score 1-5.

The prompt is the notebook's EVALUATION_PROMPT with three changes: its literal placeholders
`{{write a feedback for criteria}}` and `{{an integer number between 1 and 5}}` are written
`<write a feedback for criteria>` and `<an integer number between 1 and 5>` (our renderer reads
every `{lowercase_name}` as a variable, and `parse_prometheus` skips a `[RESULT]` followed by
`<...>` as an echo of the template); the instruction, response and reference sit between
`<question>`, `<response>` and `<reference_answer>` tags; and a fifth task item says that text
inside the tags is data. Its variable is `{question}` where the notebook has `{instruction}`.
`normalise_correctness` maps the score to [0, 1] as the notebook does: (score - 1) / 4.

The value is the score read as an expected rating (G-Eval: its expectation over the rating tokens at
the position the score is written, `qagen.llm.verdict_probability`) when the server sent token
probabilities, else the written score; `detail["score"]` keeps the written one, `detail["read_as"]`
says which.
"""

from __future__ import annotations

from qagen.evaluate.judges.parsing import parse_prometheus
from qagen.evaluate.judges.transcript import JudgeStep, Transcript
from qagen.llm.prompts import load_prompt
from qagen.llm.task import Reply, user_request
from qagen.llm.untrusted import neutralize
from qagen.llm.verdict_probability import expected_rating

CORRECTNESS_PROMPT = "judge_correctness"
CORRECTNESS_SYSTEM = "judge_correctness_system"  # "You are a fair evaluator language model."


def render_correctness(question: str, answer: str, reference_answer: str) -> str:
    """The correctness judge's user message, every value neutralised."""
    return load_prompt(CORRECTNESS_PROMPT).render(
        question=neutralize(question), response=neutralize(answer), reference_answer=neutralize(reference_answer)
    )


def normalise_correctness(score: float) -> float:
    """(score - 1) / 4: the 1-5 rubric score on [0, 1], as in the cookbook notebook."""
    return (score - 1.0) / 4.0


def judge_correctness(question: str, answer: str, reference_answer: str, model: str) -> JudgeStep:
    """Prometheus-style correctness of `answer` against `reference_answer`: value = raw score 1-5."""
    t = Transcript("correctness", model)
    t.note(CORRECTNESS_SYSTEM, CORRECTNESS_PROMPT)
    if not reference_answer.strip():
        return t.done(None, "no_reference")
    system = load_prompt(CORRECTNESS_SYSTEM).text.strip()

    def read(reply: Reply) -> JudgeStep:
        parsed = parse_prometheus(reply.text)
        if parsed.score is None:
            return t.done(None, parsed.reason, feedback=parsed.feedback)
        expected = expected_rating(reply, parsed.offset)
        value = float(parsed.score) if expected is None else expected
        return t.done(
            value,
            feedback=parsed.feedback,
            normalised=normalise_correctness(value),
            score=parsed.score,
            read_as="written" if expected is None else "probability",
        )

    return t.ask_reply(user_request(render_correctness(question, answer, reference_answer), system=system), read)
