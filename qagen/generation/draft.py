"""The draft task: one question and answer of a question type from its passages (one LLM call)."""

from __future__ import annotations

from pathlib import PurePath

from qagen.failures import Failure, FailureKind
from qagen.generation.passage_frame import Shown, framed, render
from qagen.generation.replies import echoes_example, parse_labelled_qa, prompt_examples
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


def document_name(source: str) -> str:
    """A document's name as a draft prompt shows it: its file name without folders and extensions
    (`library/shelve.rst` -> `shelve`, `git-cherry-pick.html` -> `git-cherry-pick`), or the source as
    it is when it is no path (a dataset row's own source)."""
    name = PurePath(source).name
    return name.split(".", 1)[0] or source


class DraftTask(SingleCallTask[Passages, Draft]):
    """Ask the generator for a question/answer pair of one question type about its passages, in
    their language."""

    role: Role = "generator"

    def __init__(
        self,
        model: str,
        prompt: Prompt | None = None,
        question_type: QuestionTypeSpec = FACTOID,
        *,
        shared_prefix: bool = False,
    ) -> None:
        self.model = model
        self.shared_prefix = shared_prefix  # open the request with the passages (`BuildConfig.shared_prefix`)
        self.question_type = question_type
        self.name = "draft" if question_type is FACTOID else f"draft:{question_type.name}"
        self.prompt = prompt or question_type.load_prompt(question_type.draft_prompt)
        self.prompts = (self.prompt,)
        self.examples = prompt_examples(self.prompt.text, question_type.question_label)

    def key(self, item: Passages) -> str:
        """The same passages, prompt and model never cost a second call (the prompt names the type;
        the linking terms count when the prompt shows them). A factoid's key is the one every build
        made before question types: the chunk, the prompt and the model."""
        link = ("\x00".join(item.link),) if "link" in self.prompt.variables else ()
        return record_key("draft", *item.chunk_ids, self.prompt.sha256, self.model, *link)

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
        failure = Failure.of(FailureKind(parsed.reason)) if parsed.reason else None
        if failure is None and echoes_example(parsed.question or "", self.examples):
            failure = Failure.of(FailureKind.TEMPLATE_ECHO, "the question copies the prompt's example")
        answer = parsed.answer
        if answer is not None and self.question_type.reference_answer is not None:
            answer = self.question_type.reference_answer(answer)
        return self._record(
            item,
            failure,
            reply=reply,
            raw=reply.verbatim,
            question=parsed.question,
            answer=answer,
            evidence=parsed.evidence,
        )

    def failed(self, item: Passages, failure: Failure, reply: Reply | None = None) -> Draft:
        # No reply: keep the (redacted) error in `raw`, so the candidate row shows what happened.
        return self._record(item, failure, reply=reply, raw=reply.verbatim if reply else failure.detail)

    def _record(
        self,
        item: Passages,
        failure: Failure | None,
        *,
        raw: str,
        reply: Reply | None,
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
            reasoning=reply.reasoning if reply else None,
            usage=reply.usage if reply else Usage(),
        )
