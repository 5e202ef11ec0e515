"""A corpus that changed since a run directory was chunked is refused with the list of changes;
`--update-corpus` chunks it again and reuses every reply whose chunk did not change."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from datasets import Dataset, load_from_disk

from qagen import BuildConfig, CorpusSettings
from qagen.cli.app import main
from qagen.corpus.load.fingerprint import CorpusChanges, CorpusFingerprint, InputDigest, compare
from qagen.errors import CorpusChangedError
from qagen.generation.pipeline import chunk_stage
from qagen.runs.rundir import RunDir
from standins.corpus import write_corpus

CHUNKING = ["--chunk-size", "400", "--chunk-overlap", "40", "--seed", "7", "-q"]


def _chunk(corpus: Path | str, out: Path | str, *extra: str) -> Result:
    return CliRunner().invoke(main, ["stage", "chunk", str(corpus), "--out", str(out), *CHUNKING, *extra])


def _build(llm: Any, corpus: Path | str, out: Path | str, *extra: str) -> Result:
    model = ["--generator-model", "openai:stand-in", "--base-url", llm.base_url]
    return CliRunner().invoke(main, ["build", str(corpus), "--out", str(out), *model, *CHUNKING, *extra])


def _edit(corpus: Path) -> str:
    name = "doc 03 volcano.txt"
    (corpus / name).write_text((corpus / name).read_text(encoding="utf-8") + "\n\nA new paragraph.", encoding="utf-8")
    return f"changed: {name}"


def _add(corpus: Path) -> str:
    (corpus / "notes" / "extra.md").parent.mkdir()
    (corpus / "notes" / "extra.md").write_text("The lighthouse keeper logged every ship in 1921.", encoding="utf-8")
    return "added: notes/extra.md"


def _remove(corpus: Path) -> str:
    (corpus / "doc 07 coral reef.md").unlink()
    return "removed: doc 07 coral reef.md"


def _same_size_edit(corpus: Path) -> str:
    # Same size, and the modification time put back: only the content hash can tell.
    path = corpus / "doc 08 telescope.md"
    before = path.stat()
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("telescope", "TELESCOPE", 1), encoding="utf-8")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    return "changed: doc 08 telescope.md"


@pytest.mark.parametrize("change", [_edit, _add, _remove, _same_size_edit])
def test_a_changed_corpus_is_refused_with_what_changed(
    corpus: Path, tmp_path: Path, change: Callable[[Path], str]
) -> None:
    out = tmp_path / "run"
    assert _chunk(corpus, out).exit_code == 0
    chunks_before = (out / "chunks.jsonl").read_bytes()
    expected = change(corpus)
    refused = _chunk(corpus, out)
    assert refused.exit_code == 1
    assert f"error: The corpus changed since it was chunked into {out} ({expected})" in refused.output
    assert "Pass --update-corpus to chunk it again" in refused.output  # the CLI names its flag
    assert (out / "chunks.jsonl").read_bytes() == chunks_before  # nothing was touched


def test_every_kind_of_change_is_listed_at_once(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert _chunk(corpus, out).exit_code == 0
    expected = "; ".join(change(corpus) for change in (_add, _remove, _edit))
    refused = _chunk(corpus, out)
    assert refused.exit_code == 1 and f"({expected})" in refused.output


def test_the_same_folder_by_relative_and_absolute_path_is_one_corpus_and_one_run(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert _chunk("corpus", "run").exit_code == 0
    (tmp_path / "link").symlink_to(corpus)
    spellings = [(corpus, tmp_path / "run"), ("./corpus/", "./run"), ("corpus/../corpus", "run"), ("link", "run")]
    for spelling, out in spellings:
        again = _chunk(spelling, out)
        assert again.exit_code == 0, again.output
    assert json.loads((tmp_path / "run" / "corpus.json").read_text())["location"] == str(corpus.resolve())


def test_what_decides_is_what_the_corpus_holds_not_where_it_is(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert _chunk(corpus, out).exit_code == 0
    # The project moved, or a colleague copied it: the same files elsewhere resume the same run.
    moved = tmp_path / "elsewhere" / "docs"
    shutil.copytree(corpus, moved)
    assert _chunk(moved, out).exit_code == 0
    # Another folder that holds other files is another corpus, and is named as such.
    other = tmp_path / "other"
    other.mkdir()
    (other / "a.txt").write_text("The windmill at the harbour was rebuilt in 1871 by the council.")
    refused = _chunk(other, out)
    assert refused.exit_code == 1
    assert f"The corpus {other} differs from {corpus}, which was chunked into {out} (added: a.txt; removed: doc 00" in (
        refused.output
    )


def _chunk_ids(out: Path) -> set[str]:
    return {json.loads(line)["id"] for line in (out / "chunks.jsonl").read_text(encoding="utf-8").splitlines()}


def _drafts_sent(llm: Any) -> int:
    return sum(1 for entry in llm.log if entry["kind"] == "generation")


def test_update_corpus_chunks_again_and_pays_only_for_new_chunks(llm: Any, tmp_path: Path) -> None:
    corpus, out = write_corpus(tmp_path / "small", documents=10, paragraphs=3), tmp_path / "run"
    assert _build(llm, corpus, out).exit_code == 0  # every chunk, so the new sample holds every old chunk left
    old_chunks, paid = _chunk_ids(out), llm.requests_by_body()
    _edit(corpus), _add(corpus), _remove(corpus)
    assert _build(llm, corpus, out).exit_code == 1
    assert llm.requests_by_body() == paid  # the refusal made no call

    drafts_before = _drafts_sent(llm)
    updated = _build(llm, corpus, out, "--update-corpus")
    assert updated.exit_code == 0, updated.output
    assert "The corpus changed since it was chunked" in updated.output
    new_chunks = _chunk_ids(out) - old_chunks
    assert 0 < len(new_chunks) < len(old_chunks) / 4
    # Exactly the new chunks were drafted; every other draft (and its critiques) was reused.
    assert _drafts_sent(llm) - drafts_before == len(new_chunks)
    assert max(llm.requests_by_body().values()) == 1
    candidates = list(load_from_disk(str(out / "candidates")))
    assert {row["chunk_id"] for row in candidates} == _chunk_ids(out)
    sources = {row["source_doc"] for row in candidates}
    assert "notes/extra.md" in sources and "doc 07 coral reef.md" not in sources
    for row in candidates:  # every row is of the corpus as it is now
        text = (corpus / row["source_doc"]).read_text(encoding="utf-8")
        assert text[row["start_index"] : row["end_index"]] == row["context"]

    # The run now holds the new corpus: the same command resumes without the flag, and pays nothing.
    calls = len(llm.log)
    assert _build(llm, corpus, out).exit_code == 0
    assert len(llm.log) == calls


def test_a_run_without_a_corpus_record_is_not_trusted(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert _chunk(corpus, out).exit_code == 0
    (out / "corpus.json").unlink()  # as in a run directory made before the corpus was recorded
    refused = _chunk(corpus, out)
    assert refused.exit_code == 1 and "did not record the corpus" in refused.output
    assert _chunk(corpus, out, "--update-corpus").exit_code == 0
    assert _chunk(corpus, out).exit_code == 0


def test_a_dataset_corpus_is_fingerprinted_too(tmp_path: Path) -> None:
    rows = {"text": [f"Row {n} tells of the harbour station built in year {1900 + n}." for n in range(8)]}
    Dataset.from_dict(rows).save_to_disk(str(tmp_path / "ds"))
    config = BuildConfig(corpus=CorpusSettings(hf_dataset=str(tmp_path / "ds")))
    with RunDir(tmp_path / "run").locked() as run:
        run.open(config, {}, llm=False)
        assert chunk_stage(config, run, progress=False)["chunks"] == 8
        assert chunk_stage(config, run, progress=False)["chunks"] == 8  # unchanged: reused

    rows["text"].append("Row 8 is new.")
    Dataset.from_dict(rows).save_to_disk(str(tmp_path / "ds2"))
    os.replace(tmp_path / "ds", tmp_path / "old")
    os.replace(tmp_path / "ds2", tmp_path / "ds")
    with RunDir(tmp_path / "run").locked() as run, pytest.raises(CorpusChangedError, match="rows 8 -> 9"):
        chunk_stage(config, run, progress=False)
    with RunDir(tmp_path / "run").locked() as run:
        assert chunk_stage(config, run, progress=False, update_corpus=True)["chunks"] == 9


def test_long_lists_of_changes_are_cut_with_a_count() -> None:
    digest = InputDigest(size=1, sha256="a")
    old = CorpusFingerprint(location="/c", files={f"{n:02d}.txt": digest for n in range(30)})
    new = CorpusFingerprint(location="/c", files={f"{n:02d}.txt": digest for n in range(5)})
    changes = compare(old, new)
    assert changes == CorpusChanges(added=(), removed=tuple(f"{n:02d}.txt" for n in range(5, 30)), changed=())
    assert changes.describe() == "removed: " + ", ".join(f"{n:02d}.txt" for n in range(5, 15)) + " and 15 more"
    assert not compare(old, old).any()
