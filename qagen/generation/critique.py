"""The critics: each rates a drafted question 1-5, rationale first (one LLM call each).

A critic is a prompt file plus a `CriticTask`: what the critic sees is decided by the prompt's own
placeholders, so the resume key cannot miss an input. `{question}` is the drafted question,
`{context}` its passages (the chunk; several passages each labelled `Passage N:`), `{answer}` the
drafted answer and `{retrieved}` the chunks a BM25 search of the corpus finds for the question (all
untrusted, neutralised, between the prompt's data tags); any other placeholder is a setting of the
run (`{audience}`), given in `settings`, which goes in as written and into the key. With `shared_prefix`
a prompt reading every passage is sent after them, as every call about the draft opens
(`qagen.generation.passage_frame`); the key stays that of its inputs. Which critics a
build asks, in which order, with which prompts, is the registries' (`qagen.critics`,
`qagen.question_types`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import NamedTuple

from qagen.corpus.squad import squad_tokens, token_f1
from qagen.critics import CRITICS, CriticScale, default_prompt
from qagen.failures import Failure, FailureKind
from qagen.generation.passage_frame import Shown, framed, passages_text, render
from qagen.generation.replies import parse_rating, parse_reader_answer, parse_yes_no
from qagen.generation.vetting import reader_agrees
from qagen.llm.prompts import Prompt
from qagen.llm.task import Reply, Request, Role, SingleCallTask, user_request
from qagen.llm.untrusted import neutralize, passages
from qagen.llm.verdict_probability import expected_rating, yes_probability
from qagen.question_types import QUESTION_TYPES
from qagen.records import Chunk, Critique, Draft, Passages, Usage
from qagen.runs.store import record_key

YES_SCORE = 5
NO_SCORE = 1
"""A yes/no or reader verdict as written, on the critics' 1-5 scale: its two ends (what decides, with
token probabilities or a reader's agreement: `qagen.generation.vetting`)."""


def answer_agreement(read: str, drafted: str) -> float:
    """How far a reader's answer agrees with the drafted one: the larger of their SQuAD token F1 and
    the share of the drafted answer's tokens the reader's holds (a reader that answers in a sentence
    around the drafted phrase agrees)."""
    drafted_tokens = Counter(squad_tokens(drafted))
    if not drafted_tokens:
        return token_f1(read, drafted)
    held = sum((drafted_tokens & Counter(squad_tokens(read))).values()) / sum(drafted_tokens.values())
    return max(token_f1(read, drafted), held)


NOTHING_FOUND = "(The search found no passage that shares a word with the question.)"
"""A critic's `{retrieved}` when the search found nothing: said, not left blank."""


class Drafted(NamedTuple):
    """What a critic judges: a draft that parsed, the passages it was drafted from, and (for a critic
    that reads `{retrieved}`) what a search of the corpus finds for its question."""

    draft: Draft
    passages: Passages
    retrieved: tuple[Chunk, ...] = ()


class CriticTask(SingleCallTask[Drafted, Critique]):
    """One critic: rates the draft on `criterion` with the prompt's 1-5 scale."""

    role: Role = "critic"

    def __init__(
        self,
        criterion: str,
        model: str,
        prompt: Prompt,
        settings: Mapping[str, str] | None = None,
        *,
        scale: CriticScale = "rating",
        shared_prefix: bool = False,
    ) -> None:
        self.criterion = criterion
        self.shared_prefix = shared_prefix  # a prompt reading every passage opens with them (`passage_frame`)
        self.scale = scale
        self.name = f"critique:{criterion}"
        self.model = model
        self.prompt = prompt
        self.prompts = (prompt,)
        # Only the settings this prompt reads: they are part of the key, and nothing else is.
        self.settings = {name: value for name, value in (settings or {}).items() if name in prompt.variables}

    @classmethod
    def default(cls, criterion: str, model: str, *, audience: str) -> CriticTask:
        """A registered critic, with its prompt file as it ships."""
        spec = CRITICS.get(criterion)
        return cls(criterion, model, default_prompt(spec), {"audience": audience}, scale=spec.scale)

    @property
    def reads_retrieved(self) -> bool:
        """The critic reads what a search of the corpus finds for the question (`Drafted.retrieved`)."""
        return "retrieved" in self.prompt.variables

    def key(self, item: Drafted) -> str:
        settings = "\x00".join(self.settings[name] for name in sorted(self.settings))
        # What the search found is an input: a corpus chunked anew may find other chunks.
        found = ("\x00".join(chunk.id for chunk in item.retrieved),) if self.reads_retrieved else ()
        return record_key("critique", item.draft.id, self.criterion, self.prompt.sha256, self.model, settings, *found)

    def shown(self, item: Passages) -> dict[str, Shown]:
        """The prompt's passage placeholders and what each shows: `{context}` every passage,
        `{first_context}` and `{second_context}` one each."""
        variables = self.prompt.variables
        shown: dict[str, Shown] = {}
        if "context" in variables:
            shown["context"] = Shown(passages_text(item), tuple(range(len(item.chunks))))
        for position, (name, chunk) in enumerate(zip(("first_context", "second_context"), item.chunks, strict=False)):
            if name in variables:
                shown[name] = Shown(neutralize(chunk.text), (position,))
        return shown

    def request(self, item: Drafted) -> Request:
        # Only what the prompt reads is neutralised: the chunk is long, and most critics never see it.
        # With `shared_prefix`, a critic that reads every passage opens with them, as the draft's call did.
        inputs: dict[str, str] = {}
        variables = self.prompt.variables
        if "question" in variables:
            inputs["question"] = neutralize(item.draft.question or "")
        if "answer" in variables:
            inputs["answer"] = neutralize(item.draft.answer or "")
        if "retrieved" in variables:
            found = [chunk.text for chunk in item.retrieved]
            inputs["retrieved"] = passages(found) if found else NOTHING_FOUND
        shown = self.shown(item.passages)
        text = render(self.prompt, item.passages, shown, {**inputs, **self.settings}, shared=self.shared_prefix)
        return user_request(text)

    def frames(self, item: Passages) -> bool:
        """Whether the request about a draft of the item opens with its passages (`passage_frame.frame`)."""
        return self.shared_prefix and framed(self.shown(item), item)

    def parse(self, item: Drafted, reply: Reply) -> Critique:
        if self.scale == "yes_no":
            verdict = parse_yes_no(reply.text)
            if verdict.reason:
                return self._record(item, Failure.of(FailureKind(verdict.reason)), reply.verbatim, reply, None, None)
            score = YES_SCORE if verdict.yes else NO_SCORE
            return self._record(
                item, None, reply.verbatim, reply, score, None, probability=yes_probability(reply, verdict.offset)
            )
        if self.scale in ("reader", "lone_reader"):
            read = parse_reader_answer(reply.text)
            if read.reason:
                return self._record(item, Failure.of(FailureKind(read.reason)), reply.verbatim, reply, None, None)
            if not QUESTION_TYPES.get(item.passages.question_type).answer_in_passages:
                # An unanswerable question: what the search found must not answer it.
                score = YES_SCORE if read.answer is None else NO_SCORE
                return self._record(item, None, reply.verbatim, reply, score, read.answer)
            if read.answer is None:  # the reader says the passages do not answer the question
                score = YES_SCORE if self.scale == "lone_reader" else NO_SCORE
                return self._record(item, None, reply.verbatim, reply, score, None)
            agreement = answer_agreement(read.answer, self.expected_answer(item))
            score = YES_SCORE if reader_agrees(agreement) else NO_SCORE
            if self.scale == "lone_reader":  # one passage alone should not answer as both do
                score = YES_SCORE + NO_SCORE - score
            return self._record(item, None, reply.verbatim, reply, score, read.answer, agreement=agreement)
        parsed = parse_rating(reply.text)
        failure = Failure.of(FailureKind(parsed.reason)) if parsed.reason else None
        probability = expected_rating(reply, parsed.offset) if failure is None else None
        return self._record(
            item, failure, reply.verbatim, reply, parsed.score, parsed.rationale, probability=probability
        )

    def expected_answer(self, item: Drafted) -> str:
        """What a reader's answer is compared with: the drafted answer; for a lone reader of a draft composed
        from parts (a multi-hop question), the answers of the parts drafted from the passages it is not
        shown: its passage alone gives its own part's answer by construction, and must not give the other's."""
        if self.scale != "lone_reader" or not item.draft.parts:
            return item.draft.answer or ""
        shown = {position for placeholder in self.shown(item.passages).values() for position in placeholder.passages}
        return " ".join(part.answer or "" for position, part in enumerate(item.draft.parts) if position not in shown)

    def failed(self, item: Drafted, failure: Failure, reply: Reply | None = None) -> Critique:
        return self._record(item, failure, reply.verbatim if reply else failure.detail, reply, None, None)

    def _record(
        self,
        item: Drafted,
        failure: Failure | None,
        raw: str,
        reply: Reply | None,
        score: int | None,
        rationale: str | None,
        *,
        probability: float | None = None,
        agreement: float | None = None,
    ) -> Critique:
        return Critique(
            id=self.key(item),
            draft_id=item.draft.id,
            criterion=self.criterion,
            model=self.model,
            prompt_hash=self.prompt.hash,
            failure=failure,
            score=score if failure is None else None,
            rationale=rationale,
            probability=None if failure is not None or probability is None else round(probability, 4),
            agreement=None if agreement is None else round(agreement, 4),
            raw=raw,
            reasoning=reply.reasoning if reply else None,
            usage=reply.usage if reply else Usage(),
        )
