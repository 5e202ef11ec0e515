"""Rerankers: a step between the bundled baseline's retrieval and its reader (`base` has the contract).

- `cross_encoder.CrossEncoderReranker`: a sentence-transformers cross-encoder from a local path;
- `endpoint.EndpointReranker`: an OpenAI-compatible `/rerank` endpoint (vLLM, TEI);
- `listwise.ListwiseReranker`: the reader model, asked once for the candidates' ids in order.

`specs.RERANKERS` holds the kinds (installed packages' too); `specs.make_reranker` makes one from a spec
string (`cross-encoder:PATH`, `endpoint:MODEL`, `reader`).
"""

DEFAULT_RERANK_TOP = 30
"""Candidates a reranker orders by default: the notebook retrieves 30 documents, and its reranker
keeps the best 7 (`k`) of them. Here, not in `base`, so the CLI can show it without importing more."""
