"""A baseline corpus without the test set's source documents is said before hit@k comes out 0."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from qagen.cli.app import main
from qagen.evaluate.api import evaluate, rag_baseline
from qagen.evaluate.config import EvalConfig
from qagen.evaluate.input_checks import normalize_source, source_coverage
from standins.corpus import write_corpus


@pytest.mark.parametrize(
    ("written", "normal"),
    [
        ("docs/a.md", "docs/a.md"),
        ("./docs/a.md", "docs/a.md"),
        ("docs\\a.md", "docs/a.md"),  # a Windows-built test set
        ("docs//a.md", "docs/a.md"),
        ("docs/cafe\u0301.md", "docs/caf\u00e9.md"),  # macOS file names are decomposed
        (" a.md ", "a.md"),
    ],
)
def test_normalize_source(written: str, normal: str) -> None:
    assert normalize_source(written) == normal


def test_all_sources_present_says_nothing() -> None:
    assert source_coverage(["a.md", "./b.md", None, "a.md"], {"a.md", "b.md", "c.md"}) is None
    assert source_coverage([None, None], {"a.md"}) is None  # a test set without source_doc: nothing to compare


def test_none_present_says_hit_at_k_will_be_zero_and_why() -> None:
    found = source_coverage(["sub/a.md", "sub/b.md", "sub/a.md"], {"a.md", "b.md"})
    assert found is not None
    sentence, facts = found
    assert sentence == (
        "hit@k, MRR and NDCG will be 0 for every question because the baseline's corpus holds none of the "
        "test set's 2 source documents (the test set names e.g. 'sub/a.md', 'sub/b.md'; the corpus has e.g. "
        "'a.md', 'b.md'); give `corpus` the files or folder the test set was built from."
    )
    assert facts == {"test_set_sources": 2, "missing": 2, "missing_examples": ["sub/a.md", "sub/b.md"]}


def test_some_missing_says_how_many() -> None:
    found = source_coverage([f"d{n}.md" for n in range(6)], {"d0.md", "d1.md"})
    assert found is not None
    sentence, facts = found
    assert sentence == (
        "4 of the test set's 6 source documents are not in the baseline's corpus (e.g. 'd2.md', 'd3.md', "
        "'d4.md'), so their questions will score 0 on hit@k, MRR and NDCG."
    )
    assert facts["missing"] == 4 and facts["test_set_sources"] == 6


# --------------------------------------------------------------------------- through evaluate and the CLI


def _testset(path: Path, sources: list[str]) -> Path:
    rows = [
        {"question": f"What does the report {n} say?", "answer": "Something.", "source_doc": source}
        for n, source in enumerate(sources)
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_evaluate_warns_before_scoring_and_keeps_the_warning(fake_llm: Any, tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpus", documents=4)
    names = sorted(p.name for p in corpus.iterdir())
    testset = _testset(tmp_path / "set.jsonl", [names[0], names[1], "gone.md"])
    warnings: list[str] = []
    stats = evaluate(
        EvalConfig(testset=testset, metrics=["retrieval"], reader=fake_llm.client()),
        rag_baseline(corpus, chunk_size=400, progress=False),
        tmp_path / "eval",
        progress=False,
        on_warning=warnings.append,
    )
    assert warnings == [
        "1 of the test set's 3 source documents are not in the baseline's corpus (e.g. 'gone.md'), so their "
        "questions will score 0 on hit@k, MRR and NDCG."
    ]
    assert stats.about["warnings"] == warnings
    assert stats.about["corpus_sources"] == {"test_set_sources": 3, "missing": 1, "missing_examples": ["gone.md"]}
    rows = [json.loads(line) for line in (tmp_path / "eval" / "results.jsonl").read_text().splitlines()]
    assert rows[2]["source_doc"] == "gone.md" and rows[2]["hit@k"] == 0.0  # what the warning announced


def test_cli_warns_when_the_corpus_holds_none_of_the_sources(llm: Any, tmp_path: Path) -> None:
    built_from = write_corpus(tmp_path / "built_from", documents=3)
    other = tmp_path / "other"
    other.mkdir()
    (other / "unrelated.md").write_text("The report says nothing about lighthouses. It was 12.")
    testset = _testset(tmp_path / "set.jsonl", sorted(p.name for p in built_from.iterdir()))
    args = [
        "evaluate", testset, "--baseline", "bm25", "--corpus", other, "--chunk-size", "400",
        "--metrics", "retrieval", "--reader-model", "openai:stand-in", "--base-url", llm.base_url,
        "--out", tmp_path / "eval", "-q",
    ]  # fmt: skip
    result = CliRunner().invoke(main, [str(arg) for arg in args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    warning = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert len(warning) == 1
    assert warning[0].startswith(
        "warning: hit@k, MRR and NDCG will be 0 for every question because the baseline's corpus holds none of "
        "the test set's 3 source documents (the test set names e.g. 'doc 00 lighthouse.txt'"
    )
    assert warning[0].endswith(
        "the corpus has e.g. 'unrelated.md'); give --corpus the files or folder the test set was built from."
    )
    summary = json.loads((tmp_path / "eval" / "summary.json").read_text())
    assert summary["warnings"] == [warning[0].removeprefix("warning: ").replace("--corpus", "`corpus`")]
    assert summary["corpus_sources"]["missing"] == 3
