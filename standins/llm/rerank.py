"""The stand-in's reranking: a `/rerank` endpoint (vLLM's and TEI's), and the reply to qagen's listwise
rerank prompt (`prompts/rerank_listwise.txt`).

Both rank by word overlap, deterministically: a document's score is the share of the query's
distinct words (case-folded runs of letters and digits) that it contains; equal scores keep the
documents' order. The stand-in does not read for meaning, so a test can compute every order it gives.

`POST /rerank` and `/v1/rerank` take vLLM's `{"model", "query", "documents", "top_n"}` or TEI's
`{"query", "texts"}` (`documents` wins when both are sent) and answer in the shape of the knob
`rerank_reply`: `results` (vLLM: `{"results": [{"index", "relevance_score"}], "usage"}`) or `list`
(TEI: `[{"index", "score"}]`), best first, cut to `top_n`. Requests are counted and logged like
chat requests (kind `rerank`), and the fault knobs apply to them too (`rerank_route`).
"""

from __future__ import annotations

import re
from typing import Any

RERANK_PATHS = frozenset({"/rerank", "/v1/rerank"})
RERANK_REPLIES = frozenset({"results", "list"})
LISTWISE_OPENING = re.compile(r"\ARank the (?P<count>\d+) passages below by how relevant each one is")

_WORD = re.compile(r"\w+")
_QUESTION = re.compile(r"^<question>\n(?P<body>.*?)\n</question>$", re.M | re.S)
_PASSAGE = re.compile(r"^\[(?P<id>\d+)\]\n<context>\n(?P<body>.*?)\n</context>$", re.M | re.S)


def overlap(query: str, text: str) -> float:
    """The share of the query's distinct words that `text` contains (0 for a query of no words)."""
    wanted = set(_WORD.findall(query.casefold()))
    return len(wanted & set(_WORD.findall(text.casefold()))) / len(wanted) if wanted else 0.0


def ranking(query: str, texts: list[str]) -> list[tuple[int, float]]:
    """(index, score) of every text, best first; equal scores in the texts' order."""
    scored = [(index, overlap(query, text)) for index, text in enumerate(texts)]
    return sorted(scored, key=lambda pair: (-pair[1], pair[0]))


def listwise_reply(prompt: str) -> str | None:
    """The reply to a listwise rerank prompt (`[2] > [1] > [3]`), or None when `prompt` is not one."""
    if LISTWISE_OPENING.match(prompt) is None:
        return None
    question = _QUESTION.search(prompt)
    passages = [(int(m.group("id")), m.group("body")) for m in _PASSAGE.finditer(prompt)]
    order = ranking(question.group("body") if question else "", [body for _, body in passages])
    return " > ".join(f"[{passages[index][0]}]" for index, _ in order)


def rerank_payload(request: Any, shape: str) -> tuple[int, Any]:
    """Status and JSON payload answering a rerank request body."""
    documents = request.get("documents", request.get("texts")) if isinstance(request, dict) else None
    query = request.get("query") if isinstance(request, dict) else None
    if not isinstance(query, str) or not isinstance(documents, list) or not all(isinstance(d, str) for d in documents):
        message = "A rerank request needs a 'query' string and a 'documents' (or 'texts') list of strings."
        return 400, {"error": {"message": message, "type": "invalid_request_error", "code": "invalid_request"}}
    top_n = request.get("top_n")
    order = ranking(query, documents)[: top_n if isinstance(top_n, int) and top_n > 0 else None]
    if shape == "list":
        return 200, [{"index": index, "score": score} for index, score in order]
    results = [{"index": index, "relevance_score": score} for index, score in order]
    tokens = len(_WORD.findall(query)) + sum(len(_WORD.findall(d)) for d in documents)
    return 200, {
        "id": "rerank-stand-in",
        "model": request.get("model"),
        "results": results,
        "usage": {"total_tokens": tokens},
    }
