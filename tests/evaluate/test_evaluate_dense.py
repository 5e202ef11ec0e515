"""`qagen evaluate --baseline dense|hybrid`: the index reused by a second run, into the same or a new
`--out` (no chunk embedded, one line saying where the index lives), two runs at once embedding the
corpus once, the grid over retrievers and embeddings models, and `qagen compare` over it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from qagen.cli.app import main
from qagen.corpus.index_cache import index_cache_dir
from qagen.evaluate.systems.corpus_chunks import clear_memory
from standins.corpus import write_corpus
from standins.llm.server import StandInLLM
from tests.extras import DENSE_MODULES, require_dense

QUESTIONS = [
    ("What did the xylophonist from the northern harbour play for the workers?", "Music.", "zz keyword.md"),
    ("Where did the council move the archive to?", "To the museum.", "zz keyword.md"),
    ("What did the lighthouse keeper keep a logbook of?", "Passing ships.", "zz keyword.md"),
]
KEYWORD_DOC = (
    "The lighthouse keeper kept a logbook of passing ships.\n\n"
    "In the spring the xylophonist from the northern harbour played music for the workers every evening.\n\n"
    "The council later moved the archive to the museum."
)


@pytest.fixture(autouse=True)
def _fresh_memory() -> Iterator[None]:
    require_dense("faiss")
    clear_memory()
    yield
    clear_memory()


@pytest.fixture()
def inputs(tmp_path: Path) -> tuple[Path, Path]:
    corpus = write_corpus(tmp_path / "corpus", documents=4, paragraphs=3)
    (corpus / "zz keyword.md").write_text(KEYWORD_DOC, encoding="utf-8")
    testset = tmp_path / "set.jsonl"
    rows = [{"question": q, "answer": a, "source_doc": s} for q, a, s in QUESTIONS]
    testset.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return corpus, testset


def evaluate(llm: StandInLLM, testset: Path, corpus: Path, out: Path, *extra: str) -> Result:
    args = ["evaluate", str(testset), "--corpus", str(corpus), "--reader-model", "openai:stand-in", "--base-url",
            llm.base_url, "--metrics", "retrieval", "--chunk-size", "300", "--out", str(out), "-q", *extra]  # fmt: skip
    return CliRunner().invoke(main, args, catch_exceptions=False)


def embeddings_calls(llm: StandInLLM) -> int:
    return sum(entry["kind"] == "embeddings" for entry in llm.log)


def summary(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((path / "summary.json").read_text())
    return data


def test_a_second_run_reuses_the_dense_index_and_says_so(
    llm: StandInLLM, inputs: tuple[Path, Path], tmp_path: Path
) -> None:
    corpus, testset = inputs
    out = tmp_path / "eval"
    first = evaluate(llm, testset, corpus, out, "--baseline", "dense", "--embeddings", "openai:embedder", "--k", "2")
    assert first.exit_code == 0, first.output
    assert embeddings_calls(llm) >= 1 + len(QUESTIONS)  # the chunks, then each question
    assert "note: Built a dense index of " in first.stderr
    [saved] = [path for path in index_cache_dir().iterdir() if path.name.startswith("dense-") and path.is_dir()]
    stats = summary(out)
    assert stats["system_settings"]["retriever"] == "faiss" and stats["metrics"]["hit@2"]["mean"] == 1.0
    assert stats["system_settings"]["embeddings"].startswith("openai:embedder at http://127.0.0.1:")

    clear_memory()  # a new process: only the saved index can help
    llm.reset()
    again = evaluate(llm, testset, corpus, out, "--baseline", "dense", "--embeddings", "openai:embedder", "--k", "2")
    assert again.exit_code == 0, again.output
    assert embeddings_calls(llm) == 0 and llm.log == []  # nothing embedded, nothing asked
    chunks = json.loads((saved / "qagen_index.json").read_text())["chunks"]
    reuse = f"note: Reusing the dense index of {chunks} chunks embedded by embedder, saved in {saved}: "
    reuse += "no chunk embedded again."
    assert again.stderr.splitlines().count(reuse) == 1
    assert summary(out)["metrics"] == stats["metrics"]


def test_a_second_evaluation_into_a_new_out_embeds_nothing_and_says_where_the_index_lives(
    llm: StandInLLM, inputs: tuple[Path, Path], tmp_path: Path
) -> None:
    corpus, testset = inputs
    first = evaluate(llm, testset, corpus, tmp_path / "first", "--baseline", "dense", "--embeddings", "openai:embedder")
    assert first.exit_code == 0, first.output
    [saved] = [path for path in index_cache_dir().glob("dense-*") if path.is_dir()]
    assert f"embedded by embedder, saved in {saved} for later runs." in first.stderr

    clear_memory()  # a new process
    llm.reset()
    second = evaluate(
        llm, testset, corpus, tmp_path / "second", "--baseline", "dense", "--embeddings", "openai:embedder"
    )
    assert second.exit_code == 0, second.output
    chunk_calls = [entry for entry in llm.log if entry["kind"] == "embeddings"]
    assert len(chunk_calls) == len(QUESTIONS)  # the questions only: no chunk embedded
    chunks = json.loads((saved / "qagen_index.json").read_text())["chunks"]
    reuse = f"note: Reusing the dense index of {chunks} chunks embedded by embedder, saved in {saved}: "
    assert reuse + "no chunk embedded again." in second.stderr.splitlines()
    assert summary(tmp_path / "second")["metrics"] == summary(tmp_path / "first")["metrics"]


@pytest.mark.slow
def test_two_dense_evaluations_at_once_embed_the_corpus_once(
    llm: StandInLLM, inputs: tuple[Path, Path], tmp_path: Path
) -> None:
    corpus, testset = inputs
    llm.configure(latency=0.3)  # embedding takes a while: the second process starts while the first embeds
    cache = tmp_path / "shared cache"
    env = {**os.environ, "QAGEN_CACHE": str(cache)}
    args = ["--corpus", str(corpus), "--reader-model", "openai:stand-in", "--base-url", llm.base_url, "--metrics",
            "retrieval", "--chunk-size", "300", "-q", "--baseline", "dense",
            "--embeddings", "openai:embedder"]  # fmt: skip
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "qagen", "evaluate", str(testset), "--out", str(tmp_path / name), *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("one", "two")
    ]
    outputs = [process.communicate(timeout=300) for process in processes]
    assert [process.returncode for process in processes] == [0, 0], outputs
    notes = [stderr for _, stderr in outputs]
    assert sum("note: Built a dense index of " in stderr for stderr in notes) == 1, notes
    assert sum("note: Reusing the dense index of " in stderr for stderr in notes) == 1, notes
    [saved] = [path for path in index_cache_dir(cache).glob("dense-*") if path.is_dir()]
    meta = json.loads((saved / "qagen_index.json").read_text())
    # The chunks were embedded once (in batches of 64), each process's questions once.
    assert embeddings_calls(llm) == -(-meta["chunks"] // 64) + 2 * len(QUESTIONS)
    assert summary(tmp_path / "one")["metrics"] == summary(tmp_path / "two")["metrics"]


def test_a_grid_over_retrievers_and_embeddings_models_and_its_report(
    llm: StandInLLM, inputs: tuple[Path, Path], tmp_path: Path
) -> None:
    corpus, testset = inputs
    grid = tmp_path / "grid"
    result = evaluate(
        llm, testset, corpus, grid, "--baseline", "bm25,dense,hybrid", "--embeddings", "openai:embedder,openai:e2",
        "--k", "1,3",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    runs = sorted(grid.glob("*_k[0-9]*"))
    expected = [f"{system}_chunk300_k{k}" for system in ("bm25", "dense-e2", "dense-embedder", "hybrid-e2",
                                                          "hybrid-embedder") for k in (1, 3)]  # fmt: skip
    assert [run.name for run in runs] == expected
    assert [path for path in grid.iterdir() if path not in runs] == []  # the indexes are in the cache
    dense_saved = [path for path in index_cache_dir().glob("dense-*") if path.is_dir()]
    assert len(dense_saved) == 2  # one per model, shared by k and by hybrid
    for run in runs:
        settings = summary(run)["system_settings"]
        kind = run.name.split("_")[0].split("-")[0]
        assert settings["retriever"] == {"bm25": "bm25s", "dense": "faiss", "hybrid": "rrf(bm25s, faiss)"}[kind]
        assert summary(run)["k"] == int(run.name[-1])
    assert f"qagen compare {grid}/*_k[0-9]* --chart comparison.png" in result.stdout
    report = CliRunner().invoke(main, ["compare", *map(str, runs)])
    assert report.exit_code == 0, report.output
    assert "hybrid-embedder_chunk300_k1 - bm25_chunk300_k1" in report.stdout


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--baseline", "dense,sparse"], "Unknown --baseline 'sparse'; choose from bm25, dense, hybrid."),
        (["--baseline", "bm25", "--embeddings", "openai:a,openai:b"], "only applies to --baseline dense or hybrid"),
        (["--baseline", "dense", "--embeddings", "minilm"], "Unknown embeddings model 'minilm'"),
        (["--baseline", "dense", "--embeddings", "openai:a,openai-a"], "Unknown embeddings model 'openai-a'"),
        (["--baseline", "dense", "--embeddings", "openai:x/a,ollama:x/a"], "would share the directory dense-x-a_"),
    ],
)
def test_bad_grids_fail_before_any_call(
    llm: StandInLLM, inputs: tuple[Path, Path], tmp_path: Path, extra: list[str], message: str
) -> None:
    corpus, testset = inputs
    result = evaluate(llm, testset, corpus, tmp_path / "eval", *extra)
    assert result.exit_code == 1 and message in result.stderr
    assert llm.log == []


def test_help_imports_no_retrieval_library() -> None:
    code = (
        "import sys\nfrom qagen.cli.app import main\n"
        "for args in (['--help'], ['evaluate', '--help']):\n"
        "    try:\n        main.main(args, prog_name='qagen')\n    except SystemExit:\n        pass\n"
        "print(sorted(m for m in ('torch', 'faiss', 'sentence_transformers', 'bm25s') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines()[-1] == "[]"


def test_local_embeddings_are_the_default_of_dense(llm: StandInLLM, inputs: tuple[Path, Path], tmp_path: Path) -> None:
    require_dense(*DENSE_MODULES)
    corpus, testset = inputs
    out = tmp_path / "eval"
    result = evaluate(llm, testset, corpus, out, "--baseline", "hybrid", "--k", "3")
    assert result.exit_code == 0, result.output
    assert embeddings_calls(llm) == 0  # embedded on this machine, by the bundled all-MiniLM-L6-v2
    settings = summary(out)["system_settings"]
    assert settings["embeddings"].startswith("sentence-transformers all-MiniLM-L6-v2 ")
    assert summary(out)["metrics"]["hit@3"]["mean"] == 1.0
    clear_memory()
    again = evaluate(llm, testset, corpus, out, "--baseline", "hybrid", "--k", "3")
    assert "embedded by all-MiniLM-L6-v2, saved in" in again.stderr and "no chunk embedded again." in again.stderr


def test_without_the_extra_dense_is_one_sentence_naming_the_install(
    llm: StandInLLM, inputs: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "faiss", None)  # as if faiss-cpu were not installed
    corpus, testset = inputs
    result = evaluate(llm, testset, corpus, tmp_path / "eval", "--baseline", "bm25,hybrid")
    assert result.exit_code == 1 and llm.log == []
    assert result.stderr == (
        "error: Dense retrieval needs the optional dense dependencies (faiss is not installed): "
        'pip install "qagen[dense]".\n'
    )
    assert evaluate(llm, testset, corpus, tmp_path / "bm25", "--baseline", "bm25").exit_code == 0  # BM25 needs none
