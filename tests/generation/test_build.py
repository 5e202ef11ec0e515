"""End to end: `qagen build` over HTTP against the stand-in server, through the real OpenAI client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner
from datasets import load_from_disk

from qagen.cli.app import main
from qagen.records import BuildSummary

KEY = "sk-test-PLANTED-7f3a9c2e41d8b6"


def _build(llm: Any, corpus: Path, out: Path, *extra: str, n: int = 60) -> Any:
    args = ["build", str(corpus), "--out", str(out), "--generator-model", "openai:stand-in", "--base-url", llm.base_url]
    args += ["--n-generations", str(n), "--seed", "7", "--chunk-size", "400", "--chunk-overlap", "40", "-q", *extra]
    return CliRunner().invoke(main, args, catch_exceptions=False)


def _rows(path: Path) -> list[dict[str, Any]]:
    return list(load_from_disk(str(path)))


def test_build_writes_dataset_candidates_and_summary(
    llm: Any, corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    llm.configure(api_key=KEY, format_variety=0.3)
    # The cookbook's 1-5 critics, whose every reply format the stand-in varies (the checks' own build
    # tests are in test_reader_checks.py).
    result = _build(llm, corpus, tmp_path / "run", "--vetting", "cookbook")
    assert result.exit_code == 0, result.output

    candidates = _rows(tmp_path / "run" / "candidates")
    kept = _rows(tmp_path / "run" / "dataset")
    assert len(candidates) == 60
    assert {row["status"] for row in candidates} <= {"kept", "rejected", "failed"}
    assert 0 < len(kept) < 60
    assert kept == [{k: v for k, v in row.items() if k in kept[0]} for row in candidates if row["status"] == "kept"]
    for row in kept:
        assert min(row["groundedness_score"], row["relevance_score"], row["standalone_score"]) >= 4
        assert row["groundedness_eval"] and row["question"] and row["answer"]
    for row in candidates:  # offsets point at the context in its source document
        text = (corpus / row["source_doc"]).read_text(encoding="utf-8")
        assert text[row["start_index"] : row["end_index"]] == row["context"]

    # Every recorded score is the one the server sent, whatever format it used.
    sent = {entry["reply"]: entry for entry in llm.log if entry["kind"] == "critique"}
    formats = set()
    checked = 0
    for row in candidates:
        for criterion in ("groundedness", "relevance", "standalone"):
            raw = row[f"{criterion}_raw"]
            if raw is None:
                continue
            assert row[f"{criterion}_score"] == sent[raw]["score"]
            formats.add(sent[raw]["format"])
            checked += 1
    assert checked > 100 and len(formats) >= 3  # the 30% of other formats were really exercised

    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    # The file is the record, key for key and in order: nothing is written that the model does not declare.
    assert json.dumps(BuildSummary.model_validate(summary).model_dump(mode="json")) == json.dumps(summary)
    funnel = summary["funnel"]
    assert funnel["sampled"] == 60 and funnel["kept"] == len(kept)
    statuses = [row["status"] for row in candidates]
    assert funnel["rejected"] + funnel["duplicates"] == statuses.count("rejected")
    assert summary["usage"]["critique"]["calls"] == checked
    assert "kept" in result.output and "rejected by critics" in result.output

    # The key is nowhere in the run directory.
    for path in (tmp_path / "run").rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


def test_rerun_pays_no_call_twice_and_gives_the_same_dataset(llm: Any, corpus: Path, tmp_path: Path) -> None:
    assert _build(llm, corpus, tmp_path / "run", n=30).exit_code == 0
    first = _rows(tmp_path / "run" / "candidates")
    calls = len(llm.log)
    written = (tmp_path / "run" / "candidates" / "data-00000-of-00001.arrow").stat().st_mtime_ns
    again = _build(llm, corpus, tmp_path / "run", n=30)
    assert again.exit_code == 0 and "nothing changed: dataset is up to date" in again.output
    assert len(llm.log) == calls
    assert (tmp_path / "run" / "candidates" / "data-00000-of-00001.arrow").stat().st_mtime_ns == written
    assert _rows(tmp_path / "run" / "candidates") == first
    # Asking for more extends the same sample: only the new chunks cost calls.
    assert _build(llm, corpus, tmp_path / "run", n=40).exit_code == 0
    assert _rows(tmp_path / "run" / "candidates")[:30] == first
    assert max(llm.requests_by_body().values()) == 1


def test_completion_order_does_not_change_the_result(llm: Any, corpus: Path, tmp_path: Path) -> None:
    llm.configure(duplicate_rate=0.2)
    assert _build(llm, corpus, tmp_path / "a", "--concurrency", "1").exit_code == 0
    llm.reset()
    llm.configure(latency=0.01)
    assert _build(llm, corpus, tmp_path / "b", "--concurrency", "32").exit_code == 0
    a, b = _rows(tmp_path / "a" / "candidates"), _rows(tmp_path / "b" / "candidates")
    assert a == b
    assert any(row["reason"].startswith("duplicate_of:") for row in a)


def test_changed_settings_are_explained(llm: Any, corpus: Path, tmp_path: Path) -> None:
    assert _build(llm, corpus, tmp_path / "run", n=5).exit_code == 0
    result = _build(llm, corpus, tmp_path / "run", "--critic-model", "openai:other", n=5)
    assert result.exit_code == 1
    assert "critic_model" in result.output and "openai:other" in result.output
    assert "Traceback" not in result.output


def test_stages_one_by_one_equal_build(llm: Any, corpus: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    common = ["--chunk-size", "400", "--chunk-overlap", "40", "--seed", "7"]
    model = ["--generator-model", "openai:stand-in", "--base-url", llm.base_url, "-n", "20", "-q"]
    run = str(tmp_path / "staged")
    assert runner.invoke(main, ["stage", "chunk", str(corpus), "--out", run, *common, "-q"]).exit_code == 0
    assert runner.invoke(main, ["stage", "generate", run, *model]).exit_code == 0
    # The critics' model and server are the generator's, taken from the run; the sample size too.
    assert runner.invoke(main, ["stage", "critique", run, "-q"]).exit_code == 0
    filtered = runner.invoke(main, ["stage", "filter", run])
    assert filtered.exit_code == 0, filtered.output
    assert _build(llm, corpus, tmp_path / "built", n=20).exit_code == 0
    assert _rows(tmp_path / "staged" / "candidates") == _rows(tmp_path / "built" / "candidates")
    # Re-filtering with other thresholds costs no call.
    calls = len(llm.log)
    assert runner.invoke(main, ["stage", "filter", run, "--min-score", "1"]).exit_code == 0
    assert len(llm.log) == calls


def test_malformed_replies_become_failed_rows_with_reasons(llm: Any, corpus: Path, tmp_path: Path) -> None:
    llm.configure(malformed_rate=0.3)
    assert _build(llm, corpus, tmp_path / "run", "--all-critics").exit_code == 0
    candidates = _rows(tmp_path / "run" / "candidates")
    failed = [row for row in candidates if row["status"] == "failed"]
    assert failed
    for row in failed:
        stage, _, reason = row["reason"].partition(":")
        assert stage in {"generation", "critique"} and reason
    for row in candidates:
        for criterion in ("groundedness", "relevance", "standalone"):
            score = row[f"{criterion}_score"]
            assert score is None or 1 <= score <= 5


def test_missing_key_and_dead_server_stop_with_one_sentence(corpus: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(main, ["build", str(corpus), "--out", str(tmp_path / "a"), "-n", "3", "-q"])
    assert result.exit_code == 1 and "OPENAI_API_KEY" in result.output and "Traceback" not in result.output
    dead = ["--base-url", "http://127.0.0.1:9/v1", "--max-retries", "0", "-n", "3", "-q"]
    result = runner.invoke(main, ["build", str(corpus), "--out", str(tmp_path / "b"), *dead])
    assert result.exit_code == 1 and "Cannot reach" in result.output


def test_wrong_key_and_unknown_model_stop_early(
    llm: Any, corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    llm.configure(api_key="right-key", models=["stand-in"])
    monkeypatch.setenv("OPENAI_API_KEY", "wrong-key")
    result = _build(llm, corpus, tmp_path / "a")
    assert result.exit_code == 1 and "401" in result.output
    assert len(llm.log) <= 16  # at most one wave of calls, not one failure per chunk
    monkeypatch.setenv("OPENAI_API_KEY", "right-key")
    args = [
        "build",
        str(corpus),
        "--out",
        str(tmp_path / "b"),
        "--generator-model",
        "openai:nope",
        "--base-url",
        llm.base_url,
        "-q",
    ]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1 and "nope" in result.output and "404" in result.output


def test_help_explains_every_option() -> None:
    result = CliRunner().invoke(main, ["build", "--help"])
    assert result.exit_code == 0
    for option in ["--n-generations", "--generator-model", "--critic-model", "--base-url", "--concurrency", "--config",
                   "--audience", "--cut", "--chunk-size", "--hf-dataset", "--vetting"]:  # fmt: skip
        assert option in result.output
    # The options --help leaves out (config keys, in docs/configuration.md) are explained all the same.
    for param in main.commands["build"].params:
        assert not isinstance(param, click.Option) or param.help, param.name


def test_a_run_that_keeps_nothing_still_writes_loadable_datasets(llm: Any, corpus: Path, tmp_path: Path) -> None:
    llm.configure(pass_rate=0.0)
    result = _build(llm, corpus, tmp_path / "run", n=5)
    assert result.exit_code == 0, result.output
    assert len(_rows(tmp_path / "run" / "dataset")) == 0
    assert len(_rows(tmp_path / "run" / "candidates")) == 5


def test_rpm_bounds_generator_and_critic_calls_together(llm: Any, corpus: Path, tmp_path: Path) -> None:
    import time

    started = time.monotonic()
    result = _build(llm, corpus, tmp_path / "run", "--rpm", "600", "--critic-model", "openai:stand-in-critic", n=6)
    elapsed = time.monotonic() - started
    assert result.exit_code == 0, result.output
    models = {entry["model"] for entry in llm.log}
    assert models == {"stand-in", "stand-in-critic"}
    # 600 per minute is one every 0.1 s for both models together (a limit per model would halve it).
    assert elapsed >= 0.1 * (len(llm.log) - 1) * 0.9


def test_a_build_that_kept_questions_says_what_to_do_next(llm: Any, corpus: Path, tmp_path: Path) -> None:
    result = _build(llm, corpus, tmp_path / "run", n=4)
    assert result.exit_code == 0, result.output
    next_steps = result.output.split("\nnext:\n", 1)[1]
    run = tmp_path / "run"
    for command in (f"qagen profile {run}", f"qagen evaluate {run} --baseline bm25", f"qagen push {run} ORG/NAME"):
        assert command in next_steps, next_steps
    llm.configure(pass_rate=0.0)
    nothing = _build(llm, corpus, tmp_path / "empty", n=3)
    assert nothing.exit_code == 0 and "next:" not in nothing.output
