"""Bad input through the real command line, in a subprocess: never a traceback, always a named reason.

A corpus that mixes good files with every kind of bad one builds from the good ones and names each
bad one on stderr; a corpus with nothing usable, or a missing path, exits non-zero with one sentence.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from standins.llm.server import StandInLLM

GOOD = "The {} lighthouse was built in the northern harbour by engineers who measured the tides for years."
CSV_WITHOUT_TEXT = "title,body\nA,the text is in the body column\n"


def qagen(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OPENAI_API_KEY": "test-key", "PYTHONIOENCODING": "utf-8"}
    return subprocess.run(
        [sys.executable, "-m", "qagen", *args], env=env, capture_output=True, text=True, timeout=timeout
    )


def build(llm: StandInLLM, corpus: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return qagen(
        "build", str(corpus), "--out", str(out), "--generator-model", "openai:stand-in", "--base-url", llm.base_url,
        "-n", "20", "--chunk-size", "400", "--chunk-overlap", "40", "-q", *extra,
    )  # fmt: skip


def write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def chunk_sources(run: Path) -> set[str]:
    lines = (run / "chunks.jsonl").read_text(encoding="utf-8").splitlines()
    return {json.loads(line)["source"] for line in lines}


def skipped(run: Path) -> dict[str, str]:
    report: dict[str, Any] = json.loads((run / "chunking.json").read_text(encoding="utf-8"))
    return {item["source"]: item["reason"] for item in report["skipped_inputs"]}


def one_sentence(process: subprocess.CompletedProcess[str]) -> str:
    assert process.returncode == 1, (process.returncode, process.stderr)
    assert "Traceback" not in process.stderr, process.stderr
    lines = [line for line in process.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), process.stderr
    return lines[0]


def test_a_mixed_corpus_builds_from_the_good_files_and_names_every_bad_one(llm: StandInLLM, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    good = {
        "plain.txt": GOOD.format("first"),
        "name with spaces.md": GOOD.format("second"),
        "ünïcödé 名前.txt": GOOD.format("third"),
        "latin1.txt": "Le phare de la côte nord fut bâti près du port où les ingénieurs mesuraient les marées.",
        "/".join(f"d{level}" for level in range(60)) + "/deep.txt": GOOD.format("deepest"),
    }
    for name, text in good.items():
        write(corpus / name, text.encode("cp1252") if name == "latin1.txt" else text)
    bad = {
        "empty.txt": "empty",
        "blank.md": "empty",
        "binary.txt": "binary",
        "undecodable.txt": "undecodable",
        "program.exe": "unsupported_type",
        "dangling.txt": "dangling_symlink",
        "loop.txt": "symlink_loop",
        "sub/back": "symlink_loop",
        "no_text_column.csv": "missing_text_column",
        "deep.html": "html_error",
        "nested.jsonl#row0": "bad_json_line",
        "surrogate.jsonl#row0": "undecodable",
        "values.jsonl#row0": "not_text",
        "values.jsonl#row1": "not_text",
        "values.jsonl#row2": "not_text",
        "values.jsonl#row3": "not_text",
    }
    write(corpus / "empty.txt", b"")
    write(corpus / "blank.md", " \n\t \n")
    write(corpus / "binary.txt", b"\x89PNG\r\n\x1a\n\x00\x00" + bytes(range(256)))
    write(corpus / "undecodable.txt", b"bytes \x81\x8d\x8f\x90\x9d that no code page defines")
    write(corpus / "program.exe", b"MZ\x90\x00")
    (corpus / "dangling.txt").symlink_to(corpus / "gone.txt")
    (corpus / "loop.txt").symlink_to(corpus / "loop.txt")
    write(corpus / "sub" / "inner.txt", GOOD.format("inner"))
    good["sub/inner.txt"] = GOOD.format("inner")
    (corpus / "sub" / "back").symlink_to(corpus, target_is_directory=True)
    write(corpus / "no_text_column.csv", CSV_WITHOUT_TEXT)
    # Nesting far beyond any real document: parsers that recurse must not take the run down.
    write(corpus / "deep.html", "<html><body>" + "<div>" * 50_000 + "deep" + "</div>" * 50_000 + "</body></html>")
    nested_row = '{"text": ' + "[" * 50_000 + "]" * 50_000 + "}"
    write(corpus / "nested.jsonl", nested_row + "\n" + json.dumps({"text": GOOD.format("row")}) + "\n")
    good["nested.jsonl#row1"] = GOOD.format("row")
    # A JSON escape can spell a lone surrogate, which is not text and cannot be written as UTF-8.
    write(corpus / "surrogate.jsonl", '{"text": "half a character: \\ud800 here"}\n')
    # A number, a boolean, a list and an object where the text should be: rows, but no documents.
    values: list[object] = [42, True, ["a", "list"], {"an": "object"}, GOOD.format("typed")]
    write(corpus / "values.jsonl", "".join(json.dumps({"text": value}) + "\n" for value in values))
    good["values.jsonl#row4"] = GOOD.format("typed")
    # A file name that is not UTF-8 (a Latin-1 name from an old archive).
    with open(os.path.join(os.fsencode(corpus), b"caf\xe9 menu.txt"), "wb") as handle:
        handle.write(GOOD.format("bytes-named").encode())
    if Path("/proc/self/mem").exists():  # reading it fails with EIO, even for root
        (corpus / "unreadable.txt").symlink_to("/proc/self/mem")
        bad["unreadable.txt"] = "unreadable"

    out = tmp_path / "run"
    process = build(llm, corpus, out)
    assert process.returncode == 0, process.stderr
    assert "Traceback" not in process.stderr, process.stderr
    assert skipped(out) == bad
    for source, reason in bad.items():
        assert f"skipped {source}: {reason}" in process.stderr, (source, process.stderr)
    sources = chunk_sources(out)
    assert set(good) <= sources
    assert sources - set(good) == {"caf\\xe9 menu.txt"}  # named readably, and used
    assert "kept" in process.stdout


def test_an_empty_corpus_is_one_sentence(llm: StandInLLM, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    message = one_sentence(build(llm, tmp_path / "empty", tmp_path / "run"))
    assert str(tmp_path / "empty") in message and "nothing to build from" in message
    assert llm.log == []


def test_a_corpus_of_only_bad_files_is_one_sentence_with_the_reasons(llm: StandInLLM, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    write(corpus / "empty.txt", b"")
    write(corpus / "binary.txt", b"\x00\x01\x02")
    write(corpus / "table.csv", CSV_WITHOUT_TEXT)
    process = build(llm, corpus, tmp_path / "run")
    assert process.returncode == 1 and "Traceback" not in process.stderr, process.stderr
    errors = [line for line in process.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, process.stderr
    assert "1 binary" in errors[0] and "1 empty" in errors[0] and "1 missing_text_column" in errors[0]
    assert "table.csv" in process.stderr  # the bad files are named above the error
    assert llm.log == []


def test_a_missing_path_is_one_sentence(llm: StandInLLM, tmp_path: Path) -> None:
    missing = tmp_path / "no such folder"
    message = one_sentence(build(llm, missing, tmp_path / "run"))
    assert str(missing) in message and "not found" in message
    assert llm.log == []


def test_a_corpus_that_is_a_single_bad_file_is_one_sentence(llm: StandInLLM, tmp_path: Path) -> None:
    single = write(tmp_path / "only.txt", b"\x00" * 100)
    process = build(llm, single, tmp_path / "run")
    assert process.returncode == 1 and "Traceback" not in process.stderr, process.stderr
    lines = [line for line in process.stderr.splitlines() if line.strip()]
    assert lines[0].startswith("skipped only.txt: binary"), process.stderr
    assert len(lines) == 2 and lines[1].startswith("error: ") and str(single) in lines[1], process.stderr


def _peak_rss_mib(*args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run `qagen ARGS` in a child and report the child's peak resident memory."""
    script = (
        "import resource, subprocess, sys\n"
        "p = subprocess.run([sys.executable, '-m', 'qagen', *sys.argv[1:]], capture_output=True, text=True)\n"
        "sys.stdout.write(p.stdout); sys.stderr.write(p.stderr)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, file=sys.stderr)\n"
        "sys.exit(p.returncode)\n"
    )
    env = {**os.environ, "OPENAI_API_KEY": "test-key"}
    process = subprocess.run(
        [sys.executable, "-c", script, *args], env=env, capture_output=True, text=True, timeout=600
    )
    *rest, peak = process.stderr.rstrip("\n").split("\n")
    process.stderr = "\n".join(rest)
    return process, float(peak)


@pytest.mark.slow
def test_a_huge_sparse_file_is_skipped_without_being_read_into_memory(llm: StandInLLM, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    write(corpus / "good.txt", GOOD.format("small"))
    with (corpus / "disk image.txt").open("wb") as handle:
        handle.truncate(400 * 2**20)  # 400 MiB of NUL bytes, made in no time as a sparse file
    process, peak = _peak_rss_mib(
        "build", str(corpus), "--out", str(tmp_path / "run"), "--generator-model", "openai:stand-in",
        "--base-url", llm.base_url, "-n", "5", "-q",
    )  # fmt: skip
    assert process.returncode == 0 and "Traceback" not in process.stderr, process.stderr
    assert "skipped disk image.txt: binary" in process.stderr
    assert peak < 350, f"peak memory {peak:.0f} MiB: the whole file was read to find it is binary"


@pytest.mark.slow
def test_a_300_mb_text_file_builds_with_bounded_memory(llm: StandInLLM, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    write(corpus / "small.md", GOOD.format("small"))
    # 300 MB of text, written in 1 MB blocks of distinct paragraphs (most chunks repeat, as in
    # logs or mirrored pages; identical chunks are dropped).
    block = "\n\n".join(f"Entry {i}: " + GOOD.format(f"number {i}") for i in range(10_000)).encode() + b"\n\n"
    with (corpus / "huge.txt").open("wb") as handle:
        for _ in range(300_000_000 // len(block)):
            handle.write(block)
    size_mib = (corpus / "huge.txt").stat().st_size / 2**20
    process, peak = _peak_rss_mib(
        "build", str(corpus), "--out", str(tmp_path / "run"), "--generator-model", "openai:stand-in",
        "--base-url", llm.base_url, "-n", "20", "-q",
    )  # fmt: skip
    assert process.returncode == 0 and "Traceback" not in process.stderr, process.stderr
    assert chunk_sources(tmp_path / "run") == {"huge.txt", "small.md"}
    assert "kept" in process.stdout
    # The splitter holds the text, its pieces and its chunks at once (about 5x the file, 1.4 GB
    # here); more than that means another copy of the file crept in.
    assert peak < 6 * size_mib, f"peak memory {peak:.0f} MiB for a {size_mib:.0f} MiB file"


def _single_cell_table(path: Path, size: int) -> Path:
    """A .csv or .jsonl table of one row whose text cell is `size` bytes of quoted, escaped prose."""
    paragraph = 'The "tide book" of the north pier, the lighthouse and the customs house, rebuilt.\n\n'
    block = paragraph * (2**20 // len(paragraph))
    with path.open("w", encoding="utf-8", newline="") as handle:
        if path.suffix == ".csv":
            handle.write('id,text\r\n1,"')
            encoded = block.replace('"', '""')
        else:
            handle.write('{"id": 1, "text": "')
            encoded = json.dumps(block)[1:-1]
        for _ in range(size // len(block)):
            handle.write(encoded)
        handle.write('"\r\n' if path.suffix == ".csv" else '"}\n')
    return path


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_a_huge_cell_is_read_without_copies_of_it(tmp_path: Path, suffix: str) -> None:
    # csv.reader held a 200 MB cell about five times over (a line, a 4-byte-per-character buffer,
    # the string); now the cell is held as read and as text (benchmarks/bench_table_memory.py).
    cell = 32 * 2**20
    small = _single_cell_table(tmp_path / f"small{suffix}", 2**20)
    big = _single_cell_table(tmp_path / f"big{suffix}", cell)
    peaks = []
    for table in (small, big):
        process, peak = _peak_rss_mib("stage", "chunk", str(table), "--out", str(tmp_path / f"run-{table.stem}"), "-q")
        assert process.returncode == 0 and "skipped" not in process.stderr, process.stderr
        peaks.append(peak)
    ratio = (peaks[1] - peaks[0]) * 2**20 / cell
    assert ratio < 2.6, f"the cell cost {ratio:.1f}x its size ({peaks[1]:.0f} MiB against {peaks[0]:.0f} MiB)"
