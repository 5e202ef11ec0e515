"""--dry-run spends nothing; --max-tokens stops cleanly and a re-run with a higher cap continues."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from datasets import load_from_disk

from qagen.cli.app import main
from qagen.config import BuildConfig
from qagen.errors import ConfigError
from qagen.llm.cost import Budget, BudgetReachedError, Price, cost_of, price_for
from qagen.records import Usage


def _args(llm: Any, corpus: Path, out: Path, *extra: str) -> list[str]:
    return [
        "build", str(corpus), "--out", str(out), "--generator-model", "openai:stand-in", "--base-url", llm.base_url,
        "-n", "40", "--seed", "3", "--chunk-size", "400", "--chunk-overlap", "40", "-q", *extra,
    ]  # fmt: skip


def test_dry_run_makes_no_call_and_estimates(llm: Any, corpus: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(main, _args(llm, corpus, tmp_path / "run", "--dry-run"))
    assert result.exit_code == 0, result.output
    assert llm.log == []
    assert "drafts to make          40" in result.output
    assert "LLM calls (expected)" in result.output and "cost (approx.)" in result.output
    # With all critics asked, the expected critic calls are exactly one per critic and draft: the one check
    # the default vetting asks of factoids (supported), the cookbook's three critics.
    result = CliRunner().invoke(main, _args(llm, corpus, tmp_path / "run", "--dry-run", "--all-critics"))
    assert "critic calls (expected) 40" in result.output
    cookbook = _args(llm, corpus, tmp_path / "run", "--dry-run", "--all-critics", "--vetting", "cookbook")
    assert "critic calls (expected) 120" in CliRunner().invoke(main, cookbook).output
    # Off by default: no call opens with the passages, so none repeats another's opening.
    assert "again" not in CliRunner().invoke(main, _args(llm, corpus, tmp_path / "run", "--dry-run")).output
    # With the shared prefix, the check reads the draft's passage again, at the start of its message, where a
    # prefix cache has it; the cookbook's critic of the passage is asked after two of the question alone, of
    # 0.8 x 0.8 of the drafts.
    repeated = {}
    for vetting in ("checks", "cookbook"):
        shared = ("--dry-run", "--vetting", vetting, "--set", "build.shared_prefix=true")
        output = CliRunner().invoke(main, _args(llm, corpus, tmp_path / "run", *shared)).output
        found = re.search(r"input tokens \(approx\.\)  ([\d,]+) \(([\d,]+) of them each draft's passages again", output)
        assert found, output
        total, repeated[vetting] = (int(figure.replace(",", "")) for figure in found.groups())
        assert 0 < repeated[vetting] < total / 3
    assert repeated["cookbook"] == pytest.approx(0.64 * repeated["checks"], rel=0.01)
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
    budget = Budget(
        max_tokens=100, max_cost=None, prices={"m": None}, spent={"m": Usage(input_tokens=60, output_tokens=30)}
    )
    budget.check()
    budget.add("m", Usage(input_tokens=5, output_tokens=5, cached_input_tokens=5))  # cached input is input
    with pytest.raises(BudgetReachedError):
        budget.check()
    assert budget.reached and budget.tokens == 100
    assert Price(1.0, 2.0).cost(1_000_000, 500_000) == pytest.approx(2.0)
    assert price_for("openai:gpt-4o-mini") == Price(0.15, 0.60, 0.075)
    assert price_for("openai:unknown") is None
    with pytest.raises(ConfigError, match="give `price_input` and `price_output`"):
        Budget(max_tokens=None, max_cost=1.0, prices={"openai:unknown": None}, spent={})


def test_cached_input_is_priced_at_the_cached_price_and_without_one_at_the_input_price() -> None:
    # 1M input tokens of which 400k cached, 100k output.
    usage = Usage(input_tokens=1_000_000, output_tokens=100_000, cached_input_tokens=400_000)
    assert cost_of(usage, Price(2.0, 8.0, 0.5)) == pytest.approx(0.6 * 2.0 + 0.4 * 0.5 + 0.1 * 8.0)
    assert cost_of(usage, Price(2.0, 8.0)) == pytest.approx(1.0 * 2.0 + 0.1 * 8.0)
    assert cost_of(usage, Price(2.0, 8.0, 0.5).batch()) == pytest.approx((0.6 * 2.0 + 0.4 * 0.5 + 0.1 * 8.0) / 2)
    # A cap in dollars counts the cached tokens at their price.
    budget = Budget(max_tokens=None, max_cost=1.5, prices={"m": Price(2.0, 8.0, 0.5)}, spent={"m": usage})
    assert budget.cost == pytest.approx(2.2)
    with pytest.raises(BudgetReachedError):
        budget.check()


def test_a_cached_input_price_given_sets_it_on_the_known_price_or_on_the_price_given() -> None:
    assert price_for("openai:gpt-4.1", price_cached_input=0.5) == Price(2.0, 8.0, 0.5)
    # A price given replaces the known one whole: its cached part is the input price unless given too.
    assert price_for("openai:gpt-4o-mini", 1.0, 2.0) == Price(1.0, 2.0, None)
    assert price_for("openai:unknown", 1.0, 2.0, 0.1) == Price(1.0, 2.0, 0.1)
    with pytest.raises(ConfigError, match="needs the price of 'openai:unknown' too") as raised:
        price_for("openai:unknown", price_cached_input=0.1)
    assert raised.value.settings == ("price_input", "price_output", "price_cached_input")


def test_a_dry_run_writes_nothing_a_later_run_must_match(llm: Any, corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    planned = CliRunner().invoke(main, _args(llm, corpus, out, "--dry-run"), catch_exceptions=False)
    assert planned.exit_code == 0, planned.output
    assert "drafts to make          40 (already made: 0)" in planned.output
    assert not out.exists() and llm.log == []
    # The real build may then choose other settings: nothing was fixed.
    other = [*_args(llm, corpus, out), "--chunk-size", "600", "--seed", "4", "--generator-model", "openai:other"]
    built = CliRunner().invoke(main, other, catch_exceptions=False)
    assert built.exit_code == 0, built.output
    # On that run, a dry run reads and writes nothing of it, and refuses other settings as the build would.
    files = {path: path.read_bytes() for path in out.rglob("*") if path.is_file()}
    again = CliRunner().invoke(main, _args(llm, corpus, out, "--dry-run"), catch_exceptions=False)
    assert again.exit_code == 1 and "holds a run made with other settings" in again.output
    assert {path: path.read_bytes() for path in out.rglob("*") if path.is_file()} == files


def test_a_dry_run_of_a_finished_run_predicts_nothing_to_pay_and_shows_what_was_spent(
    llm: Any, corpus: Path, tmp_path: Path
) -> None:
    prices = ["--price-input", "1", "--price-output", "4"]
    out = tmp_path / "run"
    llm.configure(rule_break_rate=0.3)  # drafts that a free check rejects and critics that reject: no more calls
    built = CliRunner().invoke(main, [*_args(llm, corpus, out), *prices], catch_exceptions=False)
    assert built.exit_code == 0, built.output
    usage = json.loads((out / "summary.json").read_text())["usage"]
    spent = usage["generation"]["cost_usd"] + usage["critique"]["cost_usd"]
    calls = usage["generation"]["calls"] + usage["critique"]["calls"]
    assert 0 < spent < 1
    llm.reset()
    planned = CliRunner().invoke(main, [*_args(llm, corpus, out, "--dry-run"), *prices], catch_exceptions=False)
    assert planned.exit_code == 0, planned.output
    assert "drafts to make          0 (already made: 40)" in planned.output
    assert "critic calls (expected) 0\n" in planned.output and "LLM calls (expected)    0\n" in planned.output
    assert "cost (approx.)          $0.0000\n" in planned.output
    assert f"spent so far            ${spent:.4f} ({calls} calls)\n" in planned.output
    assert llm.log == []
    # A re-run indeed pays nothing.
    rerun = CliRunner().invoke(main, [*_args(llm, corpus, out), *prices], catch_exceptions=False)
    assert rerun.exit_code == 0 and llm.log == []


def test_a_local_server_named_as_an_openai_model_is_not_priced_or_credited_as_that_model(
    shared_llm: Any, corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from qagen.publish.card import CardContent, make_card
    from qagen.publish.local_run import load_run

    # The default model (openai:gpt-4o-mini) asked of a server of one's own, found through OPENAI_BASE_URL.
    env = {"OPENAI_BASE_URL": shared_llm.base_url, "OPENAI_API_KEY": "test-key"}
    args = ["build", str(corpus), "--out", str(tmp_path / "run"), "-n", "6", "--chunk-size", "400", "-q"]
    dry = CliRunner().invoke(main, [*args, "--dry-run"], env=env)
    assert dry.exit_code == 0, dry.output
    assert "cost (approx.)          unknown (give --price-input/--price-output)" in dry.output
    built = CliRunner().invoke(main, args, env=env)
    assert built.exit_code == 0, built.output
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["models"]["generator"] == "openai:gpt-4o-mini"
    assert summary["models"]["own_servers"] == ["generator", "critic"]
    assert summary["usage"]["generation"]["cost_usd"] is None and summary["usage"]["critique"]["cost_usd"] is None
    local = load_run(tmp_path / "run")
    content = CardContent(
        repo_id="me/set", summary=local.summary, kept_rows=local.kept.num_rows,
        candidate_rows=local.candidates.num_rows, languages=[], license="unknown", prompts=[],
    )  # fmt: skip
    card = str(make_card(content))
    assert (
        "- Generator (drafts): `openai:gpt-4o-mini` (the name asked of a server of the builder's own, which answers "
        "with its own model" in card
    )
    # Prices given are the prices.
    priced = CliRunner().invoke(main, [*args, "--dry-run", "--price-input", "1", "--price-output", "2"], env=env)
    assert re.search(r"cost \(approx\.\)\s+\$\d", priced.output), priced.output
    # OpenAI's own server keeps the known price, named or not.
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    for server in (None, "https://api.openai.com/v1"):
        generator = {"spec": "openai:gpt-4o-mini", "base_url": server}
        config = BuildConfig.model_validate({"corpus": {"path": "docs"}, "generator": generator})
        assert config.price(config.generator.spec) == Price(0.15, 0.60, 0.075)
