"""A cross-encoder reranker: a sentence-transformers `CrossEncoder` loaded from a local folder scores
each (question, candidate) pair; candidates are ordered by that score.

sentence-transformers (and torch) are an optional extra, imported only when a cross-encoder is
used. The model is loaded once per folder and process, on first use, in a worker thread; its
predictions run one at a time (torch already spreads one over the cores).
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import json
import math
import os
import threading
from pathlib import Path
from typing import Any

from qagen.errors import ConfigError
from qagen.evaluate.systems.rerank.base import RankedScores, RerankItem, ScoringTask, Unranked
from qagen.failures import Failure, FailureKind

__all__ = ["INSTALL_HINT", "CrossEncoderReranker"]

INSTALL_HINT = 'pip install "qagen[dense]"'

_models: dict[str, Any] = {}
_models_lock = threading.Lock()
_predict_lock = threading.Lock()


class CrossEncoderReranker:
    """Scores every candidate with the cross-encoder in `path` (a folder saved by sentence-transformers
    or transformers); the best score first."""

    def __init__(self, path: str | Path, *, batch_size: int = 32) -> None:
        if importlib.util.find_spec("sentence_transformers") is None:
            raise ConfigError(f"The cross-encoder reranker needs sentence-transformers: {INSTALL_HINT}.")
        self.path = Path(path).expanduser().resolve()
        if not self.path.is_dir():
            raise ConfigError(
                f"No cross-encoder model folder at {path}: name in `rerank` the folder a sentence-transformers "
                "cross-encoder was saved to (save_pretrained).",
                settings=("rerank",),
            )
        self.batch_size = batch_size
        self._files = _fingerprint(self.path)
        self.task = ScoringTask(self.name, self.describe(), self._score)

    @property
    def name(self) -> str:
        return f"ce-{self.path.name}"

    def describe(self) -> dict[str, object]:
        return {"reranker": "cross-encoder", "model": str(self.path), "model_files": self._files}

    async def aclose(self) -> None:
        """The model stays loaded for other rerankers of the same folder in this process."""

    async def _score(self, item: RerankItem) -> RankedScores | Unranked:
        scores = await asyncio.to_thread(self._predict, item)
        raw = json.dumps(scores)  # NaN written as NaN: the record shows what the model gave
        bad = [i for i, score in enumerate(scores) if not math.isfinite(score)]
        if bad:
            return Unranked(Failure.of(FailureKind.INVALID_SCORE, f"no finite score for candidates {bad}"), raw)
        return RankedScores(list(enumerate(scores)), raw=raw)

    def _predict(self, item: RerankItem) -> list[float]:
        model = self._model()
        pairs = [(item.question, context.text) for context in item.candidates]
        with _predict_lock:
            scores = model.predict(pairs, batch_size=self.batch_size, show_progress_bar=False, convert_to_numpy=True)
        # One score per pair (a model of one label); a model of several labels is not a reranker.
        return [float(score) for score in scores.reshape(len(pairs))]

    def _model(self) -> Any:
        key = str(self.path)
        with _models_lock:
            if key not in _models:
                from sentence_transformers import CrossEncoder

                try:
                    model = CrossEncoder(key, local_files_only=True)
                except (OSError, ValueError) as exc:
                    raise ConfigError(f"Cannot load the cross-encoder in {self.path}: {exc}") from exc
                if model.num_labels != 1:
                    raise ConfigError(
                        f"The model in {self.path} gives {model.num_labels} scores per pair; a reranking "
                        "cross-encoder gives one."
                    )
                _models[key] = model
            return _models[key]


def _fingerprint(folder: Path) -> str:
    """A short hash of the model folder's file names and sizes: another model saved to the same
    folder is another reranker, whose orders are not reused."""
    entries: list[tuple[str, int]] = []
    for root, subfolders, files in os.walk(folder):
        subfolders.sort()
        for file in sorted(files):
            path = Path(root, file)
            entries.append((path.relative_to(folder).as_posix(), path.stat().st_size))
    return hashlib.sha256(json.dumps(entries).encode("utf-8")).hexdigest()[:16]
