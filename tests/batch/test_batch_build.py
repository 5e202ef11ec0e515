"""`qagen build --batch` against the stand-in's Batch API: the same dataset as online, in at most
four rounds, and half the price in the dry run."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from datasets import load_from_disk

from qagen.cli.app import main
from standins.llm.outcomes import MULTI_HOP_MARK
from standins.llm.server import StandInLLM


def build_args(llm: StandInLLM, corpus: Path, out: Path, *extra: str, n: int = 40) -> list[str]:
    return [
        "build", str(corpus), "--out", str(out), "--generator-model", "openai:stand-in", "--base-url", llm.base_url,
        "--n-generations", str(n), "--seed", "7", "--chunk-size", "400", "--chunk-overlap", "40", "-q", *extra,
    ]  # fmt: skip


def rows(run: Path, name: str) -> list[dict[str, Any]]:
    return list(load_from_disk(str(run / name)))


def journal(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "batches.jsonl").read_text().splitlines()]


PRICES = ("--price-input", "100", "--price-output", "400")


def test_batch_and_online_give_the_same_dataset_in_at_most_four_rounds(corpus: Path, tmp_path: Path) -> None:
    knobs = {"format_variety": 0.3, "malformed_rate": 0.05}
    with StandInLLM(**knobs) as online:
        args = build_args(online, corpus, tmp_path / "online", *PRICES)
        result = CliRunner().invoke(main, args, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        online_bodies = online.requests_by_body()
    with StandInLLM(batch_polls=2, **knobs) as batch:
        args = build_args(batch, corpus, tmp_path / "batch", *PRICES, "--batch", "--batch-poll", "0.01")
        result = CliRunner().invoke(main, args, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        log = batch.log
        table = result.output
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
    assert_batch_prices(tmp_path / "online", tmp_path / "batch", table)


def test_multi_hop_drafts_composed_in_batches_are_the_online_ones(corpus: Path, tmp_path: Path) -> None:
    # A round of parts (a factoid of each passage), a round of their verdicts (supported), a round of composing
    # calls, then the critics' rounds.
    mix = ("--question-types", "factoid=50,multi_hop=50")
    with StandInLLM() as online:
        result = CliRunner().invoke(main, build_args(online, corpus, tmp_path / "online", *mix, n=12))
        assert result.exit_code == 0, result.output
        online_bodies = online.requests_by_body()
    with StandInLLM(batch_polls=1) as batch:
        args = build_args(batch, corpus, tmp_path / "batch", *mix, "--batch", "--batch-poll", "0.01", n=12)
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.output
        log = batch.log
    for name in ("dataset", "candidates"):
        assert rows(tmp_path / "batch", name) == rows(tmp_path / "online", name)
    assert any(row["question_type"] == "multi_hop" for row in rows(tmp_path / "batch", "dataset"))
    batch_bodies = [entry["body_sha256"] for entry in log if entry["method"] == "BATCH"]
    assert sorted(batch_bodies) == sorted(online_bodies) and len(set(batch_bodies)) == len(batch_bodies)
    composing = [entry for entry in log if entry["method"] == "BATCH" and entry["reply"].startswith("Multi-hop")]
    assert composing and summary(tmp_path / "batch")["usage"] == summary(tmp_path / "online")["usage"]


def test_a_multi_hop_builds_parts_are_asked_supported_in_a_round_before_the_composing_calls(
    corpus: Path, tmp_path: Path
) -> None:
    with StandInLLM(batch_polls=1) as batch:
        args = build_args(
            batch, corpus, tmp_path / "batch", "--question-types", "multi_hop", "--batch", "--batch-poll", "0.01", n=8
        )
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.output
        log = [entry for entry in batch.log if entry["method"] == "BATCH"]
    uploaded = [event for event in journal(tmp_path / "batch") if event["event"] == "uploaded"]
    round_of = {custom_id: event["round"] for event in uploaded for custom_id in event["custom_ids"]}
    rounds: dict[str, set[int]] = {}
    for entry in log:
        if entry["reply"].startswith("Factoid question:"):
            kind = "part"
        elif entry["reply"].startswith("Multi-hop question:"):
            kind = "compose"
        elif entry["criterion"] == "supported" and MULTI_HOP_MARK not in entry["question"]:
            kind = "part supported"
        else:
            kind = "critic"
        rounds.setdefault(kind, set()).add(round_of[entry["body_sha256"]])
    # The parts, then their verdicts, then the composing calls, then the composed drafts' critics.
    assert rounds["part"] == {1} and rounds["part supported"] == {2} and rounds["compose"] == {3}
    assert min(rounds["critic"]) == 4

    with StandInLLM() as online:
        result = CliRunner().invoke(
            main, build_args(online, corpus, tmp_path / "online", "--question-types", "multi_hop", n=8)
        )
        assert result.exit_code == 0, result.output
    for name in ("dataset", "candidates"):
        assert rows(tmp_path / "batch", name) == rows(tmp_path / "online", name)


def summary(run: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run / "summary.json").read_text())
    return data


def assert_batch_prices(online: Path, batched: Path, table: str) -> None:
    """Every paid call of the batch run was answered in a batch: summary.json and the funnel table
    show it at half the price, next to the online price of the same tokens (the online run's cost)."""
    assert summary(online)["batch"] == {}
    spent = summary(batched)["batch"]
    assert set(spent) == {"generation", "critique"}
    for stage, spend in spent.items():
        usage, online_usage = summary(batched)["usage"][stage], summary(online)["usage"][stage]
        assert {key: spend[key] for key in ("calls", "input_tokens", "output_tokens")} == {
            key: usage[key] for key in ("calls", "input_tokens", "output_tokens")
        }
        assert spend["online_cost_usd"] == online_usage["cost_usd"] > 0
        assert spend["cost_usd"] == usage["cost_usd"] == pytest.approx(online_usage["cost_usd"] / 2, abs=1e-6)
        saved = spend["online_cost_usd"] - spend["cost_usd"]
        words = (
            f"{spend['calls']} calls, ${spend['cost_usd']:.4f} at batch prices instead of "
            f"${spend['online_cost_usd']:.4f} online (saved ${saved:.4f})"
        )
        assert re.search(rf"{stage} in batches +{re.escape(words)}\n", table), table


def test_dry_run_with_batch_shows_half_the_online_price(corpus: Path, tmp_path: Path) -> None:
    def cost(*extra: str) -> float:
        args = ["build", str(corpus), "--out", str(tmp_path / "plan"), "--generator-model", "openai:gpt-4o-mini"]
        prices = ["--price-input", "100", "--price-output", "400"]
        result = CliRunner().invoke(main, [*args, *prices, "--n-generations", "30", "--dry-run", "-q", *extra])
        assert result.exit_code == 0, result.output
        match = re.search(r"cost \(approx\.\)\s+\$([0-9.,]+)", result.output)
        assert match, result.output
        return float(match.group(1).replace(",", ""))

    online, batch = cost(), cost("--batch")
    assert online > 0 and abs(batch - online / 2) <= 0.01
