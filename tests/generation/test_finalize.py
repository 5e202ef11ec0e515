"""Finalize streams (one sampled chunk's records at a time, rows to Arrow in batches) and writes
exactly what the in-memory path wrote before it; and it stands by its outputs when nothing they
were made from changed."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from datasets import Dataset, load_from_disk

from qagen.config import BuildConfig
from qagen.corpus.chunk_index import ChunkIndex
from qagen.corpus.settings import CorpusSettings
from qagen.generation.filter import assemble
from qagen.generation.finalize import STAMP_FILE
from qagen.generation.pipeline import build, finalize, load_sample, run_llm_stages
from qagen.generation.tasks import BuildTasks
from qagen.generation.write import row_columns, row_features
from qagen.llm.backends import ModelSettings
from qagen.records import CandidateRow, Critique, DatasetRow, Draft
from qagen.runs.rundir import RunDir
from standins.corpus import write_corpus
from standins.llm.server import StandInLLM

BUILT, DRAFTED_ONLY, SAMPLED = 300, 340, 360
"""Chunks built whole; then drafted without critics; then sampled with no draft at all."""


def _config(corpus: Path, base_url: str, n: int, **changes: Any) -> BuildConfig:
    model = ModelSettings(spec="openai:stand-in", base_url=base_url, max_retries=0)
    settings: dict[str, Any] = {
        "corpus": CorpusSettings(path=str(corpus)), "chunking": {"chunk_size": 400, "chunk_overlap": 40},
        "n_generations": n, "seed": 3, "generator": model, "critic": model, "max_answer_chars": 197,
        "concurrency": 8, "max_failure_rate": 1.0,
        "dedup_embeddings": None,  # duplicates by meaning have their own test (test_semantic_dedup.py)
        "vetting": "cookbook",  # the writer before streaming knew the cookbook's columns, not `extra_critics`
    }  # fmt: skip
    return BuildConfig.model_validate({**settings, **changes})


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, BuildConfig]]:
    """A run with every kind of row: kept, rejected by a critic, too long, near-duplicate, failed
    (a reply that cannot be read, a call that failed), and undecided (a critic never asked, a chunk
    sampled and not drafted yet). Returns the run and the config that samples it all."""
    folder = tmp_path_factory.mktemp("finalize")
    corpus = write_corpus(folder / "corpus", documents=120, paragraphs=6)
    run = folder / "run"
    with StandInLLM() as server:
        server.configure(
            format_variety=0.3, generation_format_variety=0.3, malformed_rate=0.1, duplicate_rate=0.1,
            fault_rate=0.04, fault_kinds=["500"], fault_attempts=1000,
        )  # fmt: skip
        build(_config(corpus, server.base_url, BUILT), run, progress=False)
        drafting = _config(corpus, server.base_url, DRAFTED_ONLY)
        tasks = BuildTasks.for_config(drafting)
        sample = load_sample(drafting, RunDir(run))
        run_llm_stages(drafting, RunDir(run), tasks, sample, generate=True, critique=False, progress=False)
        sampling = _config(corpus, server.base_url, SAMPLED)
    yield run, sampling


def _save_as_before(rows: list[DatasetRow], target: Path, row_type: type[DatasetRow]) -> None:
    """The writer finalize used before it streamed (qagen 0.x `save_rows`), verbatim."""
    dumped = [row.model_dump() for row in rows]
    data = {column: [row[column] for row in dumped] for column in row_columns(row_type)}
    dataset = Dataset.from_dict(data, features=row_features(row_type), split="train")
    dataset.save_to_disk(str(target), num_shards=1)


def _same_directory(new: Path, old: Path) -> None:
    assert load_from_disk(str(new)).features == load_from_disk(str(old)).features
    assert list(load_from_disk(str(new))) == list(load_from_disk(str(old)))
    assert (new / "dataset_info.json").read_bytes() == (old / "dataset_info.json").read_bytes()
    new_state, old_state = (json.loads((d / "state.json").read_text()) for d in (new, old))
    assert {**new_state, "_fingerprint": ""} == {**old_state, "_fingerprint": ""}
    assert sorted(p.name for p in new.iterdir()) == sorted(p.name for p in old.iterdir())


def test_streamed_outputs_equal_the_in_memory_path(built: tuple[Path, BuildConfig], tmp_path: Path) -> None:
    source, config = built
    run_dir = tmp_path / "run"
    shutil.copytree(source, run_dir)
    run, tasks = RunDir(run_dir), BuildTasks.for_config(config)
    sample = load_sample(config, run)
    summary = finalize(config, run, tasks, sample)

    # Before: both logs loaded whole, every row in memory, then `Dataset.from_dict`.
    drafts, critiques = run.drafts.load(), run.critiques.load()
    before = assemble(sample, drafts, critiques, config, tasks, chunk_index=ChunkIndex(run.iter_chunks))
    _save_as_before(before.kept, tmp_path / "dataset-before", DatasetRow)
    _save_as_before(before.candidates, tmp_path / "candidates-before", CandidateRow)
    _same_directory(run.dataset_dir, tmp_path / "dataset-before")
    _same_directory(run.candidates_dir, tmp_path / "candidates-before")
    assert summary.funnel == before.funnel
    usage = summary.usage.model_dump(mode="json")
    assert usage == _usage_as_before(before.candidates, drafts, critiques, usage)

    # Every kind of row is in it, so the comparison covers them all.
    reasons = [row.reason for row in before.candidates]
    assert {row.status for row in before.candidates} == {"kept", "rejected", "failed", "undecided"}
    for kind in ("generation:not_asked", ":not_asked", "generation:api_error", "critique:", "duplicate_of:",
                 "answer_too_long", "<4"):  # fmt: skip
        assert any(kind in reason for reason in reasons), kind
    assert len(before.candidates) == SAMPLED and before.kept


def _usage_as_before(
    candidates: list[CandidateRow], drafts: dict[str, Draft], critiques: dict[str, Critique], usage: dict[str, Any]
) -> dict[str, Any]:
    """The usage summary as it was computed from whole records (costs as written: no price known)."""
    ids = {row.id for row in candidates}

    def paid(record: Draft | Critique) -> bool:
        return record.failure is None or not record.failure.is_call_failure

    stages = {
        "generation": [d for d in drafts.values() if d.id in ids and paid(d)],
        "critique": [c for c in critiques.values() if c.draft_id in ids and paid(c)],
    }
    return {
        stage: {
            "model": usage[stage]["model"],
            "calls": len(records),
            "input_tokens": sum(r.usage.input_tokens for r in records),
            "output_tokens": sum(r.usage.output_tokens for r in records),
            "cached_input_tokens": sum(r.usage.cached_input_tokens for r in records),
            "cost_usd": usage[stage]["cost_usd"],
        }
        for stage, records in stages.items()
    }


def _written(run: RunDir) -> dict[str, int]:
    files = [run.summary_file, *run.dataset_dir.iterdir(), *run.candidates_dir.iterdir()]
    return {str(path): path.stat().st_mtime_ns for path in files}


def test_nothing_changed_is_said_and_nothing_is_rewritten(
    built: tuple[Path, BuildConfig], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, config = built
    shutil.copytree(source, tmp_path / "run")
    run, tasks = RunDir(tmp_path / "run"), BuildTasks.for_config(config)
    first = finalize(config, run, tasks, load_sample(config, run))
    written = _written(run)
    capsys.readouterr()
    assert finalize(config, run, tasks, load_sample(config, run)) == first
    assert "nothing changed: dataset is up to date" in capsys.readouterr().err
    assert _written(run) == written


@pytest.mark.parametrize(
    "change",
    ["threshold", "new record", "dataset deleted", "summary edited", "stamp from elsewhere", "no stamp"],
)
def test_whatever_the_outputs_come_from_changing_rewrites_them(
    built: tuple[Path, BuildConfig], tmp_path: Path, capsys: pytest.CaptureFixture[str], change: str
) -> None:
    source, config = built
    shutil.copytree(source, tmp_path / "run")
    run, tasks = RunDir(tmp_path / "run"), BuildTasks.for_config(config)
    finalize(config, run, tasks, load_sample(config, run))
    written = _written(run)
    stamp = run.root / STAMP_FILE
    if change == "threshold":
        config = config.model_copy(update={"min_score": 5})
    elif change == "new record":
        last = run.critiques.path.read_text(encoding="utf-8").splitlines()[-1]
        with run.critiques.path.open("a", encoding="utf-8") as handle:
            handle.write(last + "\n")  # the same verdict again: the outputs must still be made anew
    elif change == "dataset deleted":
        shutil.rmtree(run.dataset_dir)
    elif change == "summary edited":
        run.summary_file.write_text(run.summary_file.read_text(encoding="utf-8") + " ", encoding="utf-8")
    elif change == "stamp from elsewhere":
        stamp.write_text(stamp.read_text(encoding="utf-8").replace('"inputs"', '"inputs_"'), encoding="utf-8")
    else:
        stamp.unlink()
    capsys.readouterr()
    summary = finalize(config, run, tasks, load_sample(config, run))
    assert "nothing changed" not in capsys.readouterr().err
    rewritten = _written(run)
    assert all(rewritten.get(path) != mtime for path, mtime in written.items() if "summary" not in path)
    assert json.loads(run.summary_file.read_text(encoding="utf-8")) == summary.model_dump(mode="json")
    assert summary.thresholds["groundedness"] == (5 if change == "threshold" else 4)
    # And now it stands.
    finalize(config, run, tasks, load_sample(config, run))
    assert "nothing changed: dataset is up to date" in capsys.readouterr().err


def _stage_must_not_run(*args: object, **kwargs: object) -> None:
    raise AssertionError("the LLM stage ran although it had nothing to do")


def test_a_build_with_nothing_to_do_skips_the_llm_stage_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from qagen.generation import pipeline

    corpus = write_corpus(tmp_path / "corpus", documents=6)
    with StandInLLM() as server:
        config = _config(corpus, server.base_url, 12, max_answer_chars=300)
        first = build(config, tmp_path / "run", progress=False)
        assert json.loads((tmp_path / "run" / STAMP_FILE).read_text())["settled"] is True
        calls = len(server.log)
        monkeypatch.setattr(pipeline, "run_llm_stages", _stage_must_not_run)
        capsys.readouterr()
        again = build(config, tmp_path / "run", progress=False)
        assert again.summary == first.summary and again.stopped_by_budget is None
        assert "nothing changed: dataset is up to date" in capsys.readouterr().err
        assert len(server.log) == calls


def test_a_call_left_to_redo_keeps_the_llm_stage_running(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from qagen.generation import pipeline

    corpus = write_corpus(tmp_path / "corpus", documents=6)
    with StandInLLM(fault_rate=0.2, fault_kinds=["500"], fault_attempts=1000) as server:
        config = _config(corpus, server.base_url, 12, max_answer_chars=300)
        build(config, tmp_path / "run", progress=False)
        assert json.loads((tmp_path / "run" / STAMP_FILE).read_text())["settled"] is False
        calls = len(server.log)
        build(config, tmp_path / "run", progress=False)
        assert len(server.log) > calls  # the failed calls were asked again
        # `qagen stage filter` cannot tell whether anything is left to do: the next build looks.
        run, tasks = RunDir(tmp_path / "run"), BuildTasks.for_config(config)
        server.configure(fault_rate=0.0)
        build(config, tmp_path / "run", progress=False)
        finalize(config.model_copy(update={"min_score": 3}), run, tasks, load_sample(config, run))
        finalize(config, run, tasks, load_sample(config, run))
        assert json.loads((run.root / STAMP_FILE).read_text())["settled"] is False
        calls = len(server.log)
        build(config, tmp_path / "run", progress=False)  # runs the stage: no call, and now it knows
        assert len(server.log) == calls
        assert json.loads((run.root / STAMP_FILE).read_text())["settled"] is True
        monkeypatch.setattr(pipeline, "run_llm_stages", _stage_must_not_run)
        build(config, tmp_path / "run", progress=False)
