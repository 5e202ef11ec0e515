"""Evaluation at scale: results read a line at a time, each question scored once per run, and the
baseline's BM25 index kept in the evaluation directory and reused."""

from __future__ import annotations

import json
import logging
import math
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from qagen.cli.app import main
from qagen.corpus.index_cache import index_cache_dir
from qagen.errors import QagenError
from qagen.evaluate import results as results_module
from qagen.evaluate.api import evaluate
from qagen.evaluate.config import EvalConfig
from qagen.evaluate.report import EvalRun, comparison_table
from qagen.evaluate.runner import Evaluation
from qagen.evaluate.stamp import STAMP_FILE
from qagen.evaluate.systems import baseline as baseline_module
from qagen.evaluate.systems.callable import CallableSystem
from qagen.evaluate.testset import load_testset
from standins.corpus import write_corpus
from standins.llm.server import StandInLLM

# --------------------------------------------------------------------------- results read line by line


def _eval_dir(path: Path, rows: list[dict[str, Any]], metrics: list[str]) -> Path:
    path.mkdir(parents=True)
    stats = {name: {"mean": 0.5, "low": 0.4, "high": 0.6, "n": 1, "missing": 0} for name in metrics}
    (path / "summary.json").write_text(json.dumps({"k": 7, "metrics": stats}))
    with (path / "results.jsonl").open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


def _row(i: int, *, docs: int = 1) -> dict[str, Any]:
    return {
        "id": f"q{i}",
        "question": f"Question {i}?",
        "retrieved_docs": [f"context {i}-{d} " + "word " * 300 for d in range(docs)],
        "correctness": 1 + i % 5 if i % 7 else None,
        "correctness_raw": "Feedback::: fine\nTotal rating: 4 " * 20,
        "reciprocal_rank@k": 1 / (1 + i % 4),
        "hit@k": float(i % 3 == 0),
        "token_f1": None if i % 11 == 0 else (i % 13) / 13,
    }


def test_eval_run_keeps_each_metric_s_values_as_the_rows_give_them(tmp_path: Path) -> None:
    rows = [_row(i) for i in range(60)]
    run = EvalRun.load(_eval_dir(tmp_path / "e", rows, ["correctness", "mrr@7", "hit@7", "token_f1"]))
    assert run.question_ids == tuple(f"q{i}" for i in range(60))
    assert run.values("correctness") == {
        row["id"]: (row["correctness"] - 1) / 4 for row in rows if row["correctness"] is not None
    }
    assert run.values("mrr@7") == {row["id"]: row["reciprocal_rank@k"] for row in rows}
    assert run.values("hit@7") == {row["id"]: row["hit@k"] for row in rows}
    assert run.values("token_f1") == {row["id"]: row["token_f1"] for row in rows if row["token_f1"] is not None}
    assert run.values("faithfulness") == {}  # not in this run's summary
    assert math.isnan(run.scores["token_f1"][0]) and run.scores["mrr@7"].dtype.name == "float64"


def test_eval_run_load_holds_one_line_at_a_time(tmp_path: Path) -> None:
    rows = [_row(i, docs=7) for i in range(1500)]  # ~16 KB a row, ~24 MB in all
    path = _eval_dir(tmp_path / "e", rows, ["correctness", "mrr@7"])
    size = (path / "results.jsonl").stat().st_size
    tracemalloc.start()
    try:
        run = EvalRun.load(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(run.question_ids) == 1500
    # Reading the file as one string (and its lines, and every parsed row) would take several times
    # its size; a line at a time it is a row or two plus the kept values.
    assert peak < size / 20, (peak, size)


def test_eval_run_reads_rows_with_unicode_line_separators(tmp_path: Path) -> None:
    rows = [_row(0) | {"question": "one\u2028two\x85three\x0cfour?"}, _row(1)]
    run = EvalRun.load(_eval_dir(tmp_path / "e", rows, ["mrr@7"]))
    assert run.values("mrr@7") == {"q0": 1.0, "q1": 0.5}


@pytest.mark.parametrize("bad", ['{"id": "q1", "reciprocal_rank@k": ', "[1, 2]", '{"reciprocal_rank@k": 1}'])
def test_an_unreadable_results_line_is_one_sentence(tmp_path: Path, bad: str) -> None:
    path = _eval_dir(tmp_path / "e", [_row(0)], ["mrr@7"])
    with (path / "results.jsonl").open("a") as out:
        out.write(bad + "\n")
    with pytest.raises(QagenError, match=r"unreadable summary\.json or results\.jsonl"):
        EvalRun.load(path)


def test_comparison_table_pairs_streamed_runs_by_question(tmp_path: Path) -> None:
    a = EvalRun.load(_eval_dir(tmp_path / "a", [_row(i) for i in range(40)], ["mrr@7"]))
    b = EvalRun.load(
        _eval_dir(tmp_path / "b", [_row(i) | {"reciprocal_rank@k": 1.0} for i in range(20, 60)], ["mrr@7"])
    )
    table = comparison_table([a, b])
    shared = [1.0 - 1 / (1 + i % 4) for i in range(20, 40)]
    [paired] = [line for line in table.splitlines() if line.startswith("mrr@7") and " - " in line]
    assert f"{sum(shared) / len(shared):+.3f} [" in paired and paired.endswith(" 20")


# --------------------------------------------------------------------------- each question scored once


def _testset(path: Path, n: int) -> Path:
    item = {"source_doc": "a.md", "start_index": 0, "end_index": 10}
    rows = [item | {"question": f"Q{i}?", "answer": f"Answer {i} here."} for i in range(n)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def retriever(question: str) -> dict[str, Any]:
    """Retrieves nothing for the first two questions, so the rows made for them before any
    context was seen are scored differently from the final ones ("unknown" vs "found nothing")."""
    if question in ("Q0?", "Q1?"):
        return {"answer": "No idea.", "contexts": []}
    contexts = [{"text": f"Answer {question[1:-1]} here.", "source": "a.md", "start_index": 0, "end_index": 10}]
    return {"answer": f"Answer {question[1:-1]}.", "contexts": contexts}


def test_a_rerun_scores_each_question_once_and_writes_what_a_fresh_scoring_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    testset = _testset(tmp_path / "set.jsonl", 12)
    scored: list[str] = []
    real = results_module.deterministic_metrics

    def counting(item: Any, *args: Any, **kwargs: Any) -> Any:
        scored.append(item.id)
        return real(item, *args, **kwargs)

    monkeypatch.setattr(results_module, "deterministic_metrics", counting)
    config = EvalConfig(testset=testset, metrics=["retrieval", "text"], judge=None, concurrency=1)
    first = evaluate(config, retriever, tmp_path / "eval", progress=False)
    # Once per question during the run, and again at the end only for Q0 and Q1, whose rows were
    # made before the run had shown that the system reports contexts.
    assert len(scored) == 12 + 2
    first_rows = (tmp_path / "eval" / "results.jsonl").read_text()
    assert [json.loads(line)["hit@k"] for line in first_rows.splitlines()][:3] == [0.0, 0.0, 1.0]

    scored.clear()
    assert evaluate(config, retriever, tmp_path / "eval", progress=False) == first
    assert scored == []  # nothing changed: the stamp holds (tests/evaluate/test_eval_stamp.py)

    # Without the stamp the re-run takes the full path; still each question is scored once, not twice.
    (tmp_path / "eval" / STAMP_FILE).unlink()
    written = (tmp_path / "eval" / "results.jsonl").stat().st_ino
    again = evaluate(config, retriever, tmp_path / "eval", progress=False)
    assert len(scored) == 12
    assert again.metrics == first.metrics
    assert (tmp_path / "eval" / "results.jsonl").read_text() == first_rows
    # ... and the rows the run wrote, final and in order, are not written a second time.
    assert (tmp_path / "eval" / "results.jsonl").stat().st_ino == written

    # Scoring every question afresh from the logs (no rows from a run to reuse) writes the same.
    fresh = Evaluation(
        tmp_path / "eval", load_testset(str(testset)), CallableSystem(retriever), ["retrieval", "text"], k=7
    )
    scored.clear()
    assert fresh.write_results().metrics == first.metrics
    assert len(scored) == 12
    assert (tmp_path / "eval" / "results.jsonl").read_text() == first_rows


# --------------------------------------------------------------------------- the baseline's index


def _evaluate_baseline(
    llm: StandInLLM, testset: Path, corpus: Path, out: Path, chunk_size: int = 400
) -> dict[str, Any]:
    args = ["evaluate", str(testset), "--baseline", "bm25", "--corpus", str(corpus), "--chunk-size", str(chunk_size),
            "--reader-model", "openai:stand-in", "--base-url", llm.base_url, "--metrics", "retrieval,text", "--out",
            str(out), "-q"]  # fmt: skip
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    summary: dict[str, Any] = json.loads((out / "summary.json").read_text())
    return summary


def test_the_cli_keeps_the_baseline_index_and_rebuilds_it_only_for_a_changed_corpus(
    llm: StandInLLM, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="qagen.corpus.bm25_index")
    corpus = write_corpus(tmp_path / "corpus", documents=6)
    testset = tmp_path / "set.jsonl"
    out = tmp_path / "eval"

    def questions(n: int) -> Path:
        # Each run adds a question: its answer is not stored yet, so the baseline needs its index.
        rows = [{"question": f"What did report {i} say?", "answer": f"It said {i}."} for i in range(n)]
        testset.write_text("".join(json.dumps(row) + "\n" for row in rows))
        return testset

    def built() -> int:
        return sum(record.getMessage().startswith("Built a BM25 index") for record in caplog.records)

    def reused() -> int:
        return sum(record.getMessage().startswith("Reusing the BM25 index") for record in caplog.records)

    first = _evaluate_baseline(llm, questions(4), corpus, out)
    [saved] = list(index_cache_dir().glob("bm25-*"))  # in the cache, not in --out
    assert (built(), reused()) == (1, 0)

    baseline_module._memory.clear()  # as a new process starts: only the saved index can help
    again = _evaluate_baseline(llm, questions(5), corpus, out)
    assert (built(), reused()) == (1, 1)
    assert again["questions"] == 5 and again["answered"] == 5 and first["answered"] == 4

    baseline_module._memory.clear()
    (corpus / "zz new.md").write_text("The lighthouse report 99 says something new entirely.", encoding="utf-8")
    _evaluate_baseline(llm, questions(6), corpus, out)
    assert (built(), reused()) == (2, 1)
    [replaced] = list(index_cache_dir().glob("bm25-*"))  # the stale index is gone, not kept beside
    assert replaced != saved

    baseline_module._memory.clear()
    _evaluate_baseline(llm, questions(7), corpus, out, chunk_size=300)  # other chunking: another index
    assert (built(), reused()) == (3, 1)
    assert len(list(index_cache_dir().glob("bm25-*"))) == 2


def test_answers_read_from_an_older_corpus_are_asked_again(llm: StandInLLM, tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpus", documents=6)
    testset = _testset(tmp_path / "set.jsonl", 3)
    out = tmp_path / "eval"

    def answers_asked() -> int:
        return sum(entry["kind"] == "answer" for entry in llm.log)

    _evaluate_baseline(llm, testset, corpus, out)
    assert answers_asked() == 3
    _evaluate_baseline(llm, testset, corpus, out)
    assert answers_asked() == 3  # nothing changed: every answer is reused
    (corpus / "zz new.md").write_text("The lighthouse report 99 says something new entirely.", encoding="utf-8")
    _evaluate_baseline(llm, testset, corpus, out)
    assert answers_asked() == 6  # the corpus changed: what it retrieves, and so every answer, may differ
