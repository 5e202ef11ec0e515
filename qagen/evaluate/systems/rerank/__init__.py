"""Rerankers: a step between the bundled baseline's retrieval and its reader (`base` has the contract).

- `cross_encoder.CrossEncoderReranker`: a sentence-transformers cross-encoder from a local path;
- `endpoint.EndpointReranker`: an OpenAI-compatible `/rerank` endpoint (vLLM, TEI);
- `listwise.ListwiseReranker`: the reader model, asked once for the candidates' ids in order.

`specs.reranker_from_spec` makes one from a spec string (`cross-encoder:PATH`, `endpoint:MODEL`, `reader`).
"""
