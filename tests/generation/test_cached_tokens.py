"""A build against a server whose prefix cache serves part of each prompt: summary.json, the funnel
table, `qagen status` and the card show the cached input tokens, and the cost prices them at the
cached-input price (online, and at batch prices in batch mode)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from qagen.cli.app import main
from qagen.publish.card import CardContent, make_card, public_summary
from standins.llm.server import StandInLLM

# Dollars per million input, output and cached input tokens.
INPUT, OUTPUT, CACHED = 2.0, 8.0, 0.5
PRICES = ("--price-input", str(INPUT), "--price-output", str(OUTPUT), "--price-cached-input", str(CACHED))


def _build(llm: StandInLLM, corpus: Path, out: Path, *extra: str) -> str:
    args = ["build", str(corpus), "--out", str(out), "--generator-model", "openai:stand-in", "--base-url", llm.base_url]
    args += ["-n", "16", "--seed", "5", "--chunk-size", "400", "--chunk-overlap", "40", "-q", *PRICES, *extra]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def _usages(path: Path) -> list[dict[str, int]]:
    """The usage of every stored record (no call failed here: each one was paid for)."""
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert all(record["failure"] is None or record["raw"] is not None for record in records)
    return [record["usage"] for record in records]


def _expected(usages: list[dict[str, int]], factor: float) -> tuple[int, int, int, float]:
    """Input, output and cached tokens of the records and their cost, computed from them alone."""
    input_tokens = sum(usage["input_tokens"] for usage in usages)
    output_tokens = sum(usage["output_tokens"] for usage in usages)
    cached = sum(usage["cached_input_tokens"] for usage in usages)
    cost = ((input_tokens - cached) * INPUT + cached * CACHED + output_tokens * OUTPUT) / 1e6 * factor
    return input_tokens, output_tokens, cached, cost


def _check(run: Path, table: str, factor: float) -> dict[str, Any]:
    summary: dict[str, Any] = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    for stage, records in (("generation", "drafts.jsonl"), ("critique", "critiques.jsonl")):
        input_tokens, output_tokens, cached, cost = _expected(_usages(run / records), factor)
        usage = summary["usage"][stage]
        assert 0 < cached < input_tokens, stage  # prompts share their instructions, not all of their text
        assert (usage["input_tokens"], usage["output_tokens"], usage["cached_input_tokens"]) == (
            input_tokens,
            output_tokens,
            cached,
        )
        assert usage["cost_usd"] == pytest.approx(cost, abs=1e-6)
        # Cheaper than the same tokens at the input price.
        assert usage["cost_usd"] < (input_tokens * INPUT + output_tokens * OUTPUT) / 1e6 * factor
        words = f"{input_tokens:,} in ({cached:,} of them cached) / {output_tokens:,} out tokens, ${cost:.4f}"
        assert re.search(rf"{stage} calls +{usage['calls']} \({re.escape(words)}\)", table), table
    return summary


def test_cached_input_is_shown_and_priced_at_the_cached_price(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    with StandInLLM(prefix_cache=True) as llm:
        table = _build(llm, corpus, out)
    summary = _check(out, table, factor=1.0)

    status = CliRunner().invoke(main, ["status", str(out)], catch_exceptions=False)
    records = _usages(out / "drafts.jsonl") + _usages(out / "critiques.jsonl")
    cached = sum(usage["cached_input_tokens"] for usage in records)
    assert f"{sum(usage['input_tokens'] for usage in records):,} input ({cached:,} of them cached) + " in status.output

    card = str(
        make_card(
            CardContent(
                repo_id="alice/qa",
                summary=public_summary(summary),
                kept_rows=summary["funnel"]["kept"],
                candidate_rows=16,
                languages=["en"],
                license="unknown",
                prompts=[],
            )
        )
    )
    generation = summary["usage"]["generation"]
    assert (
        f"- generation: {generation['calls']} calls, {generation['input_tokens']} input "
        f"({generation['cached_input_tokens']:,} of them cached) and {generation['output_tokens']} output tokens"
    ) in card


def test_in_batch_mode_cached_input_is_priced_at_half_the_cached_price(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    with StandInLLM(prefix_cache=True, batch_polls=1) as llm:
        table = _build(llm, corpus, out, "--batch", "--batch-poll", "0.01")
    summary = _check(out, table, factor=0.5)
    for stage, spend in summary["batch"].items():
        usage = summary["usage"][stage]
        assert spend["cached_input_tokens"] == usage["cached_input_tokens"] > 0
        # Both figures are rounded to a millionth of a dollar: doubling one doubles its rounding too.
        assert spend["online_cost_usd"] == pytest.approx(usage["cost_usd"] * 2, abs=2e-6)


def test_a_server_that_reports_no_cache_gives_no_cached_tokens(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    with StandInLLM() as llm:
        table = _build(llm, corpus, out)
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert [summary["usage"][stage]["cached_input_tokens"] for stage in ("generation", "critique")] == [0, 0]
    assert "cached" not in table
