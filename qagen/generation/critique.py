"""The critics: each rates a drafted question 1-5, rationale first (one LLM call each).

A critic is a prompt file plus a `CriticTask`: what the critic sees is decided by the prompt's own
placeholders, so the resume key cannot miss an input. `{question}` is the drafted question and
`{context}` its chunk (both untrusted, neutralised, between the prompt's data tags); any other
placeholder is a setting of the run (`{audience}`), given in `settings`, which goes in as written
and into the key. Which critics a build asks, in which order, is the registry's (`qagen.critics`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from qagen.critics import CRITICS, default_prompt
from qagen.failures import Failure, FailureKind
from qagen.generation.replies import parse_rating
from qagen.llm.prompts import Prompt
from qagen.llm.task import Reply, Request, Role, SingleCallTask, user_request
from qagen.llm.untrusted import neutralize
from qagen.records import Chunk, Critique, Draft, Usage
from qagen.runs.store import record_key


class Drafted(NamedTuple):
    """What a critic judges: a draft that parsed, and the chunk it was drafted from."""

    draft: Draft
    chunk: Chunk


class CriticTask(SingleCallTask[Drafted, Critique]):
    """One critic: rates the draft on `criterion` with the prompt's 1-5 scale."""

    role: Role = "critic"

    def __init__(self, criterion: str, model: str, prompt: Prompt, settings: Mapping[str, str] | None = None) -> None:
        self.criterion = criterion
        self.name = f"critique:{criterion}"
        self.model = model
        self.prompt = prompt
        self.prompts = (prompt,)
        # Only the settings this prompt reads: they are part of the key, and nothing else is.
        self.settings = {name: value for name, value in (settings or {}).items() if name in prompt.variables}

    @classmethod
    def default(cls, criterion: str, model: str, *, audience: str) -> CriticTask:
        """A registered critic, with its prompt file as it ships."""
        return cls(criterion, model, default_prompt(CRITICS.get(criterion)), {"audience": audience})

    def key(self, item: Drafted) -> str:
        settings = "\x00".join(self.settings[name] for name in sorted(self.settings))
        return record_key("critique", item.draft.id, self.criterion, self.prompt.sha256, self.model, settings)

    def request(self, item: Drafted) -> Request:
        # Only what the prompt reads is neutralised: the chunk is long, and most critics never see it.
        inputs: dict[str, str] = {}
        if "question" in self.prompt.variables:
            inputs["question"] = neutralize(item.draft.question or "")
        if "context" in self.prompt.variables:
            inputs["context"] = neutralize(item.chunk.text)
        return user_request(self.prompt.render(**inputs, **self.settings))

    def parse(self, item: Drafted, reply: Reply) -> Critique:
        parsed = parse_rating(reply.text)
        failure = Failure.of(FailureKind(parsed.reason)) if parsed.reason else None
        return self._record(item, failure, reply.verbatim, reply, parsed.score, parsed.rationale)

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
            raw=raw,
            reasoning=reply.reasoning if reply else None,
            usage=reply.usage if reply else Usage(),
        )
