"""The abstention judge: did the system decline to answer a question its documents do not answer?

The evaluator's score of an `unanswerable` question (`qagen.question_types`: a type whose
`scoring` is `abstention`). One call in the boolean graders' protocol (`Explanation: ...` then
`Grade: true|false`, read by `parse_grade`): value 1.0 when the answer declines (says the
documents do not hold the answer, or that it does not know), 0.0 when it commits to an answer. A
system that never declines scores 0 on every such question.
"""

from __future__ import annotations

from qagen.evaluate.judges.parsing import parse_grade
from qagen.evaluate.judges.transcript import JudgeStep, Transcript
from qagen.llm.prompts import load_prompt
from qagen.llm.task import user_request
from qagen.llm.untrusted import neutralize

ABSTENTION_SYSTEM = "judge_abstention_system"
ABSTENTION_PROMPT = "judge_abstention"


def render_abstention(question: str, answer: str) -> tuple[str, str]:
    """The (system, user) messages of the abstention judge, the question and answer neutralised."""
    system = load_prompt(ABSTENTION_SYSTEM).text.strip()
    return system, load_prompt(ABSTENTION_PROMPT).render(question=neutralize(question), answer=neutralize(answer))


def judge_abstention(question: str, answer: str, model: str) -> JudgeStep:
    """1.0 when `answer` declines to answer `question`, 0.0 when it commits to an answer."""
    t = Transcript("abstention", model)
    t.note(ABSTENTION_SYSTEM, ABSTENTION_PROMPT)
    system, prompt = render_abstention(question, answer)

    def read(reply: str) -> JudgeStep:
        parsed = parse_grade(reply)
        if parsed.value is None:
            return t.done(None, parsed.reason, explanation=parsed.explanation)
        return t.done(1.0 if parsed.value else 0.0, explanation=parsed.explanation)

    return t.ask(user_request(prompt, system=system), read)
