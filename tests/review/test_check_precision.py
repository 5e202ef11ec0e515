"""The free checks against a reviewer, on the reviewed drafts in ../shared/reference/data: each
check's precision and recall counted again here by hand, the shipping rule (a check on by default
rejects no draft the reviewer kept) enforced, and the benchmark's replay printing the same figures."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from sklearn.metrics import cohen_kappa_score

from qagen.generation.checks.evidence import place_evidence
from qagen.generation.checks.rules import (
    FREE_CHECKS,
    answer_in_question,
    answer_points_at_source,
    code_not_in_passages,
    points_at_source,
    says_not_grounded,
)
from qagen.review.check_precision import CHECK_LABELS, critic_agreement, measure_checks, read_reviewed

ROOT = Path(__file__).resolve().parents[2]


def test_each_check_against_the_reviewer(reference_data: Path) -> None:
    drafts = read_reviewed(reference_data / "gitdoc_drafts_reviewed.jsonl")
    assert len(drafts) == 40
    measures = {measure.name: measure for measure in measure_checks(drafts)}
    tests = {
        "evidence": lambda d: not place_evidence(d.evidence, d.answer, d.chunk).found,
        "source_pointing": lambda d: points_at_source(d.question),
        "ungrounded_answer": lambda d: says_not_grounded(d.question, d.answer),
        "answer_in_question": lambda d: answer_in_question(d.question, d.answer),
        "answer_pointing": lambda d: answer_points_at_source(d.question, d.answer),
        "code_not_in_passages": lambda d: code_not_in_passages(d.question, d.answer, (d.chunk,)),
    }
    for name, rejects in tests.items():
        label = CHECK_LABELS[name]

        def fails(draft: object, label: str = label) -> bool:
            review = draft.review  # type: ignore[attr-defined]
            return not review["keep"] if label == "keep" else review[label] is not None and review[label] < 4

        rejected = [d for d in drafts if rejects(d)]
        failing = [d for d in drafts if fails(d)]
        measure = measures[name]
        assert measure.rejected == len(rejected)
        assert measure.true_rejections == sum(1 for d in rejected if fails(d))
        assert measure.reviewer_fails == len(failing)
        assert measure.kept_rejected == sum(1 for d in rejected if d.review["keep"])
    # Measured (the README's table): every check rejects something, and only drafts the reviewer failed.
    assert {name: m.rejected for name, m in measures.items()} == {
        "evidence": 5, "source_pointing": 8, "ungrounded_answer": 1, "answer_in_question": 1,
        "answer_pointing": 1, "code_not_in_passages": 3,
    }  # fmt: skip
    assert all(m.precision == 1.0 for m in measures.values())
    # The shipping rule: a check on by default rejects no draft the reviewer kept.
    for check in FREE_CHECKS:
        assert not check.default_on or measures[check.name].kept_rejected == 0, check.name


def test_critic_kappa_equals_scikit_learn(reference_data: Path) -> None:
    drafts = read_reviewed(reference_data / "gitdoc_drafts_reviewed.jsonl")
    for criterion in ("groundedness", "relevance", "standalone"):
        scored = [d for d in drafts if d.critic_scores.get(criterion) is not None and d.review[criterion] is not None]
        machine = [d.critic_scores[criterion] >= 4 for d in scored]  # type: ignore[operator]
        person = [d.review[criterion] >= 4 for d in scored]
        found = critic_agreement(drafts, criterion)
        assert found.n == len(scored)
        if len(set(machine)) > 1 or len(set(person)) > 1:
            expected = cohen_kappa_score(machine, person)
            assert found.kappa is not None and abs(found.kappa - expected) < 1e-9


def test_the_benchmark_replays_the_reviewed_drafts(reference_data: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "bench_quality.py"),
            "--replay",
            "--reviewed",
            str(reference_data / "gitdoc_drafts_reviewed.jsonl"),
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    assert "Replay of 40 reviewed drafts" in result.stdout
    assert re.search(r"source_pointing\s+standalone\s+8\s+1\.00\s+0\.50 \(8/16\)\s+0\n", result.stdout)
    assert "kappa" in result.stdout and "own chunk ranked first by BM25" in result.stdout
