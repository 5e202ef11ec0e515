"""Deterministic metrics are specs in one registry (`DETERMINISTIC_METRICS`), qagen's `retrieval` and
`text` among them: a metric registered in Python is named by `metrics`, fills its own row columns,
is summarised, and is refused when it scores a column it did not declare or takes a name in use."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from qagen.errors import ConfigError
from qagen.evaluate.config import select_metrics
from qagen.evaluate.judges.registry import metric_groups
from qagen.evaluate.metric_columns import scale_notes
from qagen.evaluate.metrics.scoring import (
    DETERMINISTIC_METRICS,
    NOT_RETRIEVAL_SCORED,
    DeterministicMetric,
    Reported,
    ScoreInput,
    deterministic_metrics,
)
from qagen.evaluate.records import EvalItem, RagOutput
from qagen.evaluate.results import metric_columns, result_row, summarise


def answer_words(given: ScoreInput) -> dict[str, float | None]:
    if given.output.answer is None:
        return {}
    return {"answer_words": float(len(given.output.answer.split()))}


ANSWER_WORDS = DeterministicMetric(
    "answer_words", help="words in the answer", columns=("answer_words",), score=answer_words
)


@pytest.fixture()
def registered() -> Iterator[DeterministicMetric]:
    DETERMINISTIC_METRICS.register(ANSWER_WORDS)
    yield ANSWER_WORDS
    DETERMINISTIC_METRICS.unregister("answer_words")


def test_qagen_s_own_metrics_are_specs_of_the_registry() -> None:
    assert DETERMINISTIC_METRICS.names()[:2] == ("retrieval", "text")
    assert metric_columns(["correctness"], {"text", "retrieval"}) == [
        "correctness",
        "hit@k",
        "reciprocal_rank@k",
        "ndcg@k",
        "evidence_hit@k",
        "evidence_reciprocal_rank@k",
        "evidence_ndcg@k",
        "context_rouge_l_recall",
        "token_f1",
    ]


def test_a_registered_metric_is_named_scored_and_summarised(registered: DeterministicMetric) -> None:
    chosen, _ = select_metrics(["answer_words", "text"], embeddings=False)
    assert chosen == ["answer_words", "text"]
    assert "answer_words" in metric_groups()["all"]
    items = [
        EvalItem(id="a", question="?", true_answer="Two words."),
        EvalItem(id="b", question="?", true_answer="x", question_type="unanswerable"),
        EvalItem(id="c", question="?", true_answer="x"),
    ]
    outputs = [RagOutput(answer="Four words in all."), RagOutput(answer="No."), RagOutput(answer=None, error="e")]
    assert deterministic_metrics(items[0], outputs[0], 3, {"answer_words"}) == {"answer_words": 4.0}
    rows = [
        result_row(item, output, {}, system="s", k=3, groups={"answer_words"}, run=Reported())
        for item, output in zip(items, outputs, strict=True)
    ]
    # Scored by default like qagen's own: the answers of answerable questions only.
    assert [row.scores for row in rows] == [{"answer_words": 4.0}, {"answer_words": None}, {"answer_words": None}]
    summary = summarise(rows, k=3, llm_metrics=[], groups={"answer_words"})
    stats = summary.metrics["answer_words"]
    assert (stats.mean, stats.n, stats.missing_by_reason) == (4.0, 1, {NOT_RETRIEVAL_SCORED: 1, "no_answer": 1})
    # A count: the summary says what it is, and that its metric states no range (not qagen's 0-1).
    assert summary.columns["answer_words"].model_dump() == {
        "results_column": "answer_words", "question_value": "words in the answer", "results_range": None,
        "summarised_as": "value", "range": None,
    }  # fmt: skip
    assert scale_notes(["answer_words"], 3) == [
        "answer_words: the mean of results.jsonl's `answer_words`, on a range its metric does not state"
    ]


def test_a_metric_may_fill_only_the_columns_it_declares(registered: DeterministicMetric) -> None:
    DETERMINISTIC_METRICS.unregister("answer_words")
    DETERMINISTIC_METRICS.register(
        DeterministicMetric("answer_words", help="h", columns=("words",), score=answer_words)
    )
    item, output = EvalItem(id="a", question="?", true_answer="x"), RagOutput(answer="a b")
    with pytest.raises(ConfigError, match=r"scored the columns \['answer_words'\], which it does not declare"):
        deterministic_metrics(item, output, 3, {"answer_words"})


def test_a_name_in_use_is_refused() -> None:
    with pytest.raises(ConfigError, match="A deterministic metric named text is registered already"):
        DETERMINISTIC_METRICS.register(DeterministicMetric("text", help="h", columns=("t",), score=answer_words))
    DETERMINISTIC_METRICS.register(DeterministicMetric("correctness", help="h", columns=("c",), score=answer_words))
    try:
        with pytest.raises(ConfigError, match=r"The metric name correctness is taken twice .*registered in Python"):
            metric_groups()
    finally:
        DETERMINISTIC_METRICS.unregister("correctness")
