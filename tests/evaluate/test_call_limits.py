"""`qagen evaluate` runs its reader and judges through the one client factory: one bound on calls in
flight across both, and the same --timeout, --max-retries and --rpm settings as `qagen build`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest
from click.testing import CliRunner

from qagen.cli.app import main
from standins.corpus import write_corpus
from standins.llm.server import StandInLLM


class Built(NamedTuple):
    server: StandInLLM
    corpus: Path
    run: Path


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    root = tmp_path_factory.mktemp("limits")
    corpus = write_corpus(root / "corpus", documents=8)
    with StandInLLM() as server:
        args = ["build", str(corpus), "--out", str(root / "run"), "--generator-model", "openai:stand-in"]
        args += ["--base-url", server.base_url, "-n", "12", "--chunk-size", "400", "--chunk-overlap", "40", "-q"]
        result = CliRunner().invoke(main, args, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        yield Built(server, corpus, root / "run")


def _evaluate(built: Built, out: Path, *extra: str, exit_code: int = 0) -> str:
    args = ["evaluate", str(built.run), "--baseline", "bm25", "--corpus", str(built.corpus), "--chunk-size", "400"]
    args += ["--reader-model", "openai:stand-in", "--base-url", built.server.base_url, "--out", str(out), "-q", *extra]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == exit_code, result.output
    return result.output


@pytest.mark.parametrize("concurrency", [pytest.param(1, marks=pytest.mark.slow), 3])
def test_concurrency_bounds_reader_and_judge_calls_together(built: Built, tmp_path: Path, concurrency: int) -> None:
    # Slow replies, and many judge calls per question (context precision asks once per context),
    # so that without one shared bound the reader and the judges would overlap past it.
    built.server.configure(latency=0.05)
    built.server.reset_max_in_flight()
    before = len(built.server.log)
    # A judge model other than the reader's: two clients, which must still share one bound.
    judge = ["--judge-model", "openai:stand-in-judge"]
    _evaluate(
        built, tmp_path / "eval", "--metrics", "correctness,ragas,graders", "--concurrency", str(concurrency), *judge
    )
    built.server.configure(latency=0.0)
    kinds = {entry["kind"] for entry in built.server.log[before:]}
    models = {entry["model"] for entry in built.server.log[before:]}
    assert {"answer", "judge"} <= kinds and models == {"stand-in", "stand-in-judge"}  # both roles called
    assert built.server.max_in_flight == concurrency


def test_max_retries_and_timeout_reach_the_reader_and_the_judge(built: Built, tmp_path: Path) -> None:
    built.server.configure(fault_rate=1.0, fault_kinds=["500"], fault_attempts=100)
    before = len(built.server.log)
    limits = ["--max-retries", "1", "--timeout", "5", "--max-failure-rate", "1"]
    output = _evaluate(built, tmp_path / "eval", *limits, exit_code=1)
    assert "questions was answered (mostly reader_failed: server_error)" in output  # nothing succeeded
    built.server.configure(fault_rate=0.0)
    attempts: dict[str, int] = {}
    for entry in built.server.log[before:]:
        if entry["body_sha256"] is not None:
            attempts[entry["body_sha256"]] = attempts.get(entry["body_sha256"], 0) + 1
    assert attempts and set(attempts.values()) == {2}  # the first try and one retry, for every request
    rows = [json.loads(line) for line in (tmp_path / "eval" / "results.jsonl").read_text().splitlines()]
    assert {row["answer_error"] for row in rows} == {"reader_failed: server_error"}
