"""The baseline's indexes live in qagen's cache, not in `--out`: a second evaluation of the same corpus
into another directory builds nothing and says where the index it reused lives; two evaluations at
once build it once and leave it whole. BM25 here (no extra needed); the dense index, whose building
is the expensive part, in `test_evaluate_dense.py`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from qagen.cli.app import main
from qagen.corpus.index_cache import cache_home, index_cache_dir
from qagen.evaluate.systems.corpus_chunks import clear_memory
from standins.corpus import write_corpus
from standins.llm.server import StandInLLM

QUESTION = {"question": "Where did the council move the archive to?", "answer": "To the museum.", "source_doc": "a.md"}


@pytest.fixture(autouse=True)
def _fresh_memory() -> Iterator[None]:
    clear_memory()  # as a new process: only what is saved can help
    yield
    clear_memory()


@pytest.fixture()
def inputs(tmp_path: Path) -> tuple[Path, Path]:
    corpus = write_corpus(tmp_path / "corpus", documents=4, paragraphs=3)
    (corpus / "a.md").write_text("The council later moved the archive to the museum.", encoding="utf-8")
    testset = tmp_path / "set.jsonl"
    testset.write_text(json.dumps(QUESTION) + "\n", encoding="utf-8")
    return corpus, testset


def arguments(llm: StandInLLM, testset: Path, corpus: Path, out: Path, *extra: str) -> list[str]:
    return ["evaluate", str(testset), "--baseline", "bm25", "--corpus", str(corpus), "--reader-model",
        "openai:stand-in",
            "--base-url", llm.base_url, "--metrics", "retrieval", "--chunk-size", "300", "--out", str(out), "-q",
            *extra]  # fmt: skip


def evaluate(llm: StandInLLM, testset: Path, corpus: Path, out: Path, *extra: str) -> Result:
    return CliRunner().invoke(main, arguments(llm, testset, corpus, out, *extra), catch_exceptions=False)


def saved_indexes(cache: Path, kind: str = "bm25") -> list[Path]:
    return sorted(path for path in index_cache_dir(cache).glob(f"{kind}-*") if path.is_dir())


def test_the_cache_is_found_as_the_hugging_face_caches_are(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("QAGEN_CACHE", str(tmp_path / "mine"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_home() == tmp_path / "mine"
    monkeypatch.delenv("QAGEN_CACHE")
    assert cache_home() == tmp_path / "xdg" / "qagen"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_home() == tmp_path / "home" / ".cache" / "qagen"
    assert index_cache_dir() == tmp_path / "home" / ".cache" / "qagen" / "indexes"


def test_a_second_evaluation_into_another_out_reuses_the_index_and_says_where(
    llm: StandInLLM, inputs: tuple[Path, Path], tmp_path: Path
) -> None:
    corpus, testset = inputs
    first = evaluate(llm, testset, corpus, tmp_path / "first")
    assert first.exit_code == 0, first.output
    [saved] = saved_indexes(cache_home())
    assert "note: Built a BM25 index of " in first.stderr
    assert not any(path.is_dir() for path in (tmp_path / "first").iterdir())  # nothing of the index in --out

    clear_memory()
    second = evaluate(llm, testset, corpus, tmp_path / "second")
    assert second.exit_code == 0, second.output
    chunks = json.loads((saved / "qagen_index.json").read_text())["chunks"]
    assert f"note: Reusing the BM25 index of {chunks} chunks saved in {saved}." in second.stderr.splitlines()
    assert "Built a BM25 index" not in second.stderr
    assert saved_indexes(cache_home()) == [saved]
    rows = [json.loads((out / "results.jsonl").read_text()) for out in (tmp_path / "first", tmp_path / "second")]
    assert rows[0]["retrieved_docs"] == rows[1]["retrieved_docs"]


def test_cache_dir_puts_the_indexes_elsewhere(llm: StandInLLM, inputs: tuple[Path, Path], tmp_path: Path) -> None:
    corpus, testset = inputs
    result = evaluate(llm, testset, corpus, tmp_path / "eval", "--cache-dir", str(tmp_path / "elsewhere"))
    assert result.exit_code == 0, result.output
    assert len(saved_indexes(tmp_path / "elsewhere")) == 1
    assert saved_indexes(cache_home()) == []


def test_two_evaluations_at_once_build_the_index_once_and_leave_it_whole(
    llm: StandInLLM, inputs: tuple[Path, Path], tmp_path: Path
) -> None:
    corpus, testset = inputs
    env = {**os.environ, "QAGEN_CACHE": str(tmp_path / "shared cache")}
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "qagen", *arguments(llm, testset, corpus, tmp_path / name)],
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
    assert sum("Built a BM25 index" in stderr for stderr in notes) == 1, notes
    assert sum("Reusing the BM25 index" in stderr for stderr in notes) == 1, notes
    [saved] = saved_indexes(tmp_path / "shared cache")
    assert not list(index_cache_dir(tmp_path / "shared cache").glob("*.tmp-*"))  # nothing half-written left
    # The index reads back whole, in a process of its own.
    clear_memory()
    again = CliRunner(env={"QAGEN_CACHE": env["QAGEN_CACHE"]}).invoke(
        main, arguments(llm, testset, corpus, tmp_path / "three"), catch_exceptions=False
    )
    assert again.exit_code == 0 and f"saved in {saved}." in again.stderr
    rows = [json.loads((tmp_path / name / "results.jsonl").read_text()) for name in ("one", "two", "three")]
    assert rows[0]["retrieved_sources"][0] == "a.md"
    assert rows[0]["retrieved_docs"] == rows[1]["retrieved_docs"] == rows[2]["retrieved_docs"]


# --- a cache that cannot be written: read what is there, build the rest in memory, say so once -----
_REFUSING_WRITES = textwrap.dedent(
    """
    import os, sys
    cache = os.path.realpath(sys.argv[1])
    WRITES = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC

    def refuse(event, args):
        # Root writes whatever the modes say: a read-only cache is a hook refusing every write in it.
        if event == "open" and isinstance(args[0], str) and os.path.realpath(args[0]).startswith(cache):
            mode, flags = args[1], args[2]
            if (isinstance(mode, str) and any(c in mode for c in "wax+")) or (flags or 0) & WRITES:
                raise PermissionError(f"read-only: {args[0]}")
        if event in ("os.mkdir", "os.rename", "os.replace", "os.remove", "os.unlink", "os.rmdir"):
            if os.path.realpath(str(args[0])).startswith(cache):
                raise PermissionError(f"read-only: {args[0]}")

    sys.addaudithook(refuse)
    from qagen.cli.app import main
    main.main(sys.argv[2:], prog_name="qagen")
    """
)


def unusable_notes(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "cannot be written" in line]


# `--cache-dir` is where a cache is (test_cache_dir_puts_the_indexes_elsewhere): the read-only case by
# its other setting is in the slow tier.
@pytest.mark.parametrize("setting", ["QAGEN_CACHE", pytest.param("--cache-dir", marks=pytest.mark.slow)])
def test_a_read_only_cache_is_read_and_said_once(
    llm: StandInLLM, inputs: tuple[Path, Path], tmp_path: Path, setting: str
) -> None:
    corpus, testset = inputs
    cache = tmp_path / "cache"
    extra = ("--cache-dir", str(cache)) if setting == "--cache-dir" else ()
    env = {"QAGEN_CACHE": str(cache if setting == "QAGEN_CACHE" else tmp_path / "unused")}
    first = CliRunner(env=env).invoke(
        main, arguments(llm, testset, corpus, tmp_path / "first", *extra), catch_exceptions=False
    )
    assert first.exit_code == 0, first.output
    [saved] = saved_indexes(cache)
    # Read-only now: the index in it is still reused; a chunk size it has no index for is built in memory.
    done = subprocess.run(
        [sys.executable, "-c", _REFUSING_WRITES, str(cache),
         *arguments(llm, testset, corpus, tmp_path / "second", *extra, "--chunk-size", "300,400")],
        env={**os.environ, **env}, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"saved in {saved}." in done.stderr
    [note] = unusable_notes(done.stderr)
    assert str(index_cache_dir(cache)) in note and setting in note, note
    assert saved_indexes(cache) == [saved]
    assert (tmp_path / "second" / "chunk400_k7" / "results.jsonl").is_file()


def test_a_cache_that_is_a_file_builds_in_memory_and_says_so_once(
    llm: StandInLLM, inputs: tuple[Path, Path], tmp_path: Path
) -> None:
    corpus, testset = inputs
    a_file = tmp_path / "not-a-folder"
    a_file.write_text("a file where the cache should be\n", encoding="utf-8")
    result = CliRunner(env={"QAGEN_CACHE": str(a_file)}).invoke(
        main, arguments(llm, testset, corpus, tmp_path / "eval"), catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    [note] = unusable_notes(result.stderr)
    assert "QAGEN_CACHE" in note, note
    row = json.loads((tmp_path / "eval" / "results.jsonl").read_text())
    assert row["retrieved_sources"][0] == "a.md"
    assert a_file.read_text(encoding="utf-8") == "a file where the cache should be\n"


@pytest.mark.parametrize("damaged", ["qagen_index.json", "contexts.jsonl", "the index's own file"])
def test_a_damaged_index_is_rebuilt_once_and_replaced(
    llm: StandInLLM, inputs: tuple[Path, Path], tmp_path: Path, damaged: str
) -> None:
    corpus, testset = inputs
    assert evaluate(llm, testset, corpus, tmp_path / "first").exit_code == 0
    [saved] = saved_indexes(cache_home())
    own = sorted(path.name for path in saved.iterdir() if path.name not in ("qagen_index.json", "contexts.jsonl"))
    (saved / (own[0] if damaged == "the index's own file" else damaged)).write_text("{damaged", encoding="utf-8")

    clear_memory()
    second = evaluate(llm, testset, corpus, tmp_path / "second")
    assert second.exit_code == 0, second.output
    assert "rebuilding it" in second.stderr and "Built a BM25 index" in second.stderr
    # The new index took the damaged one's place: the next evaluation reads it.
    clear_memory()
    third = evaluate(llm, testset, corpus, tmp_path / "third")
    assert third.exit_code == 0, third.output
    assert f"saved in {saved}." in third.stderr and "Built a BM25 index" not in third.stderr
    assert saved_indexes(cache_home()) == [saved]
    assert [path.name for path in index_cache_dir(cache_home()).iterdir() if ".tmp-" in path.name] == []
    rows = [json.loads((tmp_path / name / "results.jsonl").read_text()) for name in ("first", "second", "third")]
    assert rows[0]["retrieved_docs"] == rows[1]["retrieved_docs"] == rows[2]["retrieved_docs"]


def test_a_corpus_file_changed_with_its_size_and_time_kept_gets_a_new_index(
    llm: StandInLLM, inputs: tuple[Path, Path], tmp_path: Path
) -> None:
    corpus, testset = inputs
    first = evaluate(llm, testset, corpus, tmp_path / "first")
    assert first.exit_code == 0, first.output
    [before] = saved_indexes(cache_home())

    # An edit of the same length, its time set back: a restore from a backup or a `touch -r` does as much.
    changed = corpus / "a.md"
    kept = changed.stat()
    changed.write_text("The council later moved the archive to the cellar.", encoding="utf-8")
    os.utime(changed, ns=(kept.st_atime_ns, kept.st_mtime_ns))
    assert (changed.stat().st_size, changed.stat().st_mtime_ns) == (kept.st_size, kept.st_mtime_ns)

    # In the same process (the index kept in memory) and in a new one (the index saved in the cache).
    for name, fresh_process in (("second", False), ("third", True)):
        if fresh_process:
            clear_memory()
        result = evaluate(llm, testset, corpus, tmp_path / name)
        assert result.exit_code == 0, result.output
        retrieved = json.loads((tmp_path / name / "results.jsonl").read_text())["retrieved_docs"]
        moved = [text for text in retrieved if "moved the archive" in text]
        assert moved == ["The council later moved the archive to the cellar."], name
    after = [path for path in saved_indexes(cache_home()) if path != before]
    assert len(after) == 1, saved_indexes(cache_home())
