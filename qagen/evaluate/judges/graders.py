"""LangSmith-style boolean graders: correct, relevant, grounded, retrieval-relevant (value 1.0 / 0.0).

Each grader is one call: the seed's grading instructions as the system message, the delimited data
as the user message, and a reply of `Explanation: ...` then `Grade: true|false` (explanation first,
so the model reasons before it commits; `parse_grade` also accepts the seed's JSON shape). The
four differ only in what they compare:

- correct: the answer against the reference answer (needs a reference);
- relevant: the answer against the question;
- grounded: the answer against the retrieved contexts ("FACTS");
- retrieval_relevant: the retrieved contexts against the question.

grounded and retrieval_relevant score an empty retrieval 0.0 with no call, as ragas' own
`ResponseGroundedness` and `ContextRelevance` do: nothing retrieved grounds nothing and is
relevant to nothing.
"""

from __future__ import annotations

from qagen.evaluate.judges.parsing import parse_grade
from qagen.evaluate.judges.transcript import JudgeStep, Transcript
from qagen.llm.prompts import Prompt, load_prompt
from qagen.llm.task import user_request
from qagen.llm.untrusted import neutralize, passages


def render_grader(name: str, **values: str) -> tuple[str, str]:
    """(system, user) messages of grader `name` (`correct`, `relevant`, ...), every value neutralised."""
    system = load_prompt(f"grader_{name}_system").text.strip()
    return system, load_prompt(f"grader_{name}").render(**{k: neutralize(v) for k, v in values.items()})


def _grade(name: str, model: str, **values: str) -> JudgeStep:
    return grade_with(name, model, load_prompt(f"grader_{name}_system"), load_prompt(f"grader_{name}"), **values)


GRADER_INPUTS = ("question", "answer", "reference_answer", "facts")
"""What a grader's prompt may read: the question, the answer, the reference answer and the
retrieved contexts (`facts`); its placeholders say which (`prompt_grader`)."""


def grade_with(name: str, model: str, system_prompt: Prompt, user_prompt: Prompt, **values: str) -> JudgeStep:
    """One grader call with these prompts: `Explanation: ...` then `Grade: true|false`, read as 1.0 / 0.0."""
    t = Transcript(name, model)
    t.note_prompts(system_prompt, user_prompt)
    system = system_prompt.text.strip()
    prompt = user_prompt.render(**{k: neutralize(v) for k, v in values.items()})

    def read(reply: str) -> JudgeStep:
        parsed = parse_grade(reply)
        if parsed.value is None:
            return t.done(None, parsed.reason, explanation=parsed.explanation)
        return t.done(1.0 if parsed.value else 0.0, explanation=parsed.explanation)

    return t.ask(user_request(prompt, system=system), read)


def grade_correct(question: str, answer: str, reference_answer: str, model: str) -> JudgeStep:
    """1.0 if the answer is factually accurate relative to the reference answer (extra accurate
    information allowed, no conflicting statements), else 0.0."""
    if not reference_answer.strip():
        return Transcript("correct", model).done(None, "no_reference")
    return _grade("correct", model, question=question, reference_answer=reference_answer, answer=answer)


def grade_relevant(question: str, answer: str, model: str) -> JudgeStep:
    """1.0 if the answer is concise, relevant to the question and helps to answer it, else 0.0."""
    return _grade("relevant", model, question=question, answer=answer)


def grade_grounded(answer: str, contexts: list[str], model: str) -> JudgeStep:
    """1.0 if the answer is grounded in the retrieved contexts with nothing hallucinated, else 0.0."""
    if not any(c.strip() for c in contexts):
        return Transcript("grounded", model).done(0.0, retrieved_nothing=True)
    return _grade("grounded", model, facts=passages(contexts), answer=answer)


def grade_retrieval_relevant(question: str, contexts: list[str], model: str) -> JudgeStep:
    """1.0 if the retrieved contexts hold any keyword or meaning related to the question, else 0.0."""
    if not any(c.strip() for c in contexts):
        return Transcript("retrieval_relevant", model).done(0.0, retrieved_nothing=True)
    return _grade("retrieval_relevant", model, facts=passages(contexts), question=question)


def grader_values(
    user_prompt: Prompt, question: str, answer: str, reference: str, contexts: list[str]
) -> dict[str, str]:
    """What a grader prompt reads (its placeholders among `GRADER_INPUTS`), from the judged answer."""
    available = {"question": question, "answer": answer, "reference_answer": reference, "facts": passages(contexts)}
    return {name: available[name] for name in GRADER_INPUTS if name in user_prompt.variables}
