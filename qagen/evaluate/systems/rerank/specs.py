"""Rerankers named by a spec string (`none`, `cross-encoder:PATH`, `endpoint:MODEL`, `reader`): each
kind declared once as a `RerankerKind` in `RERANKERS`, qagen's and those registered in Python or
brought by installed packages (entry points `qagen.rerankers`)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from qagen.errors import ConfigError
from qagen.evaluate.systems.rerank.base import Reranker
from qagen.llm.backends import ModelSettings
from qagen.registry import Registry

__all__ = [
    "RERANKERS",
    "RerankSpec",
    "RerankerKind",
    "RerankerSettings",
    "make_reranker",
    "parse_rerank",
    "rerank_forms",
    "reranker_for",
]


class RerankerSettings(NamedTuple):
    """What a reranker may be made with besides its argument: the baseline's settings."""

    reader: ModelSettings
    """The baseline's reader: its model (a listwise reranker asks it), server, key, timeout and retries."""
    rerank_url: str | None = None
    """The server of a rerank endpoint (`rerank_url`); None: the reader's."""
    concurrency: int = 16
    """Requests in flight at once, for a reranker that calls a server."""


MakeReranker = Callable[[str, RerankerSettings], "Reranker | None"]
"""A reranker from its argument (the text after `kind:`, empty for a kind that takes none); None: no reranking."""


@dataclass(frozen=True)
class RerankerKind:
    """One kind of reranker, as `rerank` names it and the baseline makes it."""

    name: str
    """The kind's name, before the colon of a spec (`cross-encoder` in `cross-encoder:PATH`)."""
    help: str
    """What it reorders the candidates by, in a few words."""
    make: MakeReranker
    """The reranker of a spec of this kind, for the baseline's settings."""
    argument: str | None = None
    """What follows the colon, as help shows it (`PATH`, `MODEL`); None: the kind takes no argument."""
    short: str | None = None
    """Its part of a grid directory's name before the argument's (`ce`); None: its name."""

    @property
    def form(self) -> str:
        """How a spec of it is written: `reader`, `cross-encoder:PATH`."""
        return self.name if self.argument is None else f"{self.name}:{self.argument}"


class RerankSpec(NamedTuple):
    """A reranker as named: its kind and argument (the model folder, the served model's name)."""

    kind: str
    argument: str = ""

    @property
    def slug(self) -> str:
        """A short name for directories: `none`, `reader`, `ce-<folder>`, `endpoint-<model>`."""
        if not self.argument:
            return self.kind
        tail = self.argument.rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1]
        prefix = RERANKERS.get(self.kind).short or self.kind
        return f"{prefix}-{re.sub(r'[^A-Za-z0-9._-]+', '-', tail) or 'model'}"


def rerank_forms() -> list[str]:
    """How each kind of reranker is written, in the registry's order."""
    return [kind.form for kind in RERANKERS]


def parse_rerank(spec: str) -> RerankSpec:
    """The reranker a spec names; a ConfigError listing the forms for anything else."""
    text = spec.strip()
    kind, _, argument = text.partition(":")
    kind, argument = kind.strip().lower(), argument.strip()
    if kind in RERANKERS and (RERANKERS.get(kind).argument is None) == (not argument):
        return RerankSpec(kind, argument)
    raise ConfigError(
        f"Unknown reranker '{spec}' in `rerank`; name one as {', '.join(rerank_forms())}.",
        settings=("rerank",),
    )


def reranker_for(
    spec: RerankSpec, reader: ModelSettings, *, rerank_url: str | None = None, concurrency: int = 16
) -> Reranker | None:
    """The reranker of `spec` for a baseline whose reader is `reader` (None for `none`)."""
    made = RERANKERS.get(spec.kind).make(spec.argument, RerankerSettings(reader, rerank_url, concurrency))
    if made is not None and not isinstance(made, Reranker):
        raise ConfigError(
            f"The reranker {spec.kind} made a {type(made).__name__}, which is no `Reranker` (name, describe, task, "
            "aclose)."
        )
    return made


def _none(argument: str, settings: RerankerSettings) -> Reranker | None:
    return None


def _cross_encoder(argument: str, settings: RerankerSettings) -> Reranker:
    from qagen.evaluate.systems.rerank.cross_encoder import CrossEncoderReranker

    return CrossEncoderReranker(argument)


def _endpoint(argument: str, settings: RerankerSettings) -> Reranker:
    """A rerank endpoint is reached at `rerank_url`, else at the reader's server, with the reader's key,
    timeout and retries."""
    from qagen.evaluate.systems.rerank.endpoint import EndpointReranker

    reader = settings.reader
    return EndpointReranker(
        argument,
        settings.rerank_url or reader.base_url or os.environ.get("OPENAI_BASE_URL"),
        api_key_env=reader.api_key_env,
        timeout=reader.timeout,
        max_retries=reader.max_retries,
        concurrency=settings.concurrency,
    )


def _listwise(argument: str, settings: RerankerSettings) -> Reranker:
    """The listwise reranker asks the reader model itself."""
    from qagen.evaluate.systems.rerank.listwise import ListwiseReranker

    return ListwiseReranker(settings.reader.spec)


RERANKERS: Registry[RerankerKind] = Registry(
    "rerankers",
    RerankerKind,
    noun="reranker",
    specs=(
        RerankerKind("none", help="no reranking: the retriever's order", make=_none),
        RerankerKind(
            "cross-encoder",
            help="a local sentence-transformers cross-encoder model folder",
            make=_cross_encoder,
            argument="PATH",
            short="ce",
        ),
        RerankerKind("endpoint", help="a served model's rerank endpoint (vLLM, TEI)", make=_endpoint, argument="MODEL"),
        RerankerKind("reader", help="the reader model, asked for the candidates in order", make=_listwise),
    ),
)
"""Every kind of reranker: qagen's, those registered in Python (`RERANKERS.register`), and those
installed packages bring (entry points `qagen.rerankers`)."""


def make_reranker(
    rerank: str | Reranker | None, reader: ModelSettings, *, rerank_url: str | None = None
) -> Reranker | None:
    """The reranker `rerank` names (a spec, checked by `parse_rerank`) or is, for a baseline read by `reader`."""
    if rerank is None or not isinstance(rerank, str):
        return rerank
    return reranker_for(parse_rerank(rerank), reader, rerank_url=rerank_url)
