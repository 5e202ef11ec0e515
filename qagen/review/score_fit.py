"""Fitting the combined score's coefficients (`qagen.generation.score`) on labelled drafts: scikit-learn's
`LogisticRegression` (L2, C=1), imported when fitting, per question type with a pooled fallback, one
variant per set of checks read. A build never fits: it reads stored coefficients (`score_model.json`).

Validity: coefficients fitted on labels must not be certified from, nor tested on, the same labels (the
threshold would be chosen on a score that has already seen them). `benchmarks/fit_score.py` fits the
shipped coefficients on qagen's reviewed sets, which no user's labels are part of; the cross-validation of
the quality benchmark (`benchmarks/bench_quality.py`) fits on a part of each calibration half held apart
from the part it certifies from, and never on the test half (`split_apart`).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, NamedTuple

from qagen.generation.score import Coefficients, ScoreModel, Signals, Variant, feature_names, features

MIN_PER_CLASS = 8
"""A question type gets coefficients of its own when it has at least this many labelled drafts a reviewer
keeps and as many it does not; the others are scored by the pooled coefficients."""

VARIANTS: tuple[tuple[str, ...], ...] = (("supported", "reader"), ("supported",))
"""The sets of checks a variant reads, richest first: with the reader (builds that ask it), without."""

REGULARISATION = 1.0
"""`LogisticRegression`'s C (inverse L2 strength): the default; the features are shares and a log rank."""


class Example(NamedTuple):
    """A labelled draft as the fit reads it."""

    question_type: str
    signals: Signals
    keep: bool


def fit(examples: Sequence[Example], made: dict[str, Any], *, min_per_class: int = MIN_PER_CLASS) -> ScoreModel:
    """The coefficients of every variant (`VARIANTS`) fitted on `examples`; `made` says how (stored as is).
    A variant with no example it can read, or whose examples are all of one label, is left out."""
    variants = [variant for checks in VARIANTS if (variant := _fit_variant(examples, checks, min_per_class))]
    return ScoreModel(made=made, variants=tuple(variants))


def _fit_variant(examples: Sequence[Example], checks: tuple[str, ...], min_per_class: int) -> Variant | None:
    # The checks of this variant a type's drafts got at all: a type's drafts must have those to be read.
    asked: dict[str, tuple[str, ...]] = {}
    for example in examples:
        got = set(asked.get(example.question_type, ()))
        asked[example.question_type] = tuple(c for c in checks if c in got or c in example.signals.asked)
    usable = [e for e in examples if all(c in e.signals.asked for c in asked[e.question_type])]
    if len({e.keep for e in usable}) < 2:
        return None
    by_type: dict[str, Coefficients] = {}
    for question_type in sorted({e.question_type for e in usable}):
        own = [e for e in usable if e.question_type == question_type]
        kept = sum(e.keep for e in own)
        if min(kept, len(own) - kept) >= min_per_class:
            by_type[question_type] = _logistic(own, checks)
    pooled_types = tuple(sorted({e.question_type for e in usable}))
    return Variant(
        checks=checks,
        features=tuple(feature_names(checks)),
        asked={name: got for name, got in asked.items() if any(e.question_type == name for e in usable)},
        by_type=by_type,
        pooled=_logistic(usable, checks, pooled_types),
        pooled_types=pooled_types,
    )


def _logistic(examples: Sequence[Example], checks: Sequence[str], types: Sequence[str] = ()) -> Coefficients:
    """A logistic model of the examples' features (and one 0/1 column per type of `types`: the pooled model)."""
    from sklearn.linear_model import LogisticRegression  # the fit only: a build reads stored coefficients

    matrix = [[*features(e.signals.values, checks), *(float(e.question_type == t) for t in types)] for e in examples]
    labels = [int(e.keep) for e in examples]
    model = LogisticRegression(C=REGULARISATION, max_iter=10_000).fit(matrix, labels)
    return Coefficients(
        intercept=float(model.intercept_[0]),
        coefficients=tuple(float(c) for c in model.coef_[0]),
        drafts=len(examples),
        kept=sum(labels),
    )


class Parts(NamedTuple):
    """A calibration half split in two: the part the coefficients are fitted on, the part certified from."""

    fit: list[int]
    certify: list[int]


def split_apart(indices: Sequence[int], seed: int, fit_share: float = 0.5) -> Parts:
    """`indices` shuffled with `seed` and cut at `fit_share`: the coefficients are fitted on the first part,
    the threshold certified from the second (see the module)."""
    order = list(indices)
    random.Random(seed).shuffle(order)
    cut = round(len(order) * fit_share)
    return Parts(order[:cut], order[cut:])
