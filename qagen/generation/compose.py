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
chunk's factoid pays for it once. Each part goes through its type's free checks (`judge_parts`); a
part that failed, or that a check rejects, ends the composed draft with its reason, and the composing
call is not made. Like every free check, this is decided again on every run from the stored parts, so
a changed setting applies without a new call.

The composed draft keeps its parts (`Draft.parts`, their replies with them, for audit); its evidence
is their evidence sentences, each placed in its own passage (`checks.precheck`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from pydantic import Field

from qagen.config import BuildConfig
from qagen.errors import ConfigError
from qagen.failures import Failure, FailureKind
from qagen.generation.checks.precheck import Precheck, precheck
from qagen.generation.draft import DraftTask, document_name
from qagen.generation.replies import echoes_example, parse_labelled_qa, prompt_examples
from qagen.llm.prompts import Prompt
from qagen.llm.task import Reply, Request, Role, SingleCallTask, user_request
from qagen.llm.untrusted import neutralize
from qagen.question_types.spec import QuestionTypeSpec
from qagen.records import Draft, Passages, Usage
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


class PartsVerdict(NamedTuple):
    """What a composed draft's parts decide before the composing call (`judge_parts`)."""

    missing: bool = False
    """A part was never drafted: the composed draft is not decided yet."""
    failed: Draft | None = None
    """The first part that failed (its call, or its reply unreadable): the composed draft fails with it."""
    rejected: Precheck | None = None
    """The free check that rejected the first part it rejects, where that part's evidence lies: the
    composed draft is rejected with its reason."""
    rejected_part: Draft | None = None
    """That part."""

    @property
    def composable(self) -> bool:
        """Every part is drafted and passed its checks: the composing call may be made."""
        return not self.missing and self.failed is None and self.rejected is None


def judge_parts(
    parts: Sequence[Draft | None], item: Passages, config: BuildConfig, part_type: QuestionTypeSpec
) -> PartsVerdict:
    """The parts (None: not drafted), in the order of the item's passages, judged each as a draft of its
    type from its passage alone: drafted, then usable, then past the build's free checks
    (`checks.precheck`) and the type's own."""
    if any(part is None for part in parts):
        return PartsVerdict(missing=True)
    drafted = [part for part in parts if part is not None]
    failed = next((part for part in drafted if not part.ok), None)
    if failed is not None:
        return PartsVerdict(failed=failed)
    for part, chunk in zip(drafted, item.chunks, strict=True):
        alone = Passages.of(chunk, part_type.name)
        checked = precheck(part, alone, config, answered=part_type.answer_in_passages)
        own = None if part_type.check is None else part_type.check(part, alone)
        reason = checked.reason or own
        if reason is not None:
            return PartsVerdict(rejected=checked._replace(reason=reason), rejected_part=part)
    return PartsVerdict()


def ended_by_part(task: ComposeTask, item: Passages, verdict: PartsVerdict) -> Draft | None:
    """The composed draft as the candidates show one its parts ended (not stored: it is decided again
    on every run): the failure and reply of the part that failed, or the reply and evidence of the part
    a check rejected; None when the parts did not end it."""
    part = verdict.failed or verdict.rejected_part
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
