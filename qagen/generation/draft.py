"""The draft task: one question and answer of a question type from its passages (one LLM call), or
several from the same passages in one call (`BuildConfig.per_chunk`).

Of a call that asks for several pairs, the reply is one record (`PairsCall`: its usage, no question),
stored once whichever pair's draft asked first, and each pair is a draft of its own, read from it
(`DraftTask.from_reply`, no call): a build stopped after the reply came asks nothing again. A reply
with fewer pairs than asked gives a draft of each pair it holds and, for each it lacks, a failed draft
(`missing_pair`), never none.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import PurePath

from qagen.errors import ConfigError
from qagen.failures import Failure, FailureKind
from qagen.generation.passage_frame import Shown, framed, render
from qagen.generation.replies import ParsedQA, echoes_example, parse_labelled_qa, parse_pairs, prompt_examples
from qagen.llm.normalise import normalise_reply
from qagen.llm.prompts import Prompt
from qagen.llm.task import Reply, Request, Role, SingleCallTask, user_request
from qagen.llm.untrusted import neutralize
from qagen.question_types.factoid import FACTOID
from qagen.question_types.spec import PASSAGE_PLACEHOLDERS, QuestionTypeSpec
from qagen.records import Draft, Passages, Usage
from qagen.runs.store import record_key

QA_PROMPT = FACTOID.draft_prompt


DOCUMENT_PLACEHOLDERS = ("document", "second_document")
"""The draft prompt's placeholders for the name of each passage's document, in order (`{document}`:
the first, or only, passage's): a question can then name the command or object it is about, which the
passage itself often never says (git's man pages: the color option of which command?)."""


@lru_cache(maxsize=4096)
def document_name(source: str) -> str:
    """A document's name as a draft prompt shows it: its file name without folders and extensions
    (`library/shelve.rst` -> `shelve`, `git-cherry-pick.html` -> `git-cherry-pick`), or the source as
    it is when it is no path (a dataset row's own source)."""
    name = PurePath(source).name
    return name.split(".", 1)[0] or source


PAIRS_PLACEHOLDER = "pairs"
"""The placeholder of a prompt that asks for several pairs (`QuestionTypeSpec.pairs_prompt`): how many."""


class DraftTask(SingleCallTask[Passages, Draft]):
    """Ask the generator for a question/answer pair of one question type about its passages, in
    their language; or, with `per_chunk` over 1, read one pair of a reply that holds several
    (`from_reply`: the call is `calls`'s, made once for them all)."""

    role: Role = "generator"

    def __init__(
        self,
        model: str,
        prompt: Prompt | None = None,
        question_type: QuestionTypeSpec = FACTOID,
        *,
        shared_prefix: bool = False,
        per_chunk: int = 1,
    ) -> None:
        self.model = model
        self.shared_prefix = shared_prefix  # open the request with the passages (`BuildConfig.shared_prefix`)
        self.question_type = question_type
        self.per_chunk = per_chunk
        """The pairs one call asks for (`BuildConfig.pairs_per_call`)."""
        self.name = "draft" if question_type is FACTOID else f"draft:{question_type.name}"
        if prompt is None:
            named = question_type.pairs_prompt if per_chunk > 1 else question_type.draft_prompt
            prompt = question_type.load_prompt(named or question_type.draft_prompt)
        if (PAIRS_PLACEHOLDER in prompt.variables) != (per_chunk > 1):
            raise ConfigError(
                f"The prompt {prompt.name} {'asks' if per_chunk == 1 else 'does not ask'} for several pairs "
                f"({{{PAIRS_PLACEHOLDER}}}), and the build asks for {per_chunk} a call (`per_chunk`); give a prompt "
                "that asks for as many (`prompts_dir`).",
                settings=("per_chunk", "prompts_dir"),
            )
        self.prompt = prompt
        self.prompts = (self.prompt,)
        self.examples = prompt_examples(self.prompt.text, question_type.question_label)
        self.calls = PairsCall(self) if per_chunk > 1 else None
        """The call that asks for several pairs, whose record holds the reply (None: one pair a call)."""

    def key(self, item: Passages) -> str:
        """The same passages, prompt and model never cost a second call (the prompt names the type;
        the linking terms count when the prompt shows them). A factoid's key is the one every build
        made before question types: the chunk, the prompt and the model. A pair of a reply of several:
        its place in the reply, and how many the call asked for, as well."""
        if self.per_chunk > 1:
            return self._key(item, f"pair {item.pair} of {self.per_chunk}")
        return self._key(item)

    def reply_key(self, item: Passages) -> str:
        """The record id of the reply a pair is read from (every pair of the same call has the same)."""
        return self._key(item, f"{self.per_chunk} pairs")

    def _key(self, item: Passages, *pairs: str) -> str:
        link = ("\x00".join(item.link),) if "link" in self.prompt.variables else ()
        return record_key("draft", *item.chunk_ids, self.prompt.sha256, self.model, *link, *pairs)

    def shown(self, item: Passages) -> dict[str, Shown]:
        """The prompt's passage placeholders and what each shows: `{context}` the first (or only)
        passage, `{first_context}`, `{second_context}`... each its own."""
        variables = self.prompt.variables
        shown: dict[str, Shown] = {}
        if "context" in variables:
            shown["context"] = Shown(neutralize(item.first.text), (0,))
        shown.update(
            (name, Shown(neutralize(chunk.text), (position,)))
            for position, (name, chunk) in enumerate(zip(PASSAGE_PLACEHOLDERS, item.chunks, strict=False))
            if name in variables
        )
        return shown

    def request(self, item: Passages) -> Request:
        # The passages are untrusted text, neutralised (the prompt file puts them between data tags),
        # so a chunk that holds `Factoid question: ...` cannot pose as a reply. The linking terms are
        # content words (letters and digits only): no marker can hide in them. With `shared_prefix` the
        # passages open the message (`passage_frame`), as they open every later call about the draft.
        values: dict[str, str] = {}
        variables = self.prompt.variables
        if PAIRS_PLACEHOLDER in variables:
            values[PAIRS_PLACEHOLDER] = str(self.per_chunk)
        if "link" in variables:
            values["link"] = ", ".join(item.link)
        values.update(
            (name, neutralize(document_name(chunk.source)))
            for name, chunk in zip(DOCUMENT_PLACEHOLDERS, item.chunks, strict=False)
            if name in variables
        )
        return user_request(render(self.prompt, item, self.shown(item), values, shared=self.shared_prefix))

    def frames(self, item: Passages) -> bool:
        """Whether the request about the item opens with its passages (`passage_frame.frame`)."""
        return self.shared_prefix and framed(self.shown(item), item)

    def parse(self, item: Passages, reply: Reply) -> Draft:
        parsed = parse_labelled_qa(
            reply.text, self.question_type.question_label, answer_optional=not self.question_type.answer_drafted
        )
        return self._read(item, parsed, reply.verbatim, reply.reasoning, reply.usage)

    def _read(self, item: Passages, parsed: ParsedQA, raw: str, reasoning: str | None, usage: Usage) -> Draft:
        """The draft of a reply's pair: its question and answer, or why there are none."""
        failure = Failure.of(FailureKind(parsed.reason)) if parsed.reason else None
        if failure is None and echoes_example(parsed.question or "", self.examples):
            failure = Failure.of(FailureKind.TEMPLATE_ECHO, "the question copies the prompt's example")
        answer = parsed.answer
        if answer is not None and self.question_type.reference_answer is not None:
            answer = self.question_type.reference_answer(answer)
        return self._record(
            item,
            failure,
            raw=raw,
            reasoning=reasoning,
            usage=usage,
            question=parsed.question,
            answer=answer,
            evidence=parsed.evidence,
        )

    def failed(self, item: Passages, failure: Failure, reply: Reply | None = None) -> Draft:
        # No reply: keep the (redacted) error in `raw`, so the candidate row shows what happened.
        return self._record(
            item,
            failure,
            raw=reply.verbatim if reply else failure.detail,
            reasoning=reply.reasoning if reply else None,
            usage=reply.usage if reply else Usage(),
        )

    def from_reply(self, item: Passages, reply: Draft) -> Draft:
        """The draft of the item's pair, read from the record of its call (`PairsCall`), which holds the
        reply: the pair at the item's place in it; a failed draft with the call's failure when the call
        failed, with the reply's reason when no pair could be read from it, and `missing_pair` when the
        reply holds fewer pairs than the item's place. Its usage is the call's record's, not its own."""
        assert item.pair is not None, "a draft of one pair a call has no reply of several"
        if reply.failure is not None:
            return self._pair(self._record(item, reply.failure, raw=reply.raw or "", reasoning=reply.reasoning), reply)
        # What the parsers read of the reply: as it was read when it came (`normalise_reply` is pure).
        text = normalise_reply(reply.raw or "", Usage()).text
        read = parse_pairs(
            text,
            self.question_type.question_label,
            self.per_chunk,
            answer_optional=not self.question_type.answer_drafted,
        )
        if read.reason:
            failure = Failure.of(FailureKind(read.reason))
            return self._pair(self._record(item, failure, raw=reply.raw or "", reasoning=reply.reasoning), reply)
        if item.pair > len(read.pairs):
            failure = Failure.of(
                FailureKind.MISSING_PAIR,
                f"the reply holds {len(read.pairs)} of the {self.per_chunk} pairs asked for",
            )
            return self._pair(self._record(item, failure, raw=reply.raw or "", reasoning=reply.reasoning), reply)
        pair = read.pairs[item.pair - 1]
        return self._pair(self._read(item, pair.qa, pair.text, reply.reasoning, Usage()), reply)

    @staticmethod
    def _pair(draft: Draft, reply: Draft) -> Draft:
        return draft.model_copy(update={"reply_id": reply.id})

    def _record(
        self,
        item: Passages,
        failure: Failure | None,
        *,
        raw: str,
        reasoning: str | None,
        usage: Usage | None = None,
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
            question=question if failure is None else None,
            answer=answer if failure is None else None,
            evidence=evidence if failure is None else None,
            raw=raw,
            reasoning=reasoning,
            usage=usage or Usage(),
            pair=item.pair if self.per_chunk > 1 else None,
        )


class PairsCall(SingleCallTask[Passages, Draft]):
    """The call that asks for several pairs of one draft task (`DraftTask.per_chunk`): its record holds
    the reply, its usage and the call's failure when it has one, and no question (each pair is a draft
    of its own: `DraftTask.from_reply`). Every pair of the same passages sends the same request, so
    the executors send it once and wait for it together; the record is stored once."""

    role: Role = "generator"

    def __init__(self, drafts: DraftTask) -> None:
        self.drafts = drafts
        self.model = drafts.model
        self.name = f"{drafts.name} x{drafts.per_chunk}"
        self.prompts = drafts.prompts

    def key(self, item: Passages) -> str:
        return self.drafts.reply_key(item)

    def request(self, item: Passages) -> Request:
        return self.drafts.request(item)

    def parse(self, item: Passages, reply: Reply) -> Draft:
        return self._record(item, None, reply)

    def failed(self, item: Passages, failure: Failure, reply: Reply | None = None) -> Draft:
        return self._record(item, failure, reply)

    def _record(self, item: Passages, failure: Failure | None, reply: Reply | None) -> Draft:
        return Draft(
            id=self.key(item),
            chunk_id=item.first.id,
            model=self.model,
            prompt_hash=self.drafts.prompt.hash,
            failure=failure,
            # No reply: the (redacted) error, as a draft keeps it.
            raw=reply.verbatim if reply is not None else failure.detail if failure is not None else "",
            reasoning=reply.reasoning if reply is not None else None,
            usage=reply.usage if reply is not None else Usage(),
            pairs=self.drafts.per_chunk,
        )
