"""End to end: `qagen evaluate` and `qagen compare` over HTTP against the stand-in LLM.

Every value an LLM judge produced is checked against what the stand-in server sent (its request
log carries each reply with the `score` it meant), and every retrieval value against a textbook
computation on the row's own retrieved sources.
"""

from __future__ import annotations

import inspect
import json
import shutil
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from click.testing import CliRunner, Result
from datasets import load_from_disk
from langchain_core.runnables import RunnableLambda

from qagen.cli.app import main
from qagen.corpus.index_cache import index_cache_dir
from qagen.evaluate.api import evaluate
from qagen.evaluate.config import EvalConfig
from qagen.evaluate.judges.answer_correct import NO_KEY_TERM_CAP
from qagen.evaluate.testset import load_testset
from qagen.llm.client import ModelSettings
from standins.corpus import write_corpus
from standins.llm.outcomes import first_sentence
from standins.llm.server import StandInLLM

PNG = b"\x89PNG\r\n\x1a\n"


class Built(NamedTuple):
    server: StandInLLM
    corpus: Path
    run: Path
    root: Path


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    """One stand-in server and one small built test set, shared by this module's tests."""
    root = tmp_path_factory.mktemp("evaluate")
    corpus = write_corpus(root / "corpus", documents=12)
    with StandInLLM() as server:
        result = invoke(
            "build", corpus, "--out", root / "run", *generator(server), "--n-generations", "16", "--seed", "7",
            "--chunk-size", "400", "--chunk-overlap", "40",
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        yield Built(server, corpus, root / "run", root)


def invoke(*args: object) -> Result:
    quiet = ["-q"] if args[0] in ("build", "evaluate") else []
    return CliRunner().invoke(main, [str(arg) for arg in args] + quiet, catch_exceptions=False)


def generator(server: StandInLLM) -> list[str]:
    return ["--generator-model", "openai:stand-in", "--base-url", server.base_url]


def model(server: StandInLLM) -> list[str]:
    return ["--reader-model", "openai:stand-in", "--base-url", server.base_url]


def rows(eval_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (eval_dir / "results.jsonl").read_text().splitlines()]


def summary(eval_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((eval_dir / "summary.json").read_text())
    return data


def sent(server: StandInLLM, since: int = 0) -> dict[str, Any]:
    """What the server said: each reply text -> its log entry (equal texts carry equal scores)."""
    return {entry["reply"]: entry for entry in server.log[since:] if entry["reply"] is not None}


def textbook_rr(sources: list[str | None], relevant: str, k: int) -> float:
    for rank, source in enumerate(sources[:k], start=1):
        if source == relevant:
            return 1 / rank
    return 0.0


def baseline_eval(built: Built, out: Path, *extra: str) -> Result:
    return invoke(
        "evaluate", built.run, "--baseline", "bm25", "--corpus", built.corpus, *model(built.server), "--out", out,
        "--chunk-size", "400", *extra,
    )  # fmt: skip


@pytest.fixture(scope="module")
def baseline(built: Built) -> tuple[Path, int]:
    """The default evaluation of the bundled baseline over the built run, and where its log began."""
    since = len(built.server.log)
    result = baseline_eval(built, built.root / "eval")
    assert result.exit_code == 0, result.output
    return built.root / "eval", since


# --------------------------------------------------------------------------- 1. the baseline


def judged_as_said(row: dict[str, Any], said: dict[str, Any]) -> bool:
    """Whether the row's answer_correct is the server's Yes / No, read as written (the stand-in sends no
    token probabilities unless told to), capped when the answer holds none of the reference's words."""
    entry = said[row["answer_correct_raw"]]
    detail = row["answer_correct_detail"]
    no_key_term = detail["reference_words_shared"] == 0
    return (
        entry["kind"] == "judge_answer_correct"
        and row["answer_correct_reason"] == ""
        and detail["written"] == ("yes" if entry["score"] else "no")
        and detail["read_as"] == "written"
        and row["answer_correct"] == (min(entry["score"], NO_KEY_TERM_CAP) if no_key_term else entry["score"])
    )


def test_baseline_rows_hold_what_the_server_said_and_textbook_retrieval(
    built: Built, baseline: tuple[Path, int]
) -> None:
    eval_dir, since = baseline
    kept = list(load_from_disk(str(built.run / "dataset")))
    results = rows(eval_dir)
    assert [row["id"] for row in results] == [row["id"] for row in kept]  # one row per kept question
    said = sent(built.server, since)
    for row, item in zip(results, kept, strict=True):
        assert (row["question"], row["true_answer"], row["source_doc"]) == (
            item["question"].strip(), item["answer"].strip(), item["source_doc"]
        )  # fmt: skip
        # The reader (stand-in) answers with the first sentence of Document 0: the top context.
        assert row["generated_answer"] == first_sentence(row["retrieved_docs"][0])
        assert judged_as_said(row, said)
        assert row["reciprocal_rank@k"] == textbook_rr(row["retrieved_sources"], row["source_doc"], 7)
        assert row["hit@k"] == float(row["source_doc"] in row["retrieved_sources"][:7])
        assert len(row["retrieved_docs"]) == len(row["retrieved_sources"]) <= 7
        assert row["test_settings"].startswith("bm25-k7-chunk400")

    stats = summary(eval_dir)
    judged = [row["answer_correct"] for row in results]
    assert stats["metrics"]["answer_correct"]["mean"] == pytest.approx(sum(judged) / len(judged))
    rr = [row["reciprocal_rank@k"] for row in results]
    assert stats["metrics"]["mrr@7"]["mean"] == pytest.approx(sum(rr) / len(rr))
    assert set(stats["metrics"]) >= {"answer_correct", "hit@7", "mrr@7", "ndcg@7", "context_rouge_l_recall", "token_f1"}
    for name, metric in stats["metrics"].items():
        if metric["mean"] is not None:
            assert metric["low"] <= metric["mean"] <= metric["high"], name
            assert metric["n"] + metric["missing"] == len(results)
    assert stats["judge_model"] == "openai:stand-in" and stats["reader_model"] == "openai:stand-in"
    assert stats["system"].startswith("bm25-k7-chunk400") and stats["system_settings"]["chunk_size"] == 400
    assert str(built.run) in stats["testset"]
    assert (stats["questions"], stats["answered"], stats["failed"]) == (len(results), len(results), 0)
    assert stats["judges"]["answer_correct"]["judged"] == len(results)
    assert stats["judges"]["answer_correct"]["failed"] == 0 and stats["judges"]["answer_correct"]["failures"] == {}
    judge_calls = [e for e in built.server.log[since:] if e["kind"] == "judge_answer_correct"]
    assert len(judge_calls) == len(results)
    assert stats["usage"]["judge"]["input_tokens"] > 0 and stats["usage"]["system"]["input_tokens"] > 0


# --------------------------------------------------------------------------- 4. resume


def test_rerun_makes_no_request_and_gives_identical_results(built: Built, baseline: tuple[Path, int]) -> None:
    eval_dir, _ = baseline
    before_rows, before_summary = rows(eval_dir), summary(eval_dir)
    calls = len(built.server.log)
    result = baseline_eval(built, eval_dir)
    assert result.exit_code == 0, result.output
    assert len(built.server.log) == calls
    assert rows(eval_dir) == before_rows and summary(eval_dir) == before_summary


def test_an_interrupted_run_pays_only_for_what_is_missing(built: Built, baseline: tuple[Path, int]) -> None:
    eval_dir, _ = baseline
    copy = built.root / "eval-interrupted"
    shutil.copytree(eval_dir, copy)
    # As if killed halfway: the last half of the answers and of the verdicts never reached the disk.
    lost: dict[str, int] = {}
    for name in ("answers.jsonl", "judgements.jsonl"):
        lines = (copy / name).read_text().splitlines(keepends=True)
        (copy / name).write_text("".join(lines[: len(lines) // 2]))
        lost[name] = len(lines) - len(lines) // 2
    calls = len(built.server.log)
    assert baseline_eval(built, copy).exit_code == 0
    kinds = Counter(entry["kind"] for entry in built.server.log[calls:])
    # The reader answers a question again the same way, so only lost verdicts are judged again.
    assert kinds == {"answer": lost["answers.jsonl"], "judge_answer_correct": lost["judgements.jsonl"]}
    assert rows(copy) == rows(eval_dir)


# --------------------------------------------------------------------------- 2. the cookbook CSV


def test_cookbook_csv_with_an_answers_file_reports_the_broken_rows(
    built: Built, reference_data: Path, tmp_path: Path
) -> None:
    csv_file = reference_data / "hf_doc_qa_eval.csv"
    testset = load_testset(str(csv_file))
    answers = tmp_path / "answers.jsonl"
    with answers.open("w") as out:
        for number, item in enumerate(testset.items):
            answer = item.true_answer if number % 2 else "I do not know."
            out.write(json.dumps({"question": item.question, "answer": answer, "contexts": [item.true_answer]}) + "\n")
    since = len(built.server.log)
    result = invoke("evaluate", csv_file, "--answers", answers, *model(built.server), "--out", tmp_path / "eval")
    assert result.exit_code == 0, result.output
    assert "skipped row 51 of the test set: empty_reference_answer" in result.stderr
    assert "skipped row 52 of the test set: malformed_row" in result.stderr
    stats = summary(tmp_path / "eval")
    assert [(s["row"], s["reason"].split(":")[0]) for s in stats["skipped_rows"]] == [
        (51, "empty_reference_answer"),
        (52, "malformed_row"),
    ]
    results = rows(tmp_path / "eval")
    assert len(results) == stats["questions"] == stats["answered"] == 64
    said = sent(built.server, since)
    assert all(judged_as_said(row, said) for row in results)
    # No source documents in this test set: no retrieval metric, said as missing, not as 0.
    assert stats["metrics"]["hit@7"] == {
        "mean": None, "low": None, "high": None, "n": 0, "missing": 64, "missing_by_reason": {"no_inputs": 64}
    }  # fmt: skip
    assert stats["metrics"]["context_rouge_l_recall"]["n"] == 64


# --------------------------------------------------------------------------- 3. other systems


def _fake_rag(question: str) -> dict[str, Any]:
    """A RAG system that always retrieves the same two documents, in an order set by the question."""
    sources = ["doc 01 glacier.md", "doc 03 honeybee.txt"]
    if len(question) % 2:
        sources.reverse()
    return {
        "answer": f"An answer to: {question}",
        "contexts": ["first passage.", "second passage."],
        "sources": sources,
    }


def _check_fake_rag_rows(eval_dir: Path, server: StandInLLM, since: int) -> None:
    said = sent(server, since)
    results = rows(eval_dir)
    assert results and summary(eval_dir)["failed"] == 0
    for row in results:
        expected = _fake_rag(row["question"])
        assert row["generated_answer"] == expected["answer"]
        assert row["retrieved_sources"] == expected["sources"]
        assert row["reciprocal_rank@k"] == textbook_rr(expected["sources"], row["source_doc"], 7)
        assert row["correctness"] == said[row["correctness_raw"]]["score"]


def test_rag_module_function(built: Built, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = inspect.getsource(_fake_rag)
    (tmp_path / "qagen_test_rag_module.py").write_text(
        f"from typing import Any\n\n{source}\n\nasync def answer(question):\n    return _fake_rag(question)\n"
    )
    monkeypatch.chdir(tmp_path)  # `--rag` finds modules in the current directory
    since = len(built.server.log)
    result = invoke(
        "evaluate", built.run, "--rag", "qagen_test_rag_module:answer", *model(built.server), "--out", "eval",
        "--metrics", "correctness,retrieval",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    _check_fake_rag_rows(tmp_path / "eval", built.server, since)
    assert summary(tmp_path / "eval")["system"] == "qagen_test_rag_module:answer"


@pytest.fixture()
def endpoint() -> Iterator[str]:
    """A RAG service on 127.0.0.1: POST {"question"} -> {answer, contexts, sources}."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            question = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["question"]
            body = json.dumps(_fake_rag(question)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/ask"
    server.shutdown()
    server.server_close()


def test_http_endpoint(built: Built, endpoint: str, tmp_path: Path) -> None:
    since = len(built.server.log)
    result = invoke(
        "evaluate", built.run, "--endpoint", endpoint, *model(built.server), "--out", tmp_path / "eval",
        "--metrics", "correctness,retrieval",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    _check_fake_rag_rows(tmp_path / "eval", built.server, since)


def test_langchain_runnable_from_python(built: Built, tmp_path: Path) -> None:
    since = len(built.server.log)
    stats = evaluate(
        EvalConfig(
            testset=str(built.run),
            metrics=["correctness", "retrieval"],
            judge=ModelSettings(spec="openai:stand-in", base_url=built.server.base_url),
        ),
        RunnableLambda(_fake_rag),
        tmp_path / "eval",
        progress=False,
    )
    _check_fake_rag_rows(tmp_path / "eval", built.server, since)
    assert stats.model_dump(mode="json") == summary(tmp_path / "eval") and stats.answered == stats.questions > 0


# --------------------------------------------------------------------------- 5. grid and report


def test_settings_grid_and_report(built: Built, tmp_path: Path) -> None:
    grid = tmp_path / "grid"
    result = baseline_eval(built, grid, "--chunk-size", "300,600", "--k", "2,4", "--metrics", "correctness,retrieval")
    assert result.exit_code == 0, result.output
    names = sorted(path.name for path in grid.iterdir())  # the runs alone: the indexes are in the cache
    assert names == ["chunk300_k2", "chunk300_k4", "chunk600_k2", "chunk600_k4"]
    assert len(list(index_cache_dir().glob("bm25-*"))) == 2  # one index per chunk size, shared by the k's
    for name in names:
        stats = summary(grid / name)
        assert stats["system_settings"]["chunk_size"] == int(name[5:8]) and stats["k"] == int(name[-1])
        assert f"hit@{stats['k']}" in stats["metrics"]
    assert "paired on shared questions" in result.stdout and "chunk300_k4 - chunk300_k2" in result.stdout
    assert not list(grid.rglob("*.png"))  # a chart only when asked, with `qagen compare --chart`
    assert f"qagen compare {grid}/*_k[0-9]* --chart comparison.png" in result.stdout
    # The command shown works as the shell expands it: the runs, not the index folder beside them.
    assert sorted(path.name for path in grid.glob("*_k[0-9]*")) == names
    assert invoke("compare", *sorted(grid.glob("*_k[0-9]*"))).exit_code == 0

    # A run that answered only some questions: the paired test uses the ids both runs have values for.
    kept = rows(grid / "chunk300_k2")
    answers = tmp_path / "answers.jsonl"
    answers.write_text(
        "".join(json.dumps(_fake_rag(row["question"]) | {"question": row["question"]}) + "\n" for row in kept[::2])
    )
    partial = tmp_path / "partial"
    result = invoke("evaluate", built.run, "--answers", answers, *model(built.server), "--out", partial, "--k", "2")
    assert result.exit_code == 0, result.output
    plot = tmp_path / "plots" / "out.png"
    result = invoke("compare", grid / "chunk300_k2", partial, "--chart", plot, "--metric", "mrr@2")
    assert result.exit_code == 0, result.output
    assert plot.read_bytes().startswith(PNG)
    first = {row["id"]: row["reciprocal_rank@k"] for row in kept}
    second = {row["id"]: row["reciprocal_rank@k"] for row in rows(partial) if row["reciprocal_rank@k"] is not None}
    shared = sorted(first.keys() & second.keys())
    assert 2 <= len(shared) < len(kept)
    diff = sum(second[i] - first[i] for i in shared) / len(shared)
    line = next(
        line for line in result.stdout.splitlines() if line.startswith("mrr@2 ") and "partial - chunk300_k2" in line
    )
    assert f"{diff:+.3f} [" in line and line.split()[-1] == str(len(shared))


# --------------------------------------------------------------------------- 6. RAGAS and graders


def _average_precision(useful: list[int]) -> float:
    hits, total = 0, 0.0
    for rank, verdict in enumerate(useful, start=1):
        if verdict:
            hits += 1
            total += hits / rank
    return total / hits if hits else 0.0


def test_ragas_and_graders_values_are_what_the_server_said(built: Built, tmp_path: Path) -> None:
    since = len(built.server.log)
    result = baseline_eval(built, tmp_path / "eval", "--metrics", "ragas,graders")
    assert result.exit_code == 0, result.output
    # The CLI says it with its flag; the summary (what a Python user reads too) with the setting.
    assert "answer_relevancy left out of 'ragas': it needs an embeddings model (--embeddings)." in result.stderr
    said = sent(built.server, since)
    kinds = Counter((e["kind"], e["criterion"]) for e in built.server.log[since:])
    for kind in ("statements", "verdicts"):
        assert kinds[(f"ragas_faithfulness_{kind}", None)] > 0
    for name in ("precision", "recall", "relevance"):
        assert kinds[(f"ragas_context_{name}", None)] > 0
    for grader in ("correct", "relevant", "grounded", "retrieval_relevant"):
        assert kinds[("grader", grader)] > 0
    results = rows(tmp_path / "eval")
    seen: set[float] = set()
    for row in results:
        assert "answer_relevancy" not in row and "correctness" not in row
        statements, verdicts = (said[raw]["score"] for raw in row["faithfulness_raw"])
        assert row["faithfulness"] == verdicts / statements
        useful = [said[raw]["score"] for raw in row["context_precision_raw"]]
        assert len(useful) == len(row["retrieved_docs"])
        assert row["context_precision"] == pytest.approx(_average_precision(useful))
        attributed = said[row["context_recall_raw"]]["score"]
        assert row["context_recall"] == attributed / len(row["context_recall_detail"]["sentences"])
        copied = said[row["context_relevance_raw"]]["score"]
        detail = row["context_relevance_detail"]
        assert detail["matched"] == copied and detail["unmatched"] == []
        assert row["context_relevance"] == copied / detail["context_sentences"]
        for grader in ("correct", "relevant", "grounded", "retrieval_relevant"):
            entry = said[row[f"{grader}_raw"]]
            assert (entry["criterion"], row[grader]) == (grader, entry["score"])
        seen.update(row[name] for name in ("faithfulness", "context_precision", "correct"))
    assert len(seen) > 2  # the stand-in said different things; a constant would not pass
    stats = summary(tmp_path / "eval")
    for metric in ("faithfulness", "context_precision", "context_recall", "context_relevance", "grounded"):
        values = [row[metric] for row in results]
        assert stats["metrics"][metric]["mean"] == pytest.approx(sum(values) / len(values))
        assert stats["judges"][metric] | {"prompts": {}} == {
            "judged": len(results), "retrieved_nothing": 0, "failed": 0, "failures": {}, "not_judged": {},
            "undefined": {}, "prompts": {},
        }  # fmt: skip
    assert stats["notes"] == ["answer_relevancy left out of 'ragas': it needs an embeddings model (`embeddings`)."]


def test_answer_relevancy_named_without_embeddings_is_an_error(built: Built, tmp_path: Path) -> None:
    result = invoke(
        "evaluate", built.run, "--rag", "json:dumps", *model(built.server), "--out", tmp_path / "e",
        "--metrics", "correctness,answer_relevancy",
    )  # fmt: skip
    assert result.exit_code == 1 and "answer_relevancy compares embeddings" in result.stderr
    assert not (tmp_path / "e").exists()


def test_answer_relevancy_with_embeddings_from_python(built: Built, tmp_path: Path) -> None:
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from qagen.evaluate.judges.ragas import cosine

    def system(question: str) -> str:
        return "I do not know." if len(question) % 3 == 0 else f"The glacier report says {question}"

    embedder = DeterministicFakeEmbedding(size=16)
    since = len(built.server.log)
    stats = evaluate(
        EvalConfig(
            testset=built.run,
            metrics=["answer_relevancy"],
            judge=ModelSettings(spec="openai:stand-in", base_url=built.server.base_url),
            embeddings=embedder,
        ),
        system,
        tmp_path / "eval",
        progress=False,
    )
    said = sent(built.server, since)
    results = rows(tmp_path / "eval")
    assert stats.judges["answer_relevancy"].judged == len(results)
    noncommittal = 0
    for row in results:
        entry = said[row["answer_relevancy_raw"]]
        questions = row["answer_relevancy_detail"]["questions"]
        assert entry["kind"] == "ragas_answer_relevancy" and len(questions) == 3
        if entry["score"]:  # the stand-in found the answer noncommittal
            noncommittal += 1
            assert row["answer_relevancy"] == 0.0
            continue
        vectors = embedder.embed_documents([row["question"], *questions])
        cosines = [cosine(vectors[0], vector) for vector in vectors[1:]]
        assert row["answer_relevancy"] == pytest.approx(sum(c for c in cosines if c is not None) / 3)
    assert 0 < noncommittal < len(results)


def test_hub_dataset_id(built: Built, hub: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import datasets

    from qagen.publish.push import push_run

    # load_dataset would otherwise ask "datasets-server.<HF_ENDPOINT host>" for exported infos.
    monkeypatch.setattr(datasets.config, "USE_PARQUET_EXPORT", False)
    repo = f"alice/qa-eval-{uuid.uuid4().hex[:12]}"
    push_run(built.run, repo, token="hf_test_token")
    kept = list(load_from_disk(str(built.run / "dataset")))
    answers = tmp_path / "answers.jsonl"
    answers.write_text(
        "".join(json.dumps(_fake_rag(row["question"]) | {"question": row["question"]}) + "\n" for row in kept)
    )
    since = len(built.server.log)
    result = invoke(
        "evaluate", repo, "--token", "hf_test_token", "--answers", answers, *model(built.server),
        "--out", tmp_path / "e", "--metrics", "correctness,retrieval",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    stats = summary(tmp_path / "e")
    assert stats["testset"] == f"{repo} (Hub)" and stats["answered"] == len(kept)
    assert [row["id"] for row in rows(tmp_path / "e")] == [row["id"] for row in kept]
    _check_fake_rag_rows(tmp_path / "e", built.server, since)
