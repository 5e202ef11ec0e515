"""--dry-run spends nothing; --max-tokens stops cleanly and a re-run with a higher cap continues."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from datasets import load_from_disk

from qagen.cli.app import main
from qagen.errors import ConfigError
from qagen.llm.cost import Budget, BudgetReachedError, Price, price_for


def _args(llm: Any, corpus: Path, out: Path, *extra: str) -> list[str]:
    return [
        "build", str(corpus), "--out", str(out), "--model", "openai:stand-in", "--base-url", llm.base_url,
        "-n", "40", "--seed", "3", "--chunk-size", "400", "--chunk-overlap", "40", "-q", *extra,
    ]  # fmt: skip


def test_dry_run_makes_no_call_and_estimates(llm: Any, corpus: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(main, _args(llm, corpus, tmp_path / "run", "--dry-run"))
    assert result.exit_code == 0, result.output
    assert llm.log == []
    assert "drafts to make          40" in result.output
    assert "LLM calls (expected)" in result.output and "cost (approx.)" in result.output
    # With all critics asked, the expected critic calls are exactly three per draft.
    result = CliRunner().invoke(main, _args(llm, corpus, tmp_path / "run", "--dry-run", "--all-critics"))
    assert "critic calls (expected) 120" in result.output
    assert llm.log == []


def test_token_cap_stops_cleanly_and_a_rerun_continues(llm: Any, corpus: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    capped = runner.invoke(main, _args(llm, corpus, tmp_path / "run", "--max-tokens", "8000", "--concurrency", "4"))
    assert capped.exit_code == 3
    assert "--max-tokens 8,000" in capped.output and "Traceback" not in capped.output
    partial = list(load_from_disk(str(tmp_path / "run" / "candidates")))
    # Chunks the cap left without a draft are undecided (never asked), not failed.
    assert any(row["status"] == "undecided" and row["reason"] == "generation:not_asked" for row in partial)
    assert not any(row["status"] == "failed" for row in partial)
    assert 0 < len(llm.log) < 40  # stopped long before the 40 drafts and their critiques

    finished = runner.invoke(main, _args(llm, corpus, tmp_path / "run", "--max-tokens", "10000000"))
    assert finished.exit_code == 0, finished.output
    assert max(llm.requests_by_body().values()) == 1  # nothing paid twice across the two sessions
    llm.reset()
    clean = runner.invoke(main, _args(llm, corpus, tmp_path / "clean"))
    assert clean.exit_code == 0
    assert list(load_from_disk(str(tmp_path / "run" / "candidates"))) == list(
        load_from_disk(str(tmp_path / "clean" / "candidates"))
    )


def test_budget_counts_earlier_spending_and_prices() -> None:
    budget = Budget(max_tokens=100, max_cost=None, prices={"m": None}, spent={"m": (60, 30)})
    budget.check()
    budget.add("m", 5, 5)
    with pytest.raises(BudgetReachedError):
        budget.check()
    assert budget.reached
    assert Price(1.0, 2.0).cost(1_000_000, 500_000) == pytest.approx(2.0)
    assert price_for("openai:gpt-4o-mini") == Price(0.15, 0.60)
    assert price_for("openai:unknown") is None
    with pytest.raises(ConfigError, match="give `price_input` and `price_output`"):
        Budget(max_tokens=None, max_cost=1.0, prices={"openai:unknown": None}, spent={})
