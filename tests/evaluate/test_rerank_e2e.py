"""`qagen evaluate --baseline bm25 --rerank ...` end to end against the stand-in server: the grid's
directories, the reader seeing the reranker's order, resume without a second rerank call, a failed
rerank call recorded on its question, and the listwise calls in batch rounds."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from click.testing import CliRunner, Result

from qagen.cli.app import main
from qagen.cli.evaluate import _rerank_names
from qagen.corpus.load.documents import CorpusReport, iter_documents
from qagen.evaluate.systems.baseline import Baseline
from qagen.evaluate.systems.bundled import rag_baseline
from qagen.evaluate.systems.corpus_chunks import clear_memory
from qagen.evaluate.systems.rerank.base import RerankRecord
from qagen.evaluate.systems.rerank.specs import RerankSpec
from qagen.llm.client import LLMClient, ModelSettings
from standins.corpus import write_corpus
from standins.llm.outcomes import first_sentence
from standins.llm.rerank import ranking
from standins.llm.server import StandInLLM
from tests.extras import require_dense

CHUNK = "400"
K = 2
TOP = 6


class Setup(NamedTuple):
    server: StandInLLM
    corpus: Path
    testset: Path
    root: Path


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    """A corpus, a test set of questions made from its sentences, and one stand-in server."""
    root = tmp_path_factory.mktemp("rerank")
    corpus = write_corpus(root / "corpus", documents=8, paragraphs=4)
    documents = sorted(iter_documents(corpus, report=CorpusReport()), key=lambda d: d.source)
    lines = [
        {"question": f"What about {first_sentence(doc.text)}", "answer": "an answer", "source_doc": doc.source}
        for doc in documents[:5]
    ]
    testset = root / "testset.jsonl"
    testset.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    with StandInLLM() as server:
        yield Setup(server, corpus, testset, root)


@pytest.fixture(autouse=True)
def _fresh_memory() -> Iterator[None]:
    clear_memory()
    yield
    clear_memory()


def evaluate(setup: Setup, out: Path, *extra: str) -> Result:
    args = [
        "evaluate", setup.testset, "--baseline", "bm25", "--corpus", setup.corpus, "--chunk-size", CHUNK,
        "--k", str(K), "--rerank-top", str(TOP), "--metrics", "retrieval", "--reader-model", "openai:stand-in",
        "--base-url", setup.server.base_url, "--out", out, "-q", *extra,
    ]  # fmt: skip
    return CliRunner().invoke(main, [str(arg) for arg in args], catch_exceptions=False)


def rows(eval_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (eval_dir / "results.jsonl").read_text().splitlines()]


def rerank_calls(server: StandInLLM, since: int = 0) -> list[str]:
    """The kinds of the rerank requests logged since `since`: `rerank` (either endpoint) or `listwise`."""
    log = server.log[since:]
    return [
        "listwise" if entry["path"].endswith("/chat/completions") else "endpoint"
        for entry in log
        if entry["kind"] == "rerank" or (entry["path"].endswith("/rerank") and entry["method"] == "POST")
    ]


def candidates(setup: Setup, question: str) -> list[str]:
    """The retriever's top `TOP` chunks for `question`: what the reranker is given, in retrieval order."""
    reader = LLMClient.connect(ModelSettings(spec="openai:stand-in", base_url=setup.server.base_url))
    baseline = rag_baseline(setup.corpus, chunk_size=int(CHUNK), k=TOP, progress=False).build(reader)
    assert isinstance(baseline, Baseline)
    return [context.text for context in baseline.retrieve(question)]


def test_a_rerank_grid_puts_each_reranker_in_its_own_directory_and_the_reader_sees_its_order(
    setup: Setup,
) -> None:
    out = setup.root / "grid"
    since = len(setup.server.log)
    result = evaluate(setup, out, "--rerank", "none,reader,endpoint:BAAI/bge-reranker-base")
    assert result.exit_code == 0, result.output
    names = {"none": "none", "reader": "reader", "endpoint": "endpoint-bge-reranker-base"}
    folders = {kind: out / f"chunk{CHUNK}_k{K}_rerank-{name}" for kind, name in names.items()}
    assert all(folder.is_dir() for folder in folders.values()), sorted(p.name for p in out.iterdir())
    questions = len(rows(folders["none"]))
    assert sorted(rerank_calls(setup.server, since)) == ["endpoint"] * questions + ["listwise"] * questions

    settings = {kind: json.loads((f / "eval.json").read_text())["system_settings"] for kind, f in folders.items()}
    assert "rerank" not in settings["none"]
    assert settings["reader"]["rerank"] == {**settings["reader"]["rerank"], "reranker": "listwise", "top": TOP}
    assert settings["endpoint"]["rerank"] == {"reranker": "endpoint", "model": "BAAI/bge-reranker-base", "top": TOP}
    assert not (folders["none"] / "reranks.jsonl").exists()

    changed = 0
    for row_none, row_reader, row_endpoint in zip(*(rows(folders[kind]) for kind in names), strict=True):
        retrieved = candidates(setup, row_none["question"])
        assert row_none["retrieved_docs"] == retrieved[:K]
        # The stand-in ranks by word overlap: both rerankers must hand the reader its top K, in its order.
        expected = [retrieved[i] for i, _ in ranking(row_none["question"], retrieved)][:K]
        assert row_reader["retrieved_docs"] == expected
        assert row_endpoint["retrieved_docs"] == expected
        changed += expected != retrieved[:K]
    assert changed  # the reranking changed what the reader saw for some question

    records = [RerankRecord.model_validate_json(line) for line in (folders["reader"] / "reranks.jsonl").open()]
    assert len(records) == questions and all(r.failure is None and r.ranked == TOP for r in records)
    assert all(r.scores == [None] * TOP for r in records)  # listwise: an order, no scores


def test_a_second_run_makes_no_rerank_call(setup: Setup) -> None:
    out = setup.root / "resume"
    assert evaluate(setup, out, "--rerank", "reader,endpoint:bge").exit_code == 0
    since = len(setup.server.log)
    result = evaluate(setup, out, "--rerank", "reader,endpoint:bge")
    assert result.exit_code == 0, result.output
    assert setup.server.log[since:] == []  # no rerank call, no reader call: everything was stored


def test_a_changed_reranker_is_another_system_asked_again(setup: Setup) -> None:
    out = setup.root / "changed"
    assert evaluate(setup, out, "--rerank", "endpoint:bge").exit_code == 0
    answers = (out / "answers.jsonl").read_text().splitlines()
    since = len(setup.server.log)
    assert evaluate(setup, out, "--rerank", "endpoint:bge", "--rerank-top", str(TOP + 2)).exit_code == 0
    assert rerank_calls(setup.server, since) == ["endpoint"] * len(answers)  # new candidates, new orders


def test_a_failed_rerank_call_is_recorded_on_its_question_and_asked_again_on_resume(setup: Setup) -> None:
    out = setup.root / "faults"
    setup.server.configure(fault_rate=0.5, fault_kinds=("500",), fault_attempts=100)
    try:
        result = evaluate(setup, out, "--rerank", "endpoint:bge", "--max-retries", "0")
    finally:
        setup.server.configure(fault_rate=0.0)
    assert result.exit_code == 0, result.output
    # The fault knob hits reader calls too: the rerank failures are the rows that say so.
    failed = [row for row in rows(out) if row["answer_error"].startswith("rerank_failed")]
    unanswered = [row for row in rows(out) if row["generated_answer"] is None]
    assert failed and len(unanswered) < len(rows(out))  # some rerank calls failed, other questions went on
    assert {row["answer_error"] for row in failed} == {"rerank_failed: server_error"}
    assert all(row["retrieved_docs"] == [] for row in failed)  # no reranked chunks: nothing passed off as them
    assert "rerank_failed: server_error" in result.output
    records = [RerankRecord.model_validate_json(line) for line in (out / "reranks.jsonl").open()]
    assert sum(r.failure is not None and r.failure.retryable for r in records) == len(failed)

    since = len(setup.server.log)
    assert evaluate(setup, out, "--rerank", "endpoint:bge", "--max-retries", "0").exit_code == 0
    assert rerank_calls(setup.server, since) == ["endpoint"] * len(failed)  # only the failed ones again
    assert all(row["generated_answer"] is not None for row in rows(out))


def test_listwise_calls_go_in_batch_rounds_before_the_readers(setup: Setup) -> None:
    out = setup.root / "batch"
    result = evaluate(setup, out, "--rerank", "reader", "--batch", "--batch-poll", "0.01")
    assert result.exit_code == 0, result.output
    batch_lines = [e for e in setup.server.log if e["method"] == "BATCH" and e["kind"] in ("rerank", "answer")]
    kinds = [e["kind"] for e in batch_lines]
    questions = len(rows(out))
    assert kinds == ["rerank"] * questions + ["answer"] * questions  # round 1 ranks, round 2 answers
    assert all(row["generated_answer"] is not None for row in rows(out))


@pytest.mark.parametrize(
    ("extra", "message", "needs"),
    [
        (
            ["--rerank", "listwise"],
            "Unknown reranker 'listwise' in --rerank; name one as none, cross-encoder:PATH",
            None,
        ),
        # The cross-encoder is read by sentence-transformers (the dense extra): without it, that is the message.
        (
            ["--rerank", "cross-encoder:/nowhere"],
            "No cross-encoder model folder at /nowhere: name in --rerank",
            "sentence_transformers",
        ),
    ],
)
def test_a_wrong_reranker_is_one_clear_sentence(
    setup: Setup, extra: list[str], message: str, needs: str | None
) -> None:
    if needs is not None:
        require_dense(needs)
    result = evaluate(setup, setup.root / "wrong", *extra)
    assert result.exit_code != 0
    assert message in result.output


def test_rerank_needs_the_baseline(setup: Setup, tmp_path: Path) -> None:
    answers = tmp_path / "answers.jsonl"
    answers.write_text(json.dumps({"question": "q", "answer": "a"}) + "\n")
    args = ["evaluate", str(setup.testset), "--answers", str(answers), "--rerank", "reader", "-o", str(tmp_path / "o")]
    result = CliRunner().invoke(main, args)
    assert result.exit_code != 0 and "--rerank applies to --baseline:" in result.output


def test_two_rerankers_of_one_slug_get_distinct_directory_names() -> None:
    specs = [RerankSpec("cross-encoder", "/a/model"), RerankSpec("cross-encoder", "/b/model"), RerankSpec("none")]
    names = _rerank_names(specs)
    assert names[specs[2]] == "none"
    assert names[specs[0]].startswith("ce-model-") and names[specs[1]].startswith("ce-model-")
    assert names[specs[0]] != names[specs[1]]
