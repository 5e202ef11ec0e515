"""Rerankers named by a spec string: `none`, `cross-encoder:PATH`, `endpoint:MODEL`, `reader`."""

from __future__ import annotations

import os
import re
from typing import NamedTuple

from qagen.errors import ConfigError
from qagen.evaluate.systems.rerank.base import Reranker
from qagen.llm.backends import ModelSettings

__all__ = ["RERANK_KINDS", "RerankSpec", "make_reranker", "parse_rerank", "reranker_for"]

RERANK_KINDS = ("none", "cross-encoder:PATH", "endpoint:MODEL", "reader")


class RerankSpec(NamedTuple):
    """A reranker as named: its kind and argument (the model folder, the served model's name)."""

    kind: str
    argument: str = ""

    @property
    def slug(self) -> str:
        """A short name for directories: `none`, `reader`, `ce-<folder>`, `endpoint-<model>`."""
        if self.kind in ("none", "reader"):
            return self.kind
        tail = self.argument.rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1]
        prefix = "ce" if self.kind == "cross-encoder" else self.kind
        return f"{prefix}-{re.sub(r'[^A-Za-z0-9._-]+', '-', tail) or 'model'}"


def parse_rerank(spec: str) -> RerankSpec:
    """The reranker a spec names; a ConfigError listing the forms for anything else."""
    text = spec.strip()
    kind, _, argument = text.partition(":")
    kind, argument = kind.strip().lower(), argument.strip()
    if kind in ("none", "reader") and not argument:
        return RerankSpec(kind)
    if kind in ("cross-encoder", "endpoint") and argument:
        return RerankSpec(kind, argument)
    raise ConfigError(
        f"Unknown reranker '{spec}' in `rerank`; name one as {', '.join(RERANK_KINDS)}.",
        settings=("rerank",),
    )


def reranker_for(
    spec: RerankSpec, reader: ModelSettings, *, rerank_url: str | None = None, concurrency: int = 16
) -> Reranker | None:
    """The reranker of `spec` for a baseline whose reader is `reader` (None for `none`).

    The listwise reranker asks the reader model itself; a rerank endpoint is reached at
    `rerank_url`, else at the reader's server, with the reader's key, timeout and retries.
    """
    if spec.kind == "none":
        return None
    if spec.kind == "cross-encoder":
        from qagen.evaluate.systems.rerank.cross_encoder import CrossEncoderReranker

        return CrossEncoderReranker(spec.argument)
    if spec.kind == "endpoint":
        from qagen.evaluate.systems.rerank.endpoint import EndpointReranker

        return EndpointReranker(
            spec.argument,
            rerank_url or reader.base_url or os.environ.get("OPENAI_BASE_URL"),
            api_key_env=reader.api_key_env,
            timeout=reader.timeout,
            max_retries=reader.max_retries,
            concurrency=concurrency,
        )
    from qagen.evaluate.systems.rerank.listwise import ListwiseReranker

    return ListwiseReranker(reader.spec)


def make_reranker(
    rerank: str | Reranker | None, reader: ModelSettings, *, rerank_url: str | None = None
) -> Reranker | None:
    """The reranker `rerank` names (a spec, checked by `parse_rerank`) or is, for a baseline read by `reader`."""
    if rerank is None or not isinstance(rerank, str):
        return rerank
    return reranker_for(parse_rerank(rerank), reader, rerank_url=rerank_url)
