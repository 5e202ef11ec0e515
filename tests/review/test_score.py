"""The combined score (`qagen.generation.score`) against an independent computation: scikit-learn's own
`predict_proba` of the model the fit made, and the logistic function computed by numpy; the fit's
variants, per-type coefficients and pooled fallback (`qagen.review.score_fit`)."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qagen.generation.score import (
    SHIPPED,
    Coefficients,
    ScoreModel,
    Signals,
    feature_names,
    features,
    predicted_keep,
    shipped_model,
)
from qagen.review.score_fit import MIN_PER_CLASS, Example, fit, split_apart


def _examples(n: int, seed: int, question_type: str = "factoid", *, reader: bool = True) -> list[Example]:
    """Drafts whose label follows their `supported` P(yes) and extractive share (plus noise)."""
    rng = random.Random(seed)
    found = []
    for _ in range(n):
        supported, extractive = rng.random(), rng.random()
        values: dict[str, float | None] = {
            "supported": supported,
            "reader": rng.random() if reader else None,
            "bm25_rank": float(rng.randint(1, 50)),
            "extractive_share": extractive,
            "restated_share": rng.random(),
            "copied_share": None if rng.random() < 0.1 else rng.random(),
        }
        keep = 3 * supported + 2 * extractive + rng.gauss(0, 0.7) > 2.5
        asked = ("supported", "reader") if reader else ("supported",)
        found.append(Example(question_type, Signals(values, asked), keep))
    return found


def test_the_stored_dot_product_is_sklearns_predict_proba() -> None:
    from sklearn.linear_model import LogisticRegression

    examples = _examples(200, seed=1)
    model = fit(examples, {"how": "test"})
    for checks in (("supported", "reader"), ("supported",)):
        matrix = [features(e.signals.values, checks) for e in examples]
        reference = LogisticRegression(C=1.0, max_iter=10_000).fit(matrix, [e.keep for e in examples])
        expected = reference.predict_proba(matrix)[:, 1]
        variant = next(v for v in model.variants if v.checks == checks)
        stored = variant.by_type["factoid"]
        assert [stored.probability(row) for row in matrix] == pytest.approx(list(expected), abs=1e-6)
    # A draft with the reader asked is scored by the variant that reads it, one without by the other.
    with_reader = model.variants[0].by_type["factoid"]
    first = examples[0]
    assert model.predict("factoid", first.signals.values, first.signals.asked) == pytest.approx(
        with_reader.probability(features(first.signals.values, ("supported", "reader")))
    )
    without = model.variants[1].by_type["factoid"]
    assert model.predict("factoid", first.signals.values, ("supported",)) == pytest.approx(
        without.probability(features(first.signals.values, ("supported",)))
    )


def test_a_missing_signal_is_its_own_feature_never_a_value() -> None:
    checks = ("supported",)
    names = feature_names(checks)
    vector = features({"supported": 0.8, "bm25_rank": None, "extractive_share": 0.5}, checks)
    by_name = dict(zip(names, vector, strict=True))
    assert by_name["supported"] == 0.8 and by_name["supported_missing"] == 0.0
    assert by_name["log_bm25_rank"] == 0.0 and by_name["bm25_rank_missing"] == 1.0
    assert by_name["restated_share_missing"] == 1.0  # absent is missing too
    assert features({"bm25_rank": 20.0}, checks)[names.index("log_bm25_rank")] == pytest.approx(math.log(20))
    assert "reader" not in names and "reader" in feature_names(("supported", "reader"))


def test_a_type_with_few_labels_is_scored_by_the_pooled_coefficients() -> None:
    examples = _examples(200, seed=2) + _examples(6, seed=3, question_type="reworded")
    model = fit(examples, {})
    variant = model.variants[0]
    assert set(variant.by_type) == {"factoid"}
    values = examples[-1].signals.values
    assert variant.pooled_types == ("factoid", "reworded")
    assert model.predict("reworded", values, ("supported", "reader")) == pytest.approx(
        variant.pooled.probability([*features(values, variant.checks), 0.0, 1.0])
    )
    assert variant.pooled.drafts == 206 and variant.by_type["factoid"].drafts == 200
    assert min(variant.by_type["factoid"].kept, 200 - variant.by_type["factoid"].kept) >= MIN_PER_CLASS


def test_a_draft_without_a_check_its_type_was_scored_with_has_no_score() -> None:
    unanswerable = [
        Example("unanswerable", Signals({"reader": None, "bm25_rank": None}, ("reader",)), keep=i % 5 == 0)
        for i in range(40)
    ]
    model = fit(_examples(100, seed=4) + unanswerable, {})
    # A factoid with no supported verdict (a free check rejected it; the build did not ask it): no score.
    assert model.predict("factoid", {"extractive_share": 1.0}, ()) is None
    # An unanswerable draft needs no supported verdict (none was asked of its type), with or without a reader.
    assert model.predict("unanswerable", {}, ("reader",)) is not None
    assert model.predict("unanswerable", {}, ()) is not None


@settings(max_examples=200, deadline=None)
@given(
    intercept=st.floats(-50, 50),
    weights=st.lists(st.floats(-50, 50), min_size=4, max_size=4),
    vector=st.lists(st.floats(0, 10), min_size=4, max_size=4),
)
def test_the_probability_is_the_logistic_function_and_never_overflows(
    intercept: float, weights: list[float], vector: list[float]
) -> None:
    coefficients = Coefficients(intercept=intercept, coefficients=tuple(weights), drafts=1, kept=1)
    z = intercept + float(np.dot(weights, vector))
    expected = float(np.exp(-np.logaddexp(0.0, -z)))  # 1 / (1 + e^-z), computed in log space
    found = coefficients.probability(vector)
    assert 0.0 <= found <= 1.0
    assert found == pytest.approx(expected, abs=1e-12)


def test_the_shipped_coefficients_say_how_they_were_made_and_fit_their_features() -> None:
    model = shipped_model()
    assert SHIPPED.is_file()
    for key in ("sets", "labels", "date", "commit", "library", "command"):
        assert model.made.get(key), key
    for variant in model.variants:
        assert list(variant.features) == feature_names(variant.checks)
        for coefficients in variant.by_type.values():
            assert len(coefficients.coefficients) == len(variant.features)
        assert len(variant.pooled.coefficients) == len(variant.features) + len(variant.pooled_types)
    score = predicted_keep("factoid", Signals({"supported": 0.9, "extractive_share": 1.0}, ("supported",)))
    assert score is not None and 0 < score < 1


def test_a_model_round_trips_through_json() -> None:
    model = fit(_examples(120, seed=5), {"sets": ["a"]})
    assert ScoreModel.model_validate_json(model.model_dump_json()) == model


def test_the_calibration_half_is_split_apart_reproducibly() -> None:
    indices = list(range(31))
    parts = split_apart(indices, seed=7)
    assert sorted(parts.fit + parts.certify) == indices and not set(parts.fit) & set(parts.certify)
    assert split_apart(indices, seed=7) == parts and split_apart(indices, seed=8) != parts
    assert len(parts.fit) == 16


def test_the_pooled_coefficients_give_a_type_a_reviewer_never_keeps_its_own_offset() -> None:
    never = [e._replace(question_type="multi_hop", keep=False) for e in _examples(40, seed=6)]
    model = fit(_examples(200, seed=2) + _examples(6, seed=3, question_type="reworded") + never, {})
    values = _examples(1, seed=9)[0].signals.values
    asked = ("supported", "reader")
    multi_hop, reworded = model.predict("multi_hop", values, asked), model.predict("reworded", values, asked)
    assert multi_hop is not None and reworded is not None and multi_hop < reworded / 2
