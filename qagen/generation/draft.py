"""The draft task: one factoid question and answer from a chunk (one LLM call)."""

from __future__ import annotations

from qagen.failures import Failure, FailureKind
from qagen.generation.replies import parse_factoid_qa
from qagen.llm.prompts import Prompt, load_prompt
from qagen.llm.task import Reply, Request, Role, SingleCallTask, user_request
from qagen.llm.untrusted import neutralize
from qagen.records import Chunk, Draft, Usage
from qagen.runs.store import record_key

QA_PROMPT = "qa_generation"


class DraftTask(SingleCallTask[Chunk, Draft]):
    """Ask the generator for a question/answer pair about a chunk, in the chunk's language."""

    name = "draft"
    role: Role = "generator"

    def __init__(self, model: str, prompt: Prompt | None = None) -> None:
        self.model = model
        self.prompt = prompt or load_prompt(QA_PROMPT)
        self.prompts = (self.prompt,)

    def key(self, item: Chunk) -> str:
        """The same chunk, prompt and model never cost a second call."""
        return record_key("draft", item.id, self.prompt.sha256, self.model)

    def request(self, item: Chunk) -> Request:
        # The chunk is untrusted text, neutralised (the prompt file puts it between data tags), so
        # a chunk that holds `Factoid question: ...` cannot pose as a reply.
        return user_request(self.prompt.render(context=neutralize(item.text)))

    def parse(self, item: Chunk, reply: Reply) -> Draft:
        parsed = parse_factoid_qa(reply.text)
        failure = Failure.of(FailureKind(parsed.reason)) if parsed.reason else None
        return self._record(
            item,
            failure,
            reply=reply,
            raw=reply.verbatim,
            question=parsed.question,
            answer=parsed.answer,
            evidence=parsed.evidence,
        )

    def failed(self, item: Chunk, failure: Failure, reply: Reply | None = None) -> Draft:
        # No reply: keep the (redacted) error in `raw`, so the candidate row shows what happened.
        return self._record(item, failure, reply=reply, raw=reply.verbatim if reply else failure.detail)

    def _record(
        self,
        item: Chunk,
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
            chunk_id=item.id,
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


def too_long(draft: Draft, max_question_chars: int, max_answer_chars: int) -> str | None:
    """Why a parsed draft is no factoid (`question_too_long`, `answer_too_long`), or None.

    A check of the run's settings, not of the reply: it is made when drafts are critiqued and
    filtered, so a changed limit applies to drafts already made, without a new call.
    """
    if len(draft.question or "") > max_question_chars:
        return FailureKind.QUESTION_TOO_LONG.value
    if len(draft.answer or "") > max_answer_chars:
        return FailureKind.ANSWER_TOO_LONG.value
    return None
