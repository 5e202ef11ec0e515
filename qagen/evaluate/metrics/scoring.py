"""Deterministic per-question metrics (no LLM), each declared once in `DETERMINISTIC_METRICS`:
retrieval at document and chunk level, text overlap, and those registered in Python or brought by
installed packages (entry points `qagen.deterministic_metrics`).

A metric is a `DeterministicMetric`: the name `metrics` knows it by, the row columns it fills
(`@k` stands for the cutoff, which the summary writes out: `hit@k` -> `hit@7`), and `score`, a
function of one question's `ScoreInput` that gives those columns' values, None where its inputs do
not exist for the question (then the summary says why: `qagen.evaluate.results`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from qagen.corpus.evidence import Evidence, locate_evidence
from qagen.corpus.squad import token_f1
from qagen.errors import ConfigError
from qagen.evaluate.metrics.evidence_hits import ReferenceEvidence
from qagen.evaluate.metrics.retrieval import (
    Span,
    binary_relevance,
    hit_at_k,
    hit_at_k_from_relevance,
    ndcg_at_k,
    ndcg_at_k_from_relevance,
    reciprocal_rank_at_k,
    reciprocal_rank_at_k_from_relevance,
)
from qagen.evaluate.metrics.text import context_rouge_l_recall
from qagen.evaluate.records import EvalItem, RagOutput
from qagen.question_types import scoring_of
from qagen.question_types.spec import Scoring
from qagen.records import RetrievedContext
from qagen.registry import Registry


@dataclass(frozen=True)
class ScoreColumn:
    """One column of qagen's own deterministic metrics, declared once: the metrics' columns and help,
    the summary's names and the report's notes on scales read it from `SCORES`. Every value is on [0, 1]."""

    column: str
    """Its column of `results.jsonl`, one value per question; `@k` stands for the cutoff there."""
    group: str
    """The metric that fills it, the name `metrics` asks for it by (`retrieval`, `text`)."""
    help: str
    """What a question's value is, in a few words."""
    summary: str | None = None
    """Its name in `summary.json` when that is not the column's: the mean of reciprocal ranks is MRR
    (`mrr@k`). `@k` is written out there (`mrr@7`)."""
    several_passages: bool = False
    """It exists on questions of several passages only (the others leave the column out)."""

    @property
    def summary_name(self) -> str:
        return self.summary or self.column


PASSAGES_FOUND = "passages_found@k"
"""A question of several passages: the share of its passages' documents among the top k (the partial
hit beside `hit@k`, which needs them all). The column exists on such questions only."""

SCORES: tuple[ScoreColumn, ...] = (
    ScoreColumn("hit@k", "retrieval", "1 when the question's source document is among the top k, else 0"),
    ScoreColumn(
        "reciprocal_rank@k",
        "retrieval",
        "1 / the rank of the source document within the top k, 0 beyond",
        summary="mrr@k",
    ),
    ScoreColumn("ndcg@k", "retrieval", "NDCG@k of the source document (binary relevance)"),
    ScoreColumn("evidence_hit@k", "retrieval", "1 when a top-k chunk holds the reference answer's evidence, else 0"),
    ScoreColumn(
        "evidence_reciprocal_rank@k",
        "retrieval",
        "1 / the rank of the first chunk holding the evidence within the top k, 0 beyond",
        summary="evidence_mrr@k",
    ),
    ScoreColumn("evidence_ndcg@k", "retrieval", "NDCG@k of the first chunk holding the evidence"),
    ScoreColumn(
        PASSAGES_FOUND,
        "retrieval",
        "the share of the question's passages whose document is among the top k",
        several_passages=True,
    ),
    ScoreColumn("context_rouge_l_recall", "text", "ROUGE-L recall of the reference answer in the retrieved contexts"),
    ScoreColumn("token_f1", "text", "token F1 of the answer against the reference (SQuAD's)"),
)
"""The columns of qagen's own deterministic metrics (`retrieval`, `text`), in the order the summary
lists them."""

SCORES_BY_COLUMN = {spec.column: spec for spec in SCORES}

EVIDENCE_COLUMNS = tuple(spec.column for spec in SCORES if spec.column.startswith("evidence_"))
"""The chunk-level columns: a retrieved chunk is relevant when it holds the reference answer's
evidence (`qagen.evaluate.metrics.evidence_hits`)."""

NOT_RETRIEVAL_SCORED = "scored_by_abstention"
"""Why a question of a type scored by abstention (`unanswerable`) has no retrieval or text values:
nothing in the corpus answers it, so there is nothing to retrieve, and the words of a refusal say
nothing of whether it is one (a refusal that shares no word with the reference's "the documents do
not answer" is still a refusal: the abstention judge reads it). The reason of every metric that
scores only the questions of another way of scoring (`DeterministicMetric.scoring`)."""


def _columns_of(group: str, *, several_passages: bool = False) -> tuple[str, ...]:
    """The columns `SCORES` declares for one of qagen's metrics: those every question has, or those
    of questions of several passages only."""
    return tuple(spec.column for spec in SCORES if spec.group == group and spec.several_passages == several_passages)


def _help_of(group: str) -> str:
    """One of qagen's metrics in a few words: the summary's names of its columns every question has."""
    return ", ".join(SCORES_BY_COLUMN[column].summary_name for column in _columns_of(group))


class Reported(NamedTuple):
    """What a system reports with its answers, judged over the whole run.

    A question whose answer came with no contexts means "retrieved nothing" (scored 0) for a system
    that reports contexts (or sources) elsewhere in the run, and "unknown" (no value) for
    one that never does: a plain-answer system must not score 0 on retrieval, and a retriever that
    sometimes finds nothing must not have those questions dropped from its mean.
    """

    contexts: bool = False
    sources: bool = False


NOTHING_REPORTED = Reported()


def reported(outputs: Iterable[RagOutput]) -> Reported:
    """What the `outputs` of one run report, any of them."""
    contexts = sources = False
    for output in outputs:
        for context in output.contexts:
            contexts = True
            sources = sources or context.source is not None
    return Reported(contexts, sources)


def _span(context: RetrievedContext) -> Span | None:
    if context.source is None or context.start_index is None or context.end_index is None:
        return None
    return Span(context.source, context.start_index, context.end_index)


def question_evidence(item: EvalItem) -> Evidence | None:
    """Where the question's reference answer is written in its chunk: the evidence the build placed
    when the set carries it, else the answer looked for in the chunk; None when the chunk's text is unknown."""
    if not item.context:
        return None
    return placed_evidence(item) or locate_evidence(item.true_answer, item.context)


def placed_evidence(item: EvalItem) -> Evidence | None:
    """The evidence offsets the build stored (document offsets), as a span of the chunk; None when
    the set has none, or they do not lie inside the chunk."""
    if item.evidence_start is None or item.evidence_end is None or item.start_index is None or not item.context:
        return None
    start, end = item.evidence_start - item.start_index, item.evidence_end - item.start_index
    if not 0 <= start < end <= len(item.context):
        return None
    return Evidence(match="quoted", spans=((start, end),))


def _evidence_relevance(item: EvalItem, evidence: Evidence, contexts: list[RetrievedContext]) -> list[bool]:
    known = item.source_doc is not None and item.start_index is not None and item.end_index is not None
    reference = Span(item.source_doc or "", item.start_index or 0, item.end_index or 0) if known else None
    judge = ReferenceEvidence(item.context or "", evidence, reference, item.source_doc)
    return judge.relevance([(context.text, _span(context), context.source) for context in contexts])


class ScoreInput(NamedTuple):
    """What a deterministic metric scores: one question and the system's output for it."""

    item: EvalItem
    """The test question, with its reference answer, its source documents and its chunk."""
    output: RagOutput
    """The system's answer and the contexts it retrieved (all of them: the metric keeps the top `k`)."""
    k: int
    """The cutoff: the contexts a metric `@k` reads."""
    run: Reported
    """What the system reports over the whole run: an answer without contexts retrieved nothing (0)
    from a system that reports contexts elsewhere, and has no value from one that never does."""
    evidence: Evidence | None
    """Where the reference answer is written in the question's chunk (`question_evidence`); None when
    the chunk's text is unknown, or the metric does not read it (`DeterministicMetric.reads_evidence`)."""


Scorer = Callable[[ScoreInput], Mapping[str, float | None]]
"""A deterministic metric's values for one question, by column (a column left out has no value)."""


@dataclass(frozen=True)
class DeterministicMetric:
    """A deterministic metric as the evaluator reads it: its name, its columns, its scorer."""

    name: str
    """Its name in `metrics` (`retrieval`, `text`), beside the LLM metrics' names."""
    help: str
    """What it measures, in a few words (the CLI's help of the metrics option lists it)."""
    columns: tuple[str, ...]
    """The row columns it fills, in the summary's order; `@k` stands for the cutoff."""
    score: Scorer
    """Its values for one question, by column."""
    optional_columns: tuple[str, ...] = ()
    """Columns it fills for some questions only (`passages_found@k`: questions of several passages),
    summarised when a row has one."""
    reads_evidence: bool = False
    """It reads where the reference answer is in the chunk (`ScoreInput.evidence`), which is then found
    once per question and stored on its row."""
    scoring: Scoring | None = "answer"
    """The questions it scores: those of the question types scored this way (`QuestionTypeSpec.scoring`);
    None: every question. The others have no value, with the reason `NOT_RETRIEVAL_SCORED`."""
    value_range: tuple[float, float] | None = None
    """Where its columns' values lie ((0, 1) for qagen's own); None: unbounded or unstated (a count).
    `summary.json`'s `columns` and the report's notes on scales say it."""

    def scores(self, question_type: str | None) -> bool:
        """Whether it scores a question of this type."""
        return self.scoring is None or scoring_of(question_type) == self.scoring

    def values(self, given: ScoreInput) -> dict[str, float | None]:
        """Its values for one question: every column of its own (None where `score` gave none), and
        its optional columns where given; a column it never declared is refused."""
        found = self.score(given)
        unknown = sorted(set(found) - {*self.columns, *self.optional_columns})
        if unknown:
            raise ConfigError(
                f"The metric {self.name} scored the columns {unknown}, which it does not declare "
                f"({', '.join(self.columns)}); add them to its `columns`."
            )
        values: dict[str, float | None] = {column: found.get(column) for column in self.columns}
        values.update({column: found[column] for column in self.optional_columns if column in found})
        return values


def _retrieval(given: ScoreInput) -> dict[str, float | None]:
    """Document level compares the retrieved sources with the question's `source_doc`. Chunk level
    (`evidence_*`) counts a retrieved context when it holds the reference answer's evidence in the
    question's chunk (the rule: `qagen.evaluate.metrics.evidence_hits`): it needs the chunk's text and
    an answer located in it."""
    item, output, k, run, evidence = given
    values: dict[str, float | None] = {}
    contexts = output.contexts[:k]
    retrieved_nothing = output.answer is not None and not output.contexts
    sources = [context.source or "" for context in contexts]
    # A question of several passages needs every passage's document: a hit is all of them.
    relevant: str | tuple[str, ...] = tuple(dict.fromkeys(item.source_docs)) or (item.source_doc or "")
    if relevant and (any(sources) or (retrieved_nothing and run.sources)):
        found = binary_relevance(sources[:k], relevant)
        values["hit@k"] = (
            float(sum(found) == len(relevant)) if isinstance(relevant, tuple) else hit_at_k(sources, relevant, k)
        )
        values["reciprocal_rank@k"] = reciprocal_rank_at_k(sources, relevant, k)
        values["ndcg@k"] = ndcg_at_k(sources, relevant, k)
        if isinstance(relevant, tuple):
            values[PASSAGES_FOUND] = sum(found) / len(relevant)
    if evidence is not None and evidence.spans and (contexts or (retrieved_nothing and run.contexts)):
        relevance = _evidence_relevance(item, evidence, contexts)
        values["evidence_hit@k"] = hit_at_k_from_relevance(relevance, k)
        values["evidence_reciprocal_rank@k"] = reciprocal_rank_at_k_from_relevance(relevance, k)
        values["evidence_ndcg@k"] = ndcg_at_k_from_relevance(relevance, k, n_relevant=1)
    return values


def _text(given: ScoreInput) -> dict[str, float | None]:
    """The answer's words against the reference: in the top `k` contexts (ROUGE-L recall) and in the
    system's answer (SQuAD token F1)."""
    item, output, k, run, _ = given
    texts = [c.text for c in output.contexts[:k]]
    retrieved_nothing = output.answer is not None and not output.contexts
    return {
        "context_rouge_l_recall": (
            context_rouge_l_recall(texts, item.true_answer) if texts or (retrieved_nothing and run.contexts) else None
        ),
        "token_f1": token_f1(output.answer, item.true_answer) if output.answer is not None else None,
    }


DETERMINISTIC_METRICS: Registry[DeterministicMetric] = Registry(
    "deterministic_metrics",
    DeterministicMetric,
    noun="deterministic metric",
    specs=(
        DeterministicMetric(
            "retrieval",
            help=_help_of("retrieval"),
            columns=_columns_of("retrieval"),
            score=_retrieval,
            optional_columns=_columns_of("retrieval", several_passages=True),
            reads_evidence=True,
            value_range=(0.0, 1.0),
        ),
        DeterministicMetric(
            "text",
            help=_help_of("text"),
            columns=_columns_of("text"),
            score=_text,
            value_range=(0.0, 1.0),
        ),
    ),
)
"""Every deterministic metric: qagen's (their columns: `SCORES`), those registered in Python
(`DETERMINISTIC_METRICS.register`), and those installed packages bring (entry points
`qagen.deterministic_metrics`)."""


def deterministic_metrics(
    item: EvalItem,
    output: RagOutput,
    k: int,
    groups: set[str],
    run: Reported = NOTHING_REPORTED,
    evidence: Evidence | None = None,
) -> dict[str, float | None]:
    """The values of the deterministic metrics named in `groups`, in their registered order; None where
    their inputs do not exist for this question. `evidence` as `question_evidence(item)` gives it, found
    here when a metric reads it and it is not given. An answer with no contexts scores 0 on what the
    system reports elsewhere in the `run` (see `Reported`); a failed answer without contexts has no
    retrieval values (its failure is counted apart)."""
    values: dict[str, float | None] = {}
    for metric in DETERMINISTIC_METRICS:
        if metric.name not in groups:
            continue
        if not metric.scores(item.question_type):
            values.update(dict.fromkeys(metric.columns))  # the reason: `NOT_RETRIEVAL_SCORED`
            continue
        if evidence is None and metric.reads_evidence:
            evidence = question_evidence(item)
        values.update(metric.values(ScoreInput(item, output, k, run, evidence)))
    return values


def metric_of_column(column: str) -> DeterministicMetric | None:
    """The deterministic metric that fills a row column (None: an LLM metric's, or no metric's)."""
    return next(
        (metric for metric in DETERMINISTIC_METRICS if column in (*metric.columns, *metric.optional_columns)), None
    )
