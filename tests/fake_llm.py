"""An in-process LLM for tests that need the stand-in's replies but not its HTTP.

`FakeLLM.client()` is an `LLMClient` on a backend of this module (qagen's provider seam,
`qagen.llm.backends.ChatBackend`), accepted wherever qagen takes a model. It builds the body qagen
would send (`chat_body`), answers it with the function the stand-in server answers every
chat body with (`standins.llm.routes.answer`: its reply and shape policies), wraps that in the
server's `chat.completion` payload and reads it back with qagen's own `parse_completion`. So a
test gets what the HTTP stand-in would have said, with no server thread, socket or HTTP client.

Transport, faults and retries, the Batch API, the CLI and end-to-end runs keep the HTTP stand-in
(`standins.llm.server.StandInLLM`, the `llm` fixture).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections import Counter
from typing import Any

from qagen.llm.backends import ModelSettings
from qagen.llm.client import LLMClient
from qagen.llm.completions import chat_body, parse_completion
from qagen.llm.task import Reply, Request
from standins.llm.knobs import REPLY_FIELDS, SHAPE_FIELDS, Knobs
from standins.llm.log import LogEntry, new_entry
from standins.llm.payloads import completion
from standins.llm.routes import answer, describe

SPEC = "openai:stand-in"


class FakeLLM:
    """The stand-in's replies, in-process. Knobs are `StandInLLM`'s reply and shape knobs
    (`pass_rate`, `malformed_rate`, `format_variety`, `think_rate`, ...); `log` is its request log."""

    def __init__(self, **knobs: Any) -> None:
        self.knobs = Knobs()
        self.log: list[LogEntry] = []
        self.prompts: list[str] = []
        """The last user message of every request, in the order they came."""
        self._replies: Counter[str] = Counter()
        self.configure(**knobs)

    def configure(self, **changes: Any) -> None:
        """Change reply and shape knobs for subsequent requests (`StandInLLM.configure`'s names)."""
        unknown = set(changes) - REPLY_FIELDS - SHAPE_FIELDS
        if unknown:
            raise TypeError(f"not a reply or shape knob: {sorted(unknown)} (transport knobs need the HTTP stand-in)")
        self.knobs = dataclasses.replace(
            self.knobs,
            replies=dataclasses.replace(self.knobs.replies, **{k: v for k, v in changes.items() if k in REPLY_FIELDS}),
            shaping=dataclasses.replace(self.knobs.shaping, **{k: v for k, v in changes.items() if k in SHAPE_FIELDS}),
        )

    def client(self, spec: str = SPEC, **settings: Any) -> LLMClient:
        """A ready `LLMClient` answered by this fake: pass it wherever qagen takes a model."""
        model = ModelSettings(spec=spec, **settings)
        return LLMClient(_Backend(self, model), model)

    def answer(self, request: Request, settings: ModelSettings) -> Reply:
        """The reply to `request` as a client with `settings` would read it from the stand-in."""
        body = chat_body(settings, request)
        sha = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
        # The n-th reply to the same body, as the server counts them: it chooses malformed replies.
        self._replies[sha] += 1
        said, shaped = answer(body, self.knobs, sha, self._replies[sha])
        entry = new_entry("POST", "/v1/chat/completions", sha)
        entry["attempt"] = self._replies[sha]
        entry["model"] = body["model"]
        entry["status_code"] = 200
        describe(entry, said, shaped)
        self.log.append(entry)
        self.prompts.append(request[-1].content)
        return parse_completion(json.dumps(completion(body, body["messages"], shaped, sha)).encode())


class _Backend:
    """One client's view of a `FakeLLM`: its settings make the body (model name, output cap)."""

    def __init__(self, llm: FakeLLM, settings: ModelSettings) -> None:
        self._llm = llm
        self._settings = settings

    async def reply(self, request: Request) -> Reply:
        return self._llm.answer(request, self._settings)

    async def aclose(self) -> None:
        """Nothing to close."""
