"""Drafts composed from parts (`QuestionTypeSpec.parts`: the multi-hop question): each passage is
drafted alone as a question of the parts' type, then one call writes a question that asks for every
part's answer; its answer is theirs, joined (`joined_answer`).

A small model asked for a question that needs two passages, in one call, answered it wrongly, or from
one passage, or pointed at "passage 1" (Qwen2.5-Coder-1.5B: 0 of 44 drafts kept by a reviewer over
four prompts); asked to join two questions it drafted from one passage each, it does so faithfully.
Asked to write the joined answer too, it added what neither part says (a default for an attribute no
passage names, in 2 of 5 composed drafts), so the answer is the parts' own, each already checked.

The parts are drafts of their own: records in the draft log, keyed as the parts' type keys a draft of
that passage (a factoid of the same chunk, prompt and model is the same record), so a run killed
between a part and the composing call pays for neither again, and a build that also drafts that
chunk's factoid pays for it once. Each part goes through its type's free checks; a part that failed,
or that a check rejects, ends the composed draft with its reason, and the composing call is not made.

Under checks vetting each part is then asked its type's critics of `CHECKS_VETTING` (`supported`: is
the answer correct and in the passage?), the very calls and records a build of that type asks of it,
before the composing call: a part whose answer is wrong makes the composed answer wrong, and the free
checks cannot see it (Qwen2.5-Coder-1.5B on Python's documentation: of 12 composed drafts a blind
reviewer kept none, and about 5 of the 12 failed on a part's wrong answer, "glob. glob.", "key and
reverse. `heap[0]`"). A part its critic rejects ends the composed draft with that critic's reason
(`unsupported_answer`); a part critic's call that failed ends it as a failed critic call ends a draft's
critics (undecided until a run asks it again), never as a pass.

`judge_parts` decides all this from the parts and their critics' stored verdicts, again on every run,
like every free check and critic threshold, so a changed setting applies without a new call. The
composed draft keeps its parts (`Draft.parts`, their replies with them, for audit); its evidence is
their evidence sentences, each placed in its own passage (`checks.precheck`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

from pydantic import Field

from qagen.config import BuildConfig
from qagen.errors import ConfigError
from qagen.failures import Failure, FailureKind
from qagen.generation.checks.precheck import Precheck, precheck
from qagen.generation.draft import DraftTask, document_name
from qagen.generation.replies import echoes_example, parse_labelled_qa, prompt_examples
from qagen.generation.vetting import vet
from qagen.llm.prompts import Prompt
from qagen.llm.task import Reply, Request, Role, SingleCallTask, user_request
from qagen.llm.untrusted import neutralize
from qagen.question_types.spec import QuestionTypeSpec
from qagen.records import Critique, Draft, Passages, Usage
from qagen.runs.store import record_key

PART_PLACEHOLDERS = (("first_question", "first_answer"), ("second_question", "second_answer"))
"""The composing prompt's placeholders of each part's question and answer, in the order of the passages."""
DOCUMENTS_PLACEHOLDER = "documents"
"""The composing prompt's placeholder of the passages' documents: `the document "heapq"`, or
`the documents "csv" and "statistics"` (the question names what it is about, as the parts do)."""


class Composing(Passages):
    """What a composed draft is written from: its passages, and the drafts of its parts, one a passage."""

    parts: tuple[Draft, ...] = Field(description="The parts' drafts, in the order of the passages, each usable.")


def documents_phrase(item: Passages) -> str:
    """The passages' documents as the composing prompt names them (`DOCUMENTS_PLACEHOLDER`)."""
    names = list(dict.fromkeys(document_name(chunk.source) for chunk in item.chunks))
    quoted = [f'"{neutralize(name)}"' for name in names]
    if len(quoted) == 1:
        return f"the document {quoted[0]}"
    return f"the documents {', '.join(quoted[:-1])} and {quoted[-1]}"


def joined_answer(parts: Sequence[Draft]) -> str:
    """A composed draft's answer: its parts' answers in order, each a sentence of its own."""
    sentences = [(part.answer or "").strip() for part in parts]
    return " ".join(s if s.endswith((".", "!", "?")) else f"{s}." for s in sentences if s)


class ComposeTask(SingleCallTask[Composing, Draft]):
    """Ask the generator for one question that asks for every part's answer (its answer: `joined_answer`)."""

    role: Role = "generator"

    def __init__(self, model: str, prompt: Prompt, question_type: QuestionTypeSpec, part: DraftTask) -> None:
        missing = {name for pair in PART_PLACEHOLDERS for name in pair} | {DOCUMENTS_PLACEHOLDER}
        missing -= prompt.variables
        if missing:
            raise ConfigError(
                f"The prompt {prompt.name} composes the {question_type.name} drafts from their parts, and has no "
                f"{', '.join(f'{{{name}}}' for name in sorted(missing))}; write them into it."
            )
        self.model = model
        self.question_type = question_type
        self.part = part
        """The task that drafts each part, from its passage alone."""
        self.name = f"draft:{question_type.name}"
        self.prompt = prompt
        self.prompts = (part.prompt, prompt)
        self.examples = prompt_examples(prompt.text, question_type.question_label)

    def key(self, item: Passages) -> str:
        """A composed draft depends on its passages, the parts' prompt, its own prompt and the model
        (its parts are made from the first three): the same never cost a second call."""
        return record_key("draft", *item.chunk_ids, self.part.prompt.sha256, self.prompt.sha256, self.model)

    def part_items(self, item: Passages) -> tuple[Passages, ...]:
        """Each passage as the item of its part's draft."""
        return tuple(Passages.of(chunk, self.part.question_type.name) for chunk in item.chunks)

    def part_keys(self, item: Passages) -> tuple[str, ...]:
        """The record ids of the item's parts."""
        return tuple(self.part.key(part) for part in self.part_items(item))

    def frames(self, item: Passages) -> bool:
        """The composing call shows no passage: it never opens with them (`passage_frame`)."""
        return False

    def request(self, item: Composing) -> Request:
        # The parts' questions and answers are model output written from untrusted passages:
        # neutralised, between the prompt file's data tags, like the passages themselves.
        values = {DOCUMENTS_PLACEHOLDER: documents_phrase(item)}
        for (question, answer), part in zip(PART_PLACEHOLDERS, item.parts, strict=True):
            values[question] = neutralize(part.question or "")
            values[answer] = neutralize(part.answer or "")
        return user_request(self.prompt.render(**values))

    def parse(self, item: Composing, reply: Reply) -> Draft:
        # The reply's own `Answer:` line, if the model wrote one, is not the answer: the parts' answers are.
        parsed = parse_labelled_qa(reply.text, self.question_type.question_label, answer_optional=True)
        failure = Failure.of(FailureKind(parsed.reason)) if parsed.reason else None
        if failure is None and echoes_example(parsed.question or "", self.examples):
            failure = Failure.of(FailureKind.TEMPLATE_ECHO, "the question copies the prompt's example")
        if failure is not None:
            return self._record(item, failure, reply, reply.verbatim)
        evidence = "\n".join(part.evidence for part in item.parts if part.evidence) or None
        return self._record(
            item,
            None,
            reply,
            reply.verbatim,
            question=parsed.question,
            answer=joined_answer(item.parts),
            evidence=evidence,
        )

    def failed(self, item: Composing, failure: Failure, reply: Reply | None = None) -> Draft:
        return self._record(item, failure, reply, reply.verbatim if reply else failure.detail)

    def _record(
        self,
        item: Composing,
        failure: Failure | None,
        reply: Reply | None,
        raw: str,
        *,
        question: str | None = None,
        answer: str | None = None,
        evidence: str | None = None,
    ) -> Draft:
        return Draft(
            id=self.key(item),
            chunk_id=item.first.id,
            model=self.model,
            prompt_hash=self.prompt.hash,
            failure=failure,
            question=question,
            answer=answer,
            evidence=evidence,
            parts=item.parts,
            raw=raw,
            reasoning=reply.reasoning if reply else None,
            usage=reply.usage if reply else Usage(),
        )


PartVerdicts = Callable[[Sequence[Draft]], Sequence[Mapping[str, Critique | None]]]
"""The stored verdicts of the parts' critics, given the parts (every one past its free checks): each
part's, in the order of the parts, by criterion in the order they are asked; None where none is stored."""


class PartsVerdict(NamedTuple):
    """What a composed draft's parts decide before the composing call (`judge_parts`)."""

    missing: bool = False
    """A part was never drafted: the composed draft is not decided yet."""
    failed: Draft | None = None
    """The first part that failed (its call, or its reply unreadable): the composed draft fails with it."""
    ending: Draft | None = None
    """The part that ends the composed draft: the first a free check rejects (`checked`), else the first its
    critic rejects, else the first whose critic's call failed (`critique`)."""
    checked: Precheck | None = None
    """That part's free checks, where its evidence lies; their reason the check that rejected it (None: its
    critic ended it)."""
    critique: Critique | None = None
    """The verdict of that part's critic that ends the composed draft: a rejection, or a failed call or an
    unreadable reply (None: a free check ended it)."""
    unvetted: tuple[str, ...] = ()
    """The part critics whose verdicts are not stored yet (a criterion once for each part that lacks its
    verdict), every part past its free checks and no stored verdict ending it: the calls still to make."""

    @property
    def ends(self) -> bool:
        """A part ends the composed draft: it failed, or a free check or its critic rejects it, or its
        critic's call failed."""
        return self.failed is not None or self.ending is not None

    @property
    def composable(self) -> bool:
        """Every part is drafted and passed its checks and critics: the composing call may be made."""
        return not self.missing and not self.ends and not self.unvetted


def judge_parts(
    parts: Sequence[Draft | None],
    item: Passages,
    config: BuildConfig,
    part_type: QuestionTypeSpec,
    verdicts: PartVerdicts | None = None,
) -> PartsVerdict:
    """The parts (None: not drafted), in the order of the item's passages, judged each as a draft of its
    type from its passage alone: drafted, then usable, then past the build's free checks
    (`checks.precheck`) and the type's own, then past its critics (`verdicts`: their stored verdicts;
    None, the parts are not vetted: cookbook vetting, or only their free checks asked).

    Of the critics' verdicts, as of a draft's critics (`filter`), a rejection outranks a failed call,
    and a failed call a verdict not stored yet."""
    if any(part is None for part in parts):
        return PartsVerdict(missing=True)
    drafted = [part for part in parts if part is not None]
    failed = next((part for part in drafted if not part.ok), None)
    if failed is not None:
        return PartsVerdict(failed=failed)
    checks: list[Precheck] = []
    for part, chunk in zip(drafted, item.chunks, strict=True):
        alone = Passages.of(chunk, part_type.name)
        checked = precheck(part, alone, config, answered=part_type.answer_in_passages)
        own = None if part_type.check is None else part_type.check(part, alone)
        reason = checked.reason or own
        if reason is not None:
            return PartsVerdict(ending=part, checked=checked._replace(reason=reason))
        checks.append(checked)
    if verdicts is None:
        return PartsVerdict()
    found = verdicts(drafted)
    call_failed: PartsVerdict | None = None
    for part, checked, by_criterion in zip(drafted, checks, found, strict=True):
        for critique in by_criterion.values():
            if critique is None:
                continue
            verdict = vet(config, critique)
            if verdict is None:
                call_failed = call_failed or PartsVerdict(ending=part, checked=checked, critique=critique)
            elif not verdict.passed:
                return PartsVerdict(ending=part, checked=checked, critique=critique)
    if call_failed is not None:
        return call_failed
    return PartsVerdict(unvetted=tuple(c for by_criterion in found for c, v in by_criterion.items() if v is None))


def ended_by_part(task: ComposeTask, item: Passages, verdict: PartsVerdict) -> Draft | None:
    """The composed draft as the candidates show one its parts ended (not stored: it is decided again
    on every run): the failure and reply of the part that failed, or the reply and evidence of the part
    a check or its critic rejected (or whose critic's call failed); None when the parts did not end it."""
    part = verdict.failed or verdict.ending
    if part is None:
        return None
    return Draft(
        id=task.key(item),
        chunk_id=item.first.id,
        model=task.model,
        prompt_hash=task.prompt.hash,
        failure=part.failure,
        evidence=part.evidence,
        raw=part.raw,
    )
