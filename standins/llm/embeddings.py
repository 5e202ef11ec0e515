"""The stand-in's `/v1/embeddings`: deterministic vectors, so dense retrieval is tested offline.

A text's vector is a hashed bag of its words: each case-folded word adds +1 or -1 (from its
sha256) to one of `DIMENSIONS` coordinates (also from its sha256), and the sum is scaled to unit
length. Texts sharing words point the same way, so a question finds the chunk it was drafted from
as a lexical retriever would; a text with no word is the zero vector. The same text always gets
the same vector, in every process.
"""

from __future__ import annotations

import base64
import hashlib
import math
import re
import struct
from typing import Any

__all__ = ["DIMENSIONS", "EMBEDDINGS_PATHS", "embedding", "embeddings_reply", "embeddings_request_error"]

EMBEDDINGS_PATHS = frozenset({"/v1/embeddings", "/embeddings"})
DIMENSIONS = 256
_WORD = re.compile(r"\w+")


def embedding(text: str, dimensions: int = DIMENSIONS) -> list[float]:
    """The unit-length hashed bag of words of `text` (all zeros when it has no word)."""
    vector = [0.0] * dimensions
    for word in _WORD.findall(text.casefold()):
        digest = hashlib.sha256(word.encode("utf-8")).digest()
        slot = int.from_bytes(digest[:4], "little") % dimensions
        vector[slot] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(sum(value * value for value in vector))
    return [value / norm for value in vector] if norm else vector


def _inputs(request: dict[str, Any]) -> list[str] | None:
    texts = request.get("input")
    if isinstance(texts, str):
        return [texts]
    if isinstance(texts, list) and texts and all(isinstance(text, str) for text in texts):
        return texts
    return None


def embeddings_request_error(request: dict[str, Any]) -> str | None:
    """Why the body is not an embeddings request the stand-in answers (None: it is one)."""
    if not isinstance(request.get("model"), str):
        return "An embeddings request needs a 'model' string."
    if _inputs(request) is None:
        # Token arrays too: the stand-in embeds text, so a client must send text (LangChain's
        # OpenAIEmbeddings does with check_embedding_ctx_length=False).
        return "An embeddings request needs 'input': a string or a non-empty list of strings."
    if request.get("encoding_format", "float") not in ("float", "base64"):
        return "'encoding_format' must be 'float' or 'base64'."
    return None


def embeddings_reply(request: dict[str, Any]) -> dict[str, Any]:
    """The OpenAI `list` of embeddings answering a valid request, floats or base64 float32 as asked."""
    texts = _inputs(request) or []
    as_base64 = request.get("encoding_format") == "base64"
    data = []
    for index, text in enumerate(texts):
        vector = embedding(text)
        value: Any = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode() if as_base64 else vector
        data.append({"object": "embedding", "index": index, "embedding": value})
    tokens = sum(-(-len(text) // 4) for text in texts)  # about four characters a token, as for chat
    return {
        "object": "list",
        "data": data,
        "model": request["model"],
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }
