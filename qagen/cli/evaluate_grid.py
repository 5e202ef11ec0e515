"""The settings grid of `qagen evaluate`: which baselines (retriever x embeddings model) it runs,
each grid point's directory name, and the indexes' notes on screen."""

from __future__ import annotations

import itertools
import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NamedTuple

import click

from qagen.cli.flags import in_cli_terms
from qagen.errors import ConfigError
from qagen.evaluate.systems.retriever_specs import RETRIEVERS

# The loggers whose lines say whether an index was built or reused, and where it is kept (or that the
# cache cannot keep it): shown to CLI users.
INDEX_LOGGERS = ("qagen.evaluate.systems.dense_index", "qagen.corpus.bm25_index", "qagen.corpus.index_cache")


def split_list(value: str | None) -> list[str]:
    return [part.strip() for part in (value or "").split(",") if part.strip()]


def baseline_systems(baseline: str | None, embeddings: str | None) -> list[tuple[str | None, str | None]]:
    """The grid's systems as (retriever, embeddings model): one per retriever, one per embeddings model
    of a retriever that ranks by embeddings (dense, hybrid); [(None, None)] for a system of the user's own."""
    kinds = list(dict.fromkeys(split_list(baseline)))
    if baseline is not None and not kinds:
        raise ConfigError(
            f"--baseline takes {', '.join(RETRIEVERS.names())} or a comma list of them, got '{baseline}'."
        )
    unknown = [kind for kind in kinds if kind not in RETRIEVERS]
    if unknown:
        raise ConfigError(f"Unknown --baseline '{unknown[0]}'; choose from {', '.join(RETRIEVERS.names())}.")
    models = list(dict.fromkeys(split_list(embeddings)))
    dense = [kind for kind in kinds if RETRIEVERS.get(kind).needs_embeddings]
    if len(models) > 1 and not dense:
        by_embeddings = " or ".join(spec.name for spec in RETRIEVERS if spec.needs_embeddings)
        raise ConfigError(f"A list of --embeddings only applies to --baseline {by_embeddings}.")
    if not kinds:
        return [(None, None)]
    for kind in kinds:
        check = RETRIEVERS.get(kind).check
        if check is not None:
            check()
    if dense:
        from qagen.corpus.embeddings import LOCAL, EmbeddingsModel

        models = models or [LOCAL]
        for model in models:
            EmbeddingsModel(model)  # an unknown name or a missing model fails now, before any work
    return [(kind, model) for kind in kinds for model in (models if kind in dense else [None])]


class GridPoint(NamedTuple):
    """One setting of the grid, evaluated in a directory of its own (`name`, inside --out)."""

    retriever: str | None  # None: the user's own system
    embeddings: str | None  # the dense and hybrid retrievers' model
    chunk_size: int
    k: int
    name: str


def grid_points(baseline: str | None, embeddings: str | None, chunk_sizes: list[int], ks: list[int]) -> list[GridPoint]:
    """Every setting of the grid: baselines x chunk sizes x k, each with its directory's name."""
    systems = baseline_systems(baseline, embeddings)
    named = len(systems) > 1 or systems[0][0] not in (None, "bm25")
    grid = [
        GridPoint(retriever, model, chunk_size, k, point_name(retriever, model, chunk_size, k, named))
        for (retriever, model), chunk_size, k in itertools.product(systems, chunk_sizes, ks)
    ]
    names = [point.name for point in grid]
    clashing = sorted({name for name in names if names.count(name) > 1})
    if clashing:
        raise ConfigError(f"Two settings of the grid would share the directory {clashing[0]}: give other --embeddings.")
    return grid


def point_name(retriever: str | None, embeddings: str | None, chunk_size: int, k: int, named: bool) -> str:
    """A grid point's directory: `chunk500_k3`, prefixed by the retriever (and its embeddings model's
    name) unless the baseline is BM25 alone (`dense-all-MiniLM-L6-v2_chunk500_k3`); `k3` for a
    system of the user's own."""
    if retriever is None:
        return f"k{k}"
    if not named:
        return f"chunk{chunk_size}_k{k}"
    if embeddings is not None:
        from qagen.corpus.embeddings import EmbeddingsModel

        retriever += "-" + re.sub(r"[^A-Za-z0-9._-]+", "-", EmbeddingsModel(embeddings).label)
    return f"{retriever}_chunk{chunk_size}_k{k}"


class _EchoHandler(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        kind = "warning" if record.levelno >= logging.WARNING else "note"
        click.echo(f"{kind}: {in_cli_terms(record.getMessage(), ('cache_dir',))}", err=True)


@contextmanager
def index_notes() -> Iterator[None]:
    """Show whether each index was built or reused (no chunk embedded again), and where it is kept, one line each."""
    loggers = [logging.getLogger(name) for name in INDEX_LOGGERS]
    handler, levels = _EchoHandler(logging.INFO), [logger.level for logger in loggers]
    for logger in loggers:
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.removeHandler(handler)
            logger.setLevel(level)
