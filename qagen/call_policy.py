"""How long qagen waits for one reply and how often it asks again: the one policy every client reads.

The models (generator, critics, judges, the baseline's reader, embeddings and reranker servers:
`qagen.llm.backends.ModelSettings` takes its defaults from here) and the RAG system under test (an
HTTP endpoint or a Python function: `qagen.evaluate.systems.endpoint`, `qagen.evaluate.systems.callable`)
all take `timeout` and `max_retries` from one policy, so a user who asks for 3 seconds and no retry
gets that from every part of the run, not the defaults of whichever client was built without them.
"""

from __future__ import annotations

import random

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["DEFAULT_MAX_RETRIES", "DEFAULT_TIMEOUT", "CallPolicy"]

DEFAULT_TIMEOUT = 120.0
"""Seconds to wait for one reply: a long answer from a slow local model fits, a hung server does not."""
DEFAULT_MAX_RETRIES = 6
"""Retries of a call that failed in a way that may pass (429, 5xx, a timeout, a dropped connection)."""
_MAX_DELAY = 8.0  # the `openai` client's cap on one pause, which the models' calls follow too


class CallPolicy(BaseModel):
    """How long to wait for one reply, and how often to ask again after a failure that may pass."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    timeout: float = Field(default=DEFAULT_TIMEOUT, gt=0, description="Seconds to wait for one reply.")
    max_retries: int = Field(
        default=DEFAULT_MAX_RETRIES,
        ge=0,
        description="Retries after a timeout, a 429 or 5xx, or a dropped connection (0: ask once).",
    )
    backoff: float = Field(
        default=0.5, ge=0, description="Seconds before the first retry; doubled for each next one, up to 8 s."
    )

    @property
    def attempts(self) -> int:
        """Calls made at most for one question: the first and its retries."""
        return self.max_retries + 1

    def delay(self, retry: int) -> float:
        """Seconds to wait before retry number `retry + 1`: exponential backoff with jitter, which
        spreads the retries of many questions failing at once."""
        return float(min(self.backoff * 2**retry, _MAX_DELAY) * (1 + 0.25 * random.random()))
