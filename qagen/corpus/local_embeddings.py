"""A sentence-transformers model on disk as LangChain `Embeddings` (`qagen.corpus.embeddings` names
the models): here, apart, because `langchain_core` costs about 0.2 s of CPU to import, and a build imports
`qagen.corpus.embeddings` before its first call whether or not it loads a model."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings

from qagen.corpus.embeddings import require_dense_extra
from qagen.errors import ConfigError


class SentenceTransformerEmbeddings(Embeddings):
    """A sentence-transformers model saved in `path`, as LangChain `Embeddings`: unit-length vectors,
    the model loaded on first use, from disk only (no Hub lookup, so it works with HF_HUB_OFFLINE=1)."""

    def __init__(self, path: Path, *, batch_size: int = 32, max_seq_length: int | None = None) -> None:
        self.path = path
        self.batch_size = batch_size
        self.max_seq_length = max_seq_length  # None: the model's own (its sentence_bert_config.json)
        self._model: Any = None
        self._lock = threading.Lock()

    def model(self) -> Any:
        with self._lock:
            if self._model is None:
                sentence_transformers = require_dense_extra("sentence_transformers")
                try:
                    self._model = sentence_transformers.SentenceTransformer(str(self.path), local_files_only=True)
                except (OSError, ValueError) as exc:
                    raise ConfigError(f"Cannot load the sentence-transformers model in {self.path}: {exc}") from exc
                if self.max_seq_length is not None:
                    self._model.max_seq_length = self.max_seq_length
            return self._model

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        vectors = self.model().encode(
            list(texts), batch_size=self.batch_size, normalize_embeddings=True, show_progress_bar=False
        )
        return [[float(value) for value in vector] for vector in vectors]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]
