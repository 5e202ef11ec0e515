"""A failed first attempt leaves nothing that blocks the corrected command on the same `--out`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from qagen.cli.app import main

MODEL = ["--generator-model", "openai:stand-in", "-n", "8", "--seed", "7", "-q"]
CHUNKING = ["--chunk-size", "400", "--chunk-overlap", "40"]


def _build(llm: Any, corpus: Path | str, out: Path | str, *options: str) -> Result:
    args = ["build", str(corpus), "--out", str(out), "--base-url", llm.base_url, *MODEL, *(options or CHUNKING)]
    return CliRunner().invoke(main, args)


def test_a_corpus_path_typo_then_the_corrected_command(llm: Any, corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "nested" / "run"
    typo = _build(llm, tmp_path / "corpsu", out)
    assert typo.exit_code == 1 and "Corpus path not found" in typo.output
    assert not (tmp_path / "nested").exists()  # the folders it made for the run are gone again
    fixed = _build(llm, corpus, out)
    assert fixed.exit_code == 0, fixed.output
    assert json.loads((out / "summary.json").read_text())["funnel"]["sampled"] == 8


def test_an_invalid_chunk_overlap_then_the_corrected_command(llm: Any, corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    invalid = _build(llm, corpus, out, "--chunk-size", "400", "--chunk-overlap", "400")
    assert (
        invalid.exit_code == 1 and "--chunk-overlap must be at least 0 and smaller than --chunk-size" in invalid.output
    )
    assert not out.exists()
    assert llm.log == []
    fixed = _build(llm, corpus, out, "--chunk-size", "400", "--chunk-overlap", "40")
    assert fixed.exit_code == 0, fixed.output
    assert json.loads((out / "run.json").read_text())["fingerprint"]["chunking"]["chunk_overlap"] == 40


def test_a_corpus_without_text_then_the_right_corpus(llm: Any, corpus: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "blank.txt").write_text("   \n")
    out = tmp_path / "run"
    out.mkdir()  # made by the user beforehand: it stays, empty
    nothing = _build(llm, empty, out)
    assert nothing.exit_code == 1 and "No usable text" in nothing.output
    assert out.is_dir() and list(out.iterdir()) == []  # no lock file, no temporary chunks, no run.json
    fixed = _build(llm, corpus, out)
    assert fixed.exit_code == 0, fixed.output


def test_a_stage_command_on_a_folder_that_is_no_run_leaves_it_as_it_was(tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    result = CliRunner().invoke(main, ["stage", "filter", str(folder)])
    assert result.exit_code == 1 and "not a qagen run directory" in result.output
    assert list(folder.iterdir()) == []


def test_a_folder_with_other_files_is_still_refused_and_left_alone(llm: Any, corpus: Path, tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    refused = _build(llm, corpus, folder)
    assert refused.exit_code == 1 and "exists and is not a qagen run directory; choose another --out" in refused.output
    assert [path.name for path in folder.iterdir()] == ["notes.txt"]


def test_the_same_out_and_corpus_written_relative_and_absolute_resume_one_run(
    llm: Any, corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert _build(llm, "corpus", "run").exit_code == 0
    calls = len(llm.log)
    again = _build(llm, corpus, tmp_path / "run")
    assert again.exit_code == 0, again.output
    assert len(llm.log) == calls  # resumed: nothing to do, nothing paid twice
