"""Score a RAG system over a qagen test set.

Deterministic metrics and statistics (no model calls), each a pure function:

- `qagen.evaluate.metrics.retrieval`: hit@k, reciprocal rank, NDCG@k, precision@k and recall@k at
  document level (retrieved source ids against the question's source document) and at chunk level
  (retrieved character spans against the span of the chunk the question was drafted from).
- `qagen.evaluate.metrics.text`: ROUGE-L (equal to the `rouge-score` package on ASCII text, and
  usable on Chinese and Japanese) and the ROUGE-L recall of the retrieved contexts against the
  reference answer.
- `qagen.evaluate.metrics.squad`: SQuAD-style token F1 and exact match.
- `qagen.evaluate.metrics.statistics`: percentile-bootstrap confidence intervals of a mean, and a paired
  comparison of two runs on their shared questions.
"""
