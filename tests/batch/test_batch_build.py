"""`qagen build --batch` against the stand-in's Batch API: the same dataset as online, in at most
four rounds, and half the price in the dry run."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from datasets import load_from_disk

from qagen.cli.app import main
from qagen.testing.llm.server import StandInLLM


def build_args(llm: StandInLLM, corpus: Path, out: Path, *extra: str, n: int = 40) -> list[str]:
    return [
        "build", str(corpus), "--out", str(out), "--model", "openai:stand-in", "--base-url", llm.base_url,
        "--n-generations", str(n), "--seed", "7", "--chunk-size", "400", "--chunk-overlap", "40", "-q", *extra,
    ]  # fmt: skip


def rows(run: Path, name: str) -> list[dict[str, Any]]:
    return list(load_from_disk(str(run / name)))


def journal(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "batches.jsonl").read_text().splitlines()]


def test_batch_and_online_give_the_same_dataset_in_at_most_four_rounds(corpus: Path, tmp_path: Path) -> None:
    knobs = {"format_variety": 0.3, "malformed_rate": 0.05}
    with StandInLLM(**knobs) as online:
        result = CliRunner().invoke(main, build_args(online, corpus, tmp_path / "online"), catch_exceptions=False)
        assert result.exit_code == 0, result.output
        online_bodies = online.requests_by_body()
    with StandInLLM(batch_polls=2, **knobs) as batch:
        args = build_args(batch, corpus, tmp_path / "batch", "--batch", "--batch-poll", "0.01")
        result = CliRunner().invoke(main, args, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        log = batch.log
    for name in ("dataset", "candidates"):
        assert rows(tmp_path / "batch", name) == rows(tmp_path / "online", name)
    assert len(rows(tmp_path / "batch", "dataset")) > 0
    # Every request went in a batch line, none online; the same bodies as online, each once.
    assert not [entry for entry in log if entry["path"].endswith("/chat/completions") and entry["method"] == "POST"]
    batch_bodies = [entry["body_sha256"] for entry in log if entry["method"] == "BATCH"]
    assert sorted(batch_bodies) == sorted(online_bodies) and len(set(batch_bodies)) == len(batch_bodies)
    created = [entry for entry in log if entry["kind"] == "batch_create"]
    assert 2 <= len(created) <= 4  # drafts, then each critic
    rounds = {event["round"] for event in journal(tmp_path / "batch") if event["event"] == "uploaded"}
    assert len(rounds) == len(created)


def test_dry_run_with_batch_shows_half_the_online_price(corpus: Path, tmp_path: Path) -> None:
    def cost(*extra: str) -> float:
        args = ["build", str(corpus), "--out", str(tmp_path / "plan"), "--model", "openai:gpt-4o-mini"]
        prices = ["--price-input", "100", "--price-output", "400"]
        result = CliRunner().invoke(main, [*args, *prices, "--n-generations", "30", "--dry-run", "-q", *extra])
        assert result.exit_code == 0, result.output
        match = re.search(r"cost \(approx\.\)\s+\$([0-9.,]+)", result.output)
        assert match, result.output
        return float(match.group(1).replace(",", ""))

    online, batch = cost(), cost("--batch")
    assert online > 0 and abs(batch - online / 2) <= 0.01
