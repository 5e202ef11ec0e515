"""A rerank endpoint: `POST {url}/rerank` on an OpenAI-compatible server (vLLM, TEI, LiteLLM...).

Servers disagree on the shapes, so one body serves both families and either reply is read:

- vLLM (and Cohere, Jina, LiteLLM) take `{"model", "query", "documents", "top_n"}` and answer
  `{"results": [{"index", "relevance_score"}, ...]}` (some say `data` for `results`);
- TEI (text-embeddings-inference) takes `{"query", "texts"}` and answers `[{"index", "score"}, ...]`.

The body carries the candidates under both names (each server ignores the field it does not
know), and `top_n` asks for every candidate's score, so the record holds a complete order.

The call goes through the official `openai` client's generic `post`, as chat calls do
(`qagen.llm.backends`): the server's key, credentials in the URL, retries with backoff on
429/5xx and dropped connections honouring `Retry-After`, and the timeout are the same. A call that
still fails is recorded on its question (`Failure`); only what every call would meet alike (a
rejected key, a server with no rerank endpoint, a server that cannot be reached at all) stops the run.
"""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

from qagen.errors import ConfigError, LLMUnavailableError
from qagen.evaluate.systems.rerank.base import RankedScores, RerankItem, ScoringTask, Unranked
from qagen.failures import Failure, FailureKind
from qagen.llm.backends import ModelSettings, openai_client
from qagen.records import Usage
from qagen.redaction import redact, redact_url

__all__ = ["EndpointReranker", "parse_rerank_reply", "rerank_body"]

_RAW_LIMIT = 4000
"""Characters of a reply body kept in the record (the scores of 20 candidates take about 1,000)."""


def rerank_body(model: str, item: RerankItem) -> dict[str, Any]:
    """The request body: vLLM's fields and TEI's `texts`, every candidate's score asked for."""
    texts = [context.text for context in item.candidates]
    return {"model": model, "query": item.question, "documents": texts, "texts": texts, "top_n": len(texts)}


def parse_rerank_reply(body: bytes, count: int) -> RankedScores | Failure:
    """The (position, score) pairs of a rerank reply for `count` candidates, in either shape.

    Every result must name a distinct candidate (an integer `index` below `count`) and give a
    finite number (`relevance_score`, or TEI's `score`); a reply that breaks this is a
    `parse_failure` with the body kept, never partly read. Candidates it leaves out keep their
    retrieval order after the scored ones.
    """
    raw = body.decode("utf-8", errors="replace")[:_RAW_LIMIT]
    try:
        data = json.loads(body)
    except ValueError:
        return Failure.of(FailureKind.PARSE_FAILURE, f"the rerank reply is not JSON: {raw[:200]}")
    results = (
        data if isinstance(data, list) else data.get("results", data.get("data")) if isinstance(data, dict) else None
    )
    if not isinstance(results, list) or (count and not results):
        return Failure.of(FailureKind.PARSE_FAILURE, f"the rerank reply holds no results: {raw[:200]}")
    placed: list[tuple[int, float]] = []
    seen: set[int] = set()
    for result in results:
        index = result.get("index") if isinstance(result, dict) else None
        score = result.get("relevance_score", result.get("score")) if isinstance(result, dict) else None
        valid_index = isinstance(index, int) and not isinstance(index, bool) and 0 <= index < count
        valid_score = isinstance(score, int | float) and not isinstance(score, bool) and math.isfinite(score)
        if not valid_index or not valid_score or index in seen:
            return Failure.of(FailureKind.PARSE_FAILURE, f"unreadable rerank result {json.dumps(result)[:200]}")
        assert isinstance(index, int) and isinstance(score, int | float)
        seen.add(index)
        placed.append((index, float(score)))
    usage = data.get("usage") if isinstance(data, dict) else None
    tokens = (usage.get("prompt_tokens") or usage.get("total_tokens") or 0) if isinstance(usage, dict) else 0
    return RankedScores(placed, raw=raw, usage=Usage(input_tokens=int(tokens) if isinstance(tokens, int) else 0))


class EndpointReranker:
    """Scores the candidates with the reranking model `model` served at `url` (`POST {url}/rerank`)."""

    def __init__(
        self,
        model: str,
        url: str | None,
        *,
        api_key_env: str | None = None,
        timeout: float = 120.0,
        max_retries: int = 6,
        concurrency: int = 16,
    ) -> None:
        if not model:
            raise ConfigError(
                "The rerank endpoint needs the name of the model it serves (`rerank`).", settings=("rerank",)
            )
        if not url:
            raise ConfigError(
                "The rerank endpoint needs its server's URL: give `rerank_url` (or the reader's `base_url`).",
                settings=("rerank_url", "base_url"),
            )
        self.model = model
        self.settings = ModelSettings(
            spec=f"openai:{model}", base_url=url, api_key_env=api_key_env, timeout=timeout, max_retries=max_retries
        )
        self.where = redact_url(url)
        self.concurrency = concurrency
        self.task = ScoringTask(self.name, self.describe(), self._score)
        self._client: Any = None
        self._slots: asyncio.Semaphore | None = None
        self._succeeded = 0

    @property
    def name(self) -> str:
        return f"endpoint-{self.model.rsplit('/', 1)[-1]}"

    def describe(self) -> dict[str, object]:
        # The model, not the server: another server of the same model gives the same scores.
        return {"reranker": "endpoint", "model": self.model}

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

    async def _score(self, item: RerankItem) -> RankedScores | Unranked:
        import httpx

        if self._client is None:
            # Made in the event loop that uses it (its connections belong to that loop).
            self._client = openai_client(self.settings, connections=self.concurrency)
            self._slots = asyncio.Semaphore(self.concurrency)
        assert self._slots is not None
        async with self._slots:
            try:
                response = await self._client.post(
                    "/rerank", body=rerank_body(self.model, item), cast_to=httpx.Response
                )
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - the client's own error types, each classified here
                return Unranked(self._failure(exc))
        self._succeeded += 1
        parsed = parse_rerank_reply(response.content, len(item.candidates))
        if isinstance(parsed, Failure):
            return Unranked(parsed, raw=response.content.decode("utf-8", errors="replace")[:_RAW_LIMIT])
        return parsed

    def _failure(self, exc: Exception) -> Failure:
        """The failure of a call that got no usable answer; raises for what every call would meet."""
        status = getattr(exc, "status_code", None)
        detail = redact(f"{type(exc).__name__}: {exc}")[:500]
        if status == 401:
            variable = self.settings.api_key_env or "OPENAI_API_KEY"
            raise LLMUnavailableError(f"{self.where} rejected the rerank endpoint's API key (401); check {variable}.")
        if status == 403:
            raise LLMUnavailableError(f"{self.where} refused access to the rerank endpoint (403).")
        if status == 404:
            raise ConfigError(
                f"{self.where} has no rerank endpoint for the model '{self.model}' (404 on /rerank); give the URL "
                "of a server that serves a reranking model (vLLM, TEI) as `rerank_url`.",
                settings=("rerank_url",),
            )
        if status is None and self._succeeded == 0:
            raise LLMUnavailableError(
                f"Cannot reach the rerank endpoint at {self.where} ({' '.join(detail.split())[:200]}); "
                "is the server running and is `rerank_url` right?",
                settings=("rerank_url",),
            )
        kinds = {429: FailureKind.RATE_LIMITED, 400: FailureKind.BAD_REQUEST, 422: FailureKind.BAD_REQUEST}
        if isinstance(status, int):
            kind = kinds.get(status, FailureKind.SERVER_ERROR if status >= 500 else FailureKind.API_ERROR)
        else:
            kind = FailureKind.CONNECTION_ERROR
        return Failure.of(kind, detail)
