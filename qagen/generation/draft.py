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
            item, failure, raw=reply.text, usage=reply.usage, question=parsed.question, answer=parsed.answer
        )

    def failed(self, item: Chunk, failure: Failure) -> Draft:
        # No reply: keep the (redacted) error in `raw`, so the candidate row shows what happened.
        return self._record(item, failure, raw=failure.detail)

    def _record(
        self,
        item: Chunk,
        failure: Failure | None,
        *,
        raw: str,
        usage: Usage | None = None,
        question: str | None = None,
        answer: str | None = None,
    ) -> Draft:
        return Draft(
            id=self.key(item),
            chunk_id=item.id,
            model=self.model,
            prompt_hash=self.prompt.hash,
            failure=failure,
            question=question if failure is None else None,
            answer=answer if failure is None else None,
            raw=raw,
            usage=usage or Usage(),
        )
