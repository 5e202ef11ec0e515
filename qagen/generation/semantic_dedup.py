"""Duplicates by meaning: questions that ask the same thing in other words.

The lexical rule (`qagen.generation.dedup`) catches the same words give or take a few; this one
embeds the questions (`qagen.generation.embedders`: `local` is the dense extra's bundled
all-MiniLM-L6-v2, which works offline) and calls a question a duplicate of an earlier kept one when
their cosine similarity reaches the threshold. The first of a group is kept, in the order questions are offered.

Without the dense extra (and `local` asked), `load_semantic_dedup` says why and the build uses the
lexical rule only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from qagen.corpus.embeddings import DENSE_EXTRA, EmbeddingsModel
from qagen.generation.embedders import missing_dense_modules, shared_model, unit_vectors

DEFAULT_SEMANTIC_THRESHOLD = 0.8
"""Cosine similarity from which two questions ask the same thing, for all-MiniLM-L6-v2. Measured on
the pairs of tests/generation/test_semantic_dedup.py: ten paraphrase pairs score 0.62-0.97 and ten
pairs on one topic that ask different things 0.46-0.74; at 0.8, 7 of the 10 paraphrases are caught
and no different question is (the ranges overlap, so no threshold catches all without a loss)."""


class SemanticDuplicates:
    """Keeps the first of each group of questions that mean the same, in the order they are offered."""

    def __init__(self, vectors: Mapping[str, Sequence[float]], threshold: float) -> None:
        """`vectors`: each question's unit-length embedding, by item id (every id offered must be here)."""
        import numpy as np  # here, not before a build's first call: the final write's warm-up imports it

        self.threshold = threshold
        self._vectors = {key: np.asarray(vector, dtype=np.float32) for key, vector in vectors.items()}
        dimensions = next(iter(self._vectors.values())).shape[0] if self._vectors else 0
        self._kept = np.zeros((max(16, len(self._vectors)), dimensions), dtype=np.float32)
        self._kept_ids: list[str] = []

    def first_seen(self, item_id: str) -> str | None:
        """Register the item's question; the id of the earlier kept question it duplicates, or None."""
        earlier = self.match(item_id)
        if earlier is None:
            self.keep(item_id)
        return earlier

    def match(self, item_id: str) -> str | None:
        """The id of the most similar earlier kept question at or above the threshold, or None;
        registers nothing (`keep` does)."""
        count = len(self._kept_ids)
        if not count:
            return None
        similarities = self._kept[:count] @ self._vectors[item_id]
        best = int(similarities.argmax())
        return self._kept_ids[best] if similarities[best] >= self.threshold else None

    def keep(self, item_id: str) -> None:
        """Register a kept question."""
        count = len(self._kept_ids)
        if count == self._kept.shape[0]:
            self._kept.resize((2 * count, self._kept.shape[1]), refcheck=False)  # the new rows are zeros
        self._kept[count] = self._vectors[item_id]
        self._kept_ids.append(item_id)


class SemanticDedup(NamedTuple):
    """The embeddings model a build finds duplicates by meaning with, or why it uses the lexical rule only."""

    model: EmbeddingsModel | None
    lexical_only_because: str | None

    def embed(self, questions: Mapping[str, str]) -> dict[str, list[float]]:
        """Unit-length vectors of the questions, by item id."""
        if self.model is None or not questions:
            return {}
        ids = list(questions)
        unit = unit_vectors(self.model, [questions[key] for key in ids])
        return {key: [float(value) for value in row] for key, row in zip(ids, unit, strict=True)}


def load_semantic_dedup(spec: str | None) -> SemanticDedup:
    """The model named `spec` (None: none asked); the bundled one without the dense extra is the
    lexical rule only, with the sentence that says so."""
    if spec is None:
        return SemanticDedup(None, "no embeddings model was asked for (`dedup_embeddings` is off)")
    missing = missing_dense_modules(spec)
    if missing:
        return SemanticDedup(None, f"the dense extra is not installed ({', '.join(missing)} missing: {DENSE_EXTRA})")
    return SemanticDedup(shared_model(spec), None)
