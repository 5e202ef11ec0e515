"""Judges and the baseline's reader on a reasoning model: values come from the final answer, never
from the decoy verdicts written while thinking; a judge reply cut off at the cap is `truncated`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from qagen.cli.app import main
from standins.llm.server import StandInLLM


def _run(llm: StandInLLM, corpus: Path, tmp_path: Path) -> list[dict[str, Any]]:
    model = ["--generator-model", "openai:stand-in", "--base-url", llm.base_url]
    build = ["build", str(corpus), "--out", str(tmp_path / "run"), *model, "-n", "20", "--chunk-size", "400"]
    build += ["--chunk-overlap", "40", "-q"]
    assert CliRunner().invoke(main, build, catch_exceptions=False).exit_code == 0
    llm.configure(think_rate=0.4, reasoning_content_rate=0.2, truncate_rate=0.1)
    evaluate = ["evaluate", str(tmp_path / "run"), "--baseline", "bm25", "--corpus", str(corpus)]
    evaluate += ["--reader-model", "openai:stand-in", "--base-url", llm.base_url]
    evaluate += ["--chunk-size", "400", "--out", str(tmp_path / "eval"), "--metrics", "correctness,graders", "-q"]
    result = CliRunner().invoke(main, evaluate, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in (tmp_path / "eval" / "results.jsonl").read_text().splitlines()]


def test_judges_read_the_final_verdict_not_the_thinking(llm: StandInLLM, corpus: Path, tmp_path: Path) -> None:
    rows = _run(llm, corpus, tmp_path)
    sent = {entry["reply"]: entry for entry in llm.log if entry["reply"] is not None}
    thought = truncated = 0
    for row in rows:
        for metric in ("correctness", "correct", "relevant", "grounded", "retrieval_relevant"):
            raw = row[f"{metric}_raw"]
            if raw is None:
                continue
            entry = sent[raw]
            if entry["finish_reason"] == "length":
                truncated += 1
                assert (row[metric], row[f"{metric}_reason"]) == (None, "truncated")
                continue
            assert row[metric] == entry["score"], (metric, raw, entry)
            thought += entry["thinking"] is not None
            if entry["decoy_score"] is not None:
                assert row[metric] != entry["decoy_score"]
    assert thought >= 5 and truncated >= 1
