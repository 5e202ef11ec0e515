"""The `answer_correct` judge: is the response correct, given the reference? A yes/no read as P(yes),
capped by the deterministic key-term evidence.

A small judge model reads a 1-5 rubric badly (the cookbook's `correctness`: lenient on answers to
other questions and on near misses, harsh on terse right ones); a yes/no question with contrasting
examples in the prompt (a paraphrase that is right; the reverse order, another option and a negation,
which are wrong) it answers better, and the probability it gives "Yes" where it writes its verdict
ranks answers better than the written word (`qagen.llm.verdict_probability`). benchmarks/bench_judge.py
measures both against labelled answers.

The value, in [0, 1]:

- P(yes) at the verdict, renormalised over yes and no, when the server sent token probabilities;
  else the written verdict as 1.0 or 0.0 (`detail["read_as"]` says which; the evaluation says once
  when its judge's server sent none);
- capped at `NO_KEY_TERM_CAP` when the response holds none of the reference's content words
  (`qagen.evaluate.metrics.key_terms`): a wrong answer sharing no word with the reference cannot score
  full marks, whatever the model says of it. The words the question holds too count here: capping on
  the key terms alone (the reference's words the question lacks) cut a right answer on the tuning half
  of benchmarks/judged ("use the `disable` command": the question asks how to disable), and lowered AUC
  from 1.00 to 0.99 there; capping on every word of the reference changed nothing there.

The key terms (the reference's words the question lacks) and the share of them the response holds are
reported beside the value, as evidence, with token F1.

The decision: the response is judged correct when the value is at least `CORRECT_AT`.
"""

from __future__ import annotations

from qagen.evaluate.judges.transcript import JudgeStep, Transcript
from qagen.evaluate.metrics.key_terms import KeyTermEvidence, key_term_evidence
from qagen.llm.prompts import load_prompt
from qagen.llm.reply_rules import parse_yes_no
from qagen.llm.task import Reply, user_request
from qagen.llm.untrusted import neutralize
from qagen.llm.verdict_probability import yes_probability

ANSWER_CORRECT_PROMPT = "judge_answer_correct"

CORRECT_AT = 0.5
"""The cut: a response whose value is at least this is judged correct."""

NO_KEY_TERM_CAP = 0.3
"""The most a response holding none of the reference's words can score (below `CORRECT_AT`)."""

READ_AS_PROBABILITY = "probability"
READ_AS_WRITTEN = "written"


def render_answer_correct(question: str, answer: str, reference_answer: str) -> str:
    """The judge's message, every value neutralised."""
    return load_prompt(ANSWER_CORRECT_PROMPT).render(
        question=neutralize(question), response=neutralize(answer), reference_answer=neutralize(reference_answer)
    )


def combined(p_yes: float, evidence: KeyTermEvidence) -> float:
    """The judge's P(yes) with the key-term cap (see the module)."""
    if evidence.has_words and not evidence.words_shared:
        return min(p_yes, NO_KEY_TERM_CAP)
    return p_yes


def judge_answer_correct(question: str, answer: str, reference_answer: str, model: str) -> JudgeStep:
    """Whether `answer` gives the reference's answer: the value in [0, 1] (see the module)."""
    t = Transcript("answer_correct", model)
    t.note(ANSWER_CORRECT_PROMPT)
    if not reference_answer.strip():
        return t.done(None, "no_reference")
    evidence = key_term_evidence(question, answer, reference_answer)
    parts: dict[str, object] = {
        "key_terms": list(evidence.terms),
        "key_terms_found": list(evidence.found),
        "containment": evidence.containment,
        "token_f1": evidence.token_f1,
        "reference_words_shared": evidence.words_shared if evidence.has_words else None,
    }

    def read(reply: Reply) -> JudgeStep:
        verdict = parse_yes_no(reply.text)
        if verdict.yes is None:
            return t.done(None, verdict.reason, **parts)
        probability = yes_probability(reply, verdict.offset)
        p_yes = probability if probability is not None else float(verdict.yes)
        value = combined(p_yes, evidence)
        return t.done(
            value,
            written="yes" if verdict.yes else "no",
            p_yes=probability,
            read_as=READ_AS_PROBABILITY if probability is not None else READ_AS_WRITTEN,
            capped=value < p_yes,
            **parts,
        )

    return t.ask_reply(user_request(render_answer_correct(question, answer, reference_answer)), read)
