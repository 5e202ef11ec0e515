"""A test set's profile: what a build kept, described (`summary.json`'s `profile`).

Counted from the candidate rows as finalize writes them, one row at a time: question types,
coverage of the corpus' documents and chunks, easiness (`qagen.generation.checks.easiness`),
question and answer lengths, each check's measurements (what its cut was held to), the duplicates removed and the
drafts the free checks rejected. `qagen profile RUN` prints it, and the dataset card carries it.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from qagen.generation.vetting import RowDecision, row_decision, written_yes
from qagen.question_types import DEFAULT_TYPE
from qagen.records import (
    CandidateRow,
    CheckMeasured,
    CheckReading,
    Coverage,
    Distribution,
    Duplicates,
    Easiness,
    TestSetProfile,
)
from qagen.runs.scratch import KeySet

COPIED_SHARE_BINS: tuple[float, ...] = (0.2, 0.4, 0.6, 0.8, 1.0)
"""Upper edges of the copied-share bins (a share equal to an edge falls in that edge's bin)."""
KEPT_PER_DOCUMENT_BINS: tuple[tuple[int, int | None], ...] = ((0, 0), (1, 1), (2, 2), (3, 5), (6, None))


def distribution(values: Sequence[float]) -> Distribution:
    """The spread of `values` (all None when there is none)."""
    if not values:
        return Distribution(count=0, mean=None, minimum=None, p25=None, median=None, p75=None, maximum=None)
    import numpy as np  # here, not before a build's first call: the final write's warm-up imports it

    array = np.asarray(values, dtype=np.float64)
    low, p25, median, p75, high = (round(float(v), 4) for v in np.percentile(array, [0, 25, 50, 75, 100]))
    mean = round(float(array.mean()), 4)
    return Distribution(count=len(values), mean=mean, minimum=low, p25=p25, median=median, p75=p75, maximum=high)


def _bin(value: float) -> str:
    low = 0.0
    for high in COPIED_SHARE_BINS:
        if value <= high:
            return f"{low:g}-{high:g}"
        low = high
    return f">{COPIED_SHARE_BINS[-1]:g}"


def _document_bin(count: int) -> str:
    for low, high in KEPT_PER_DOCUMENT_BINS:
        if high is None and count >= low:
            return f"{low}+"
        if high is not None and low <= count <= high:
            return str(low) if low == high else f"{low}-{high}"
    raise ValueError(count)


class ProfileCounter:
    """Counts the profile one candidate row at a time (a `CandidateRow`, or its columns as `model_dump` gives them)."""

    def __init__(
        self,
        checks: Mapping[str, CheckReading],
        documents: Mapping[str, int],
        question_types: Iterable[str] = (DEFAULT_TYPE,),
    ) -> None:
        """`checks`: the checks the build asked (`summary.check_readings`); `documents`: every document's source
        and its number of chunks; `question_types`: the build's types, in its order, each counted even when none
        of it is kept."""
        self.checks_asked = dict(checks)
        self.documents = dict(documents)
        self.types: Counter[str] = Counter(dict.fromkeys(question_types, 0))
        self.sampled_documents: set[str] = set()
        # The chunks' ids on disk: as sets in memory they took about 0.2 KB a sampled draft.
        self.sampled_chunks = KeySet("the sampled chunks' ids")
        self.kept_by_document: Counter[str] = Counter()
        self.kept_chunks = KeySet("the ids of the chunks with a kept question")
        # One number a kept question each: arrays of 8 bytes a number, not lists of Python objects.
        self.copied = array("d")
        self.ranks = array("q")
        self.question_chars = array("q")
        self.answer_chars = array("q")
        self.measured: dict[str, Counter[str]] = {check: Counter() for check in self.checks_asked}
        self.decided: dict[str, Counter[bool]] = {check: Counter() for check in self.checks_asked}
        self.checks: Counter[str] = Counter()

    def add(self, candidate: CandidateRow | Mapping[str, Any], check_reason: str | None = None) -> None:
        """Count a row; `check_reason`: the free check that rejected it, if one did.

        Coverage and easiness count the rows with a retrieval target: a question no passage answers
        (unanswerable, its `source_doc` None: `NO_TARGET_COLUMNS`) covers no document, and how easily
        its borrowed passage is found says nothing of how easy the question is."""
        # A record's fields as they are (as `row_decision` reads them): the build's rows are not dumped for this.
        row: Mapping[str, Any] = candidate if isinstance(candidate, Mapping) else candidate.__dict__
        targeted = row["source_doc"] is not None
        if targeted:
            self.sampled_documents.add(row["source_doc"])
            self.sampled_chunks.add(row["chunk_id"])
        if check_reason is not None:
            self.checks[check_reason] += 1
        for check, reading in self.checks_asked.items():
            decision = row_decision(row, check)
            if decision is not None:
                self.measured[check][_measurement_bin(reading, decision)] += 1
                self.decided[check][decision.passed] += 1
        if row["status"] != "kept":
            return
        self.types[row.get("question_type") or DEFAULT_TYPE] += 1
        self.question_chars.append(len(row["question"] or ""))
        self.answer_chars.append(len(row["answer"] or ""))
        if not targeted:
            return
        self.kept_by_document[row["source_doc"]] += 1
        self.kept_chunks.add(row["chunk_id"])
        if row.get("copied_share") is not None:
            self.copied.append(float(row["copied_share"]))
        if row.get("bm25_rank") is not None:
            self.ranks.append(int(row["bm25_rank"]))

    def result(self, duplicates: Duplicates) -> TestSetProfile:
        per_document = Counter(_document_bin(self.kept_by_document.get(source, 0)) for source in self.documents)
        bins = [_document_bin(low) for low, _ in KEPT_PER_DOCUMENT_BINS]
        ranked = len(self.ranks)
        first = sum(1 for rank in self.ranks if rank == 1)
        copied_bins = Counter(_bin(value) for value in self.copied)
        return TestSetProfile(
            question_types=dict(self.types),
            coverage=Coverage(
                documents=len(self.documents),
                documents_sampled=len(self.sampled_documents),
                documents_with_kept=len(self.kept_by_document),
                chunks=sum(self.documents.values()),
                chunks_sampled=len(self.sampled_chunks),
                chunks_with_kept=len(self.kept_chunks),
                kept_per_document={name: per_document.get(name, 0) for name in bins},
            ),
            easiness=Easiness(
                copied_share=distribution(self.copied),
                copied_share_bins={_bin(high): copied_bins.get(_bin(high), 0) for high in COPIED_SHARE_BINS},
                bm25_rank=distribution(self.ranks),
                ranked_first=first,
                ranked_first_share=round(first / ranked, 4) if ranked else None,
                ranked_top5_share=round(sum(1 for rank in self.ranks if rank <= 5) / ranked, 4) if ranked else None,
            ),
            question_chars=distribution(self.question_chars),
            answer_chars=distribution(self.answer_chars),
            checks_measured={
                check: CheckMeasured(
                    kind=reading.kind,
                    cut=reading.cut,
                    bins={name: self.measured[check][name] for name in _bins(reading) if self.measured[check][name]},
                    passed=self.decided[check][True],
                    rejected=self.decided[check][False],
                )
                for check, reading in self.checks_asked.items()
            },
            duplicates=duplicates,
            checks=dict(sorted(self.checks.items())),
        )


RATING_BINS = ("1", "2", "3", "4", "5")
SHARE_BINS = tuple(f"{tenth / 10:.1f}" for tenth in range(10))
WRITTEN_BINS = ("written no", "written yes")


def _bins(reading: CheckReading) -> tuple[str, ...]:
    """A check's measurement bins, low to high, then those of verdicts decided as written."""
    return (*(RATING_BINS if reading.kind == "rating" else SHARE_BINS), *WRITTEN_BINS)


def _measurement_bin(reading: CheckReading, decision: RowDecision) -> str:
    """The bin of a decision's measurement: a rating by its whole part, a share (P(yes), agreement) by its
    tenth, so a bin never straddles a whole-number threshold or a cut of one decimal."""
    value = decision.measurement
    if value is None:
        return WRITTEN_BINS[written_yes(decision.written)]
    if reading.kind == "rating":
        return str(min(5, max(1, math.floor(value))))
    return SHARE_BINS[min(9, max(0, math.floor(value * 10)))]
