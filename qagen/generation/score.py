"""The combined score (`predicted_keep`): the estimated probability that a reviewer keeps a draft, from
signals whose errors are independent (issue 40), read as a logistic model with stored coefficients.

The signals, each a column of `candidates` or a check's measurement on the row (`SIGNALS`):

- `supported`: the `supported` check's P(yes);
- `reader`: the reader's agreement with the drafted answer, where the build asks the reader;
- `bm25_rank`: where BM25 ranks the question's own chunk among the corpus' chunks, read as its log
  (a vague question, one that names no command, finds its chunk far down);
- `extractive_share`: the share of the answer's content words its passages hold;
- `restated_share`: the share of the answer's content words its question already holds;
- `copied_share`: the share of the question's content words its chunk holds.

A signal can be missing for a draft (no retrieval target for an unanswerable question, no content
word, a check decided by its written word with no measurement): each signal has a 0/1 feature saying
so, and its value is 0 then, so a missing signal is a term of its own, never a guessed value.

The coefficients (`ScoreModel`) come in variants, one per set of checks the score reads (with the
reader, and without it for builds that do not ask it), each per question type with a pooled fallback
for types with too few labelled drafts of either kind (the pooled model has an offset per type it saw).
The shipped ones (`score_model.json`, beside this module) were fitted by `benchmarks/fit_score.py` on
qagen's reviewed sets with live verdicts; the file says on what, when and how. Scoring a draft is a dot
product: no model call, no fitting library.

A draft whose type the score reads a check of that it did not get (the build did not ask it, a free
check rejected the draft first, or the call failed) has no score (None): the score is not extrapolated
to a draft unlike those it was fitted on.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import Field

from qagen.records import Record

SCORE_COLUMN = "predicted_keep"
"""The candidates' column that holds the combined score."""

SHIPPED = Path(__file__).with_name("score_model.json")
"""The coefficients qagen ships (see the module)."""

CHECK_SIGNALS = ("supported", "reader")
"""The signals that are checks' measurements (a model call): the ones a variant of the model may read or not."""

FREE_SIGNALS = ("bm25_rank", "extractive_share", "restated_share", "copied_share")
"""The signals that cost no call: columns of `candidates`."""

SIGNALS = (*CHECK_SIGNALS, *FREE_SIGNALS)
"""Every signal, in the order of the features."""


def feature_names(checks: Sequence[str]) -> list[str]:
    """The features of a variant that reads `checks`: each signal's value, then whether it is missing."""
    signals = [name for name in SIGNALS if name not in CHECK_SIGNALS or name in checks]
    return [feature for name in signals for feature in (_value_name(name), f"{name}_missing")]


def _value_name(signal: str) -> str:
    return "log_bm25_rank" if signal == "bm25_rank" else signal


def features(values: Mapping[str, float | None], checks: Sequence[str]) -> list[float]:
    """The feature vector of a draft's signal values (`values`: by signal name; None or absent: missing)
    for the variant that reads `checks`, in `feature_names` order."""
    found: list[float] = []
    for name in SIGNALS:
        if name in CHECK_SIGNALS and name not in checks:
            continue
        value = values.get(name)
        if value is None or not math.isfinite(value):
            found += [0.0, 1.0]
        else:
            found += [math.log(value) if name == "bm25_rank" else float(value), 0.0]
    return found


class Coefficients(Record):
    """One logistic model: P(keep) = 1 / (1 + exp(-(intercept + coefficients . features)))."""

    intercept: float = Field(description="The model's intercept.")
    coefficients: tuple[float, ...] = Field(description="One per feature, in the variant's `features` order.")
    drafts: int = Field(description="The labelled drafts it was fitted on.")
    kept: int = Field(description="Of them, the ones the reviewer keeps.")

    def probability(self, vector: Sequence[float]) -> float:
        if len(vector) != len(self.coefficients):
            raise ValueError(f"{len(vector)} features for {len(self.coefficients)} coefficients")
        z = self.intercept + sum(c * x for c, x in zip(self.coefficients, vector, strict=True))
        # The logistic function without overflow for a large |z|.
        return 1 / (1 + math.exp(-z)) if z >= 0 else math.exp(z) / (1 + math.exp(z))


class Variant(Record):
    """The coefficients for drafts whose checks include `checks`: per question type, and pooled."""

    checks: tuple[str, ...] = Field(description="The checks' measurements it reads (`CHECK_SIGNALS`).")
    features: tuple[str, ...] = Field(description="Its features, in order (`feature_names`).")
    asked: dict[str, tuple[str, ...]] = Field(
        description="Per question type, the checks of `checks` asked of its drafts where it was fitted: a draft of "
        "the type must have their verdicts to be scored."
    )
    by_type: dict[str, Coefficients] = Field(description="Coefficients of the types with enough labelled drafts.")
    pooled: Coefficients = Field(
        description="Coefficients over every type, for the others: the features, then one 0/1 feature per type of "
        "`pooled_types` (a type's own offset: a type whose drafts a reviewer never kept is not scored as the others)."
    )
    pooled_types: tuple[str, ...] = Field(default=(), description="The types with an offset in `pooled`.")

    def probability(self, question_type: str, values: Mapping[str, float | None]) -> float:
        """P(keep) of a draft of `question_type` by its own coefficients, or the pooled ones."""
        vector = features(values, self.checks)
        own = self.by_type.get(question_type)
        if own is not None:
            return own.probability(vector)
        return self.pooled.probability([*vector, *(float(question_type == name) for name in self.pooled_types)])


class ScoreModel(Record):
    """The combined score's coefficients and how they were made."""

    made: dict[str, Any] = Field(description="How the coefficients were made: sets, labels, date, commit, library.")
    variants: tuple[Variant, ...] = Field(description="Richest first: a draft is scored by the first that fits it.")

    def predict(self, question_type: str, values: Mapping[str, float | None], asked: Sequence[str]) -> float | None:
        """P(a reviewer keeps the draft) from its signal `values`; `asked`: the checks that gave the draft a
        verdict (its measurement may still be missing). None when no variant fits the draft (see the module)."""
        for variant in self.variants:
            # A type not seen in fitting must have every check the variant reads.
            if any(check not in asked for check in variant.asked.get(question_type, variant.checks)):
                continue
            return variant.probability(question_type, values)
        return None


@cache
def shipped_model() -> ScoreModel:
    """The coefficients qagen ships (`SHIPPED`)."""
    return ScoreModel.model_validate(json.loads(SHIPPED.read_text(encoding="utf-8")))


class Signals(NamedTuple):
    """A draft's signal values and the checks that gave it a verdict: what `ScoreModel.predict` reads."""

    values: dict[str, float | None]
    asked: tuple[str, ...]


def predicted_keep(question_type: str, signals: Signals, model: ScoreModel | None = None) -> float | None:
    """The combined score of a draft (with the shipped coefficients unless `model`), rounded as the
    column holds it; None when the score does not read such a draft."""
    found = (model or shipped_model()).predict(question_type, signals.values, signals.asked)
    return None if found is None else round(found, 4)
