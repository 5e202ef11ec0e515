"""Duplicates by meaning: questions that ask the same thing in other words.

The lexical rule (`qagen.generation.dedup`) catches the same words give or take a few; this one
embeds the questions (`qagen.generation.embedders`: `local` is the dense extra's bundled
all-MiniLM-L6-v2, which works offline) and calls a question a duplicate of an earlier kept one when
their cosine similarity reaches the threshold. The first of a group is kept, in the order questions are offered.

Without the dense extra (and `local` asked), `load_semantic_dedup` says why and the build uses the
lexical rule only. A build embeds its questions as their drafts arrive (`QuestionVectors`), while its
calls wait on the network, so the filter finds them embedded.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from qagen.corpus.embeddings import DENSE_EXTRA, EmbeddingsModel
from qagen.generation.embedders import missing_dense_modules, shared_model, unit_vectors

_logger = logging.getLogger(__name__)

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


class QuestionVectors:
    """A build's questions embedded once each, by text: in a thread of their own as the drafts arrive
    (`offer`), the rest when the filter asks (`of`).

    A local model's first text loads it (torch and sentence-transformers: about 5 s of CPU here) and
    a thousand questions take 3-4 s more; embedded after the last reply, that was a build's last
    stretch, where during the LLM stage the process mostly waits on the network. A failure in the
    thread is only logged: the texts it left are embedded by `of`, in the build's own thread, which
    raises it as errors are raised."""

    BATCH = 64
    """Texts the thread embeds at once: the model's batches are 32, so two of them a wake-up."""

    def __init__(self, model: EmbeddingsModel) -> None:
        self.model = model
        self._vectors: dict[str, list[float]] = {}
        self._offered: list[str] = []
        self._condition = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stopping = False

    def offer(self, question: str) -> None:
        """Embed `question` in the background, a batch at a time (the thread starts on the first offer)."""
        with self._condition:
            if self._stopping:
                return
            self._offered.append(question)
            if self._thread is None:
                self._thread = threading.Thread(target=self._embed_offered, name="embed-questions", daemon=True)
                self._thread.start()
            elif len(self._offered) >= self.BATCH:
                self._condition.notify()

    def of(self, questions: Mapping[str, str]) -> dict[str, list[float]]:
        """Unit-length vectors of the questions, by item id: the thread stopped (what it is embedding
        finished), the texts it has not embedded embedded here. Later offers start it again."""
        with self._condition:
            self._stopping = True
            self._condition.notify()
            thread = self._thread
        if thread is not None:
            thread.join()
        with self._condition:
            self._stopping = False
            self._thread = None
            self._offered.clear()
        self._embed(list(dict.fromkeys(text for text in questions.values() if text not in self._vectors)))
        return {key: self._vectors[text] for key, text in questions.items()}

    def _embed_offered(self) -> None:
        try:
            while True:
                with self._condition:
                    while len(self._offered) < self.BATCH and not self._stopping:
                        self._condition.wait()
                    if self._stopping:  # the rest is `of`'s: it embeds whatever is missing
                        return
                    batch, self._offered = self._offered[: self.BATCH], self._offered[self.BATCH :]
                self._embed([text for text in dict.fromkeys(batch) if text not in self._vectors])
        except Exception:
            _logger.debug("embedding questions in the background failed; the filter embeds them", exc_info=True)

    def _embed(self, texts: list[str]) -> None:
        if texts:
            unit = unit_vectors(self.model, texts)
            self._vectors.update((text, [float(value) for value in row]) for text, row in zip(texts, unit, strict=True))


def load_semantic_dedup(spec: str | None) -> SemanticDedup:
    """The model named `spec` (None: none asked); the bundled one without the dense extra is the
    lexical rule only, with the sentence that says so."""
    if spec is None:
        return SemanticDedup(None, "no embeddings model was asked for (`dedup_embeddings` is off)")
    missing = missing_dense_modules(spec)
    if missing:
        return SemanticDedup(None, f"the dense extra is not installed ({', '.join(missing)} missing: {DENSE_EXTRA})")
    return SemanticDedup(shared_model(spec), None)
