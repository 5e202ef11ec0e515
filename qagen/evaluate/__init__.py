"""Score a RAG system over a qagen test set: `qagen.evaluate(...)`, this package called, is
`qagen.evaluate.api.evaluate`.

Deterministic metrics and statistics (no model calls), each a pure function:

- `qagen.evaluate.metrics.retrieval`: hit@k, reciprocal rank, NDCG@k, precision@k and recall@k at
  document level (retrieved source ids against the question's source document) and at chunk level
  (retrieved character spans against the span of the chunk the question was drafted from).
- `qagen.evaluate.metrics.text`: ROUGE-L (equal to the `rouge-score` package on ASCII text, and
  usable on Chinese and Japanese) and the ROUGE-L recall of the retrieved contexts against the
  reference answer.
- `qagen.corpus.squad`: SQuAD-style token F1 and exact match.
- `qagen.evaluate.metrics.statistics`: percentile-bootstrap confidence intervals of a mean, and a paired
  comparison of two runs on their shared questions.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable


class _CallablePackage(ModuleType):
    """This package, callable as `qagen.evaluate(...)`: the public function `evaluate` has the
    package's name, and once any module of the package is imported Python binds `qagen.evaluate` to
    the package, whatever `qagen` exported under that name."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from qagen.evaluate.api import evaluate

        return evaluate(*args, **kwargs)

    @property
    def __wrapped__(self) -> Callable[..., Any]:
        """The function, so that `inspect.signature(qagen.evaluate)` shows its parameters."""
        from qagen.evaluate.api import evaluate

        return evaluate


sys.modules[__name__].__class__ = _CallablePackage
