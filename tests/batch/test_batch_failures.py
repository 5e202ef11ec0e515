"""Batch mode draws the line between a failed call and a failed run where online mode does: a model
whose every batch line is a 401, 403 or 404 (or whose upload is refused with a 401) stops the run
with the online sentence; past the error budget the run stops after storing the round; and the
end-of-run failure-rate check holds as online."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from qagen.cli.app import main
from standins.llm.server import StandInLLM
from tests.batch.test_batch_build import build_args

BATCH = ("--batch", "--batch-poll", "0.01")


def invoke(args: list[str]) -> Result:
    return CliRunner().invoke(main, args, catch_exceptions=False)


def error_line(result: Result) -> str:
    assert result.exit_code == 1, result.output
    (line,) = [line for line in result.output.splitlines() if line.startswith("error: ")]
    return line


def drafts(run: Path) -> list[dict[str, object]]:
    path = run / "drafts.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.parametrize(
    ("knob", "expected"),
    [
        ("models", r"does not know the model 'stand-in' \(404\); check --model\."),
        ("api_key", r"rejected the API key of 'openai:stand-in' \(401\); check OPENAI_API_KEY\."),
    ],
)
def test_a_rejected_key_or_an_unknown_model_stops_the_run_with_the_online_sentence(
    corpus: Path, tmp_path: Path, knob: str, expected: str
) -> None:
    refusal = {"models": {"models": ["another-model"]}, "api_key": {"api_key": "the-right-key"}}[knob]
    with StandInLLM(**refusal) as llm:  # type: ignore[arg-type]
        online = error_line(invoke(build_args(llm, corpus, tmp_path / "online")))
        # The upload itself is refused (401), or every line of the drafts' batch is a 404.
        batched = error_line(invoke(build_args(llm, corpus, tmp_path / "batch", *BATCH)))
        kinds = [entry["kind"] for entry in llm.log]
    assert re.search(expected, online), online
    assert batched == online
    assert kinds.count("batch_create") == (knob == "models")
    assert drafts(tmp_path / "batch") == []  # nothing recorded: the run, not each chunk, failed


@pytest.mark.parametrize("status", [401, 404])
def test_batch_lines_that_are_all_401_or_404_stop_the_run_as_online(corpus: Path, tmp_path: Path, status: int) -> None:
    with StandInLLM(batch_line_status=status) as llm:
        batched = error_line(invoke(build_args(llm, corpus, tmp_path / "batch", *BATCH)))
        # The same server refusing online calls the same way: the same sentence.
        refusal = {"api_key": "the-right-key"} if status == 401 else {"models": ["another-model"]}
        llm.configure(batch_line_status=0, **refusal)
        online = error_line(invoke(build_args(llm, corpus, tmp_path / "online")))
    assert batched == online
    assert f"({status})" in batched
    assert drafts(tmp_path / "batch") == []


def test_batch_lines_that_are_all_403_stop_the_run_in_the_online_sentence(corpus: Path, tmp_path: Path) -> None:
    with StandInLLM(batch_line_status=403) as llm:
        batched = error_line(invoke(build_args(llm, corpus, tmp_path / "batch", *BATCH)))
        assert batched == f"error: {llm.base_url} refused access to 'openai:stand-in' (403)."


def test_past_the_error_budget_the_run_stops_after_storing_the_round(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "batch"
    with StandInLLM(batch_failure_rate=0.8) as llm:
        stopped = error_line(invoke(build_args(llm, corpus, out, *BATCH)))
        failed = len([entry for entry in llm.log if entry.get("fault") == "batch_line"])
        assert re.search(
            rf"{failed} of 40 calls to .* failed even after retries, more than --max-failure-rate 50% "
            r"\(mostly server_error: batch batch_\d+: 500: The server had an error", stopped,
        ), stopped  # fmt: skip
        assert "re-run the same command to continue" in stopped
        # Only the drafts' round was sent, and all of it is recorded: the failures as retryable ones.
        assert [entry["kind"] for entry in llm.log].count("batch_create") == 1
        records = drafts(out)
        assert len(records) == 40
        assert sum(record["failure"] is not None for record in records) == failed > 20

        llm.configure(batch_failure_rate=0.0)
        again = invoke(build_args(llm, corpus, out, *BATCH))
        assert again.exit_code == 0, again.output
        assert all(record["failure"] is None for record in drafts(out)[-failed:])


def test_the_failure_rate_is_checked_at_the_end_as_online(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "batch"
    with StandInLLM(batch_failure_rate=0.3) as llm:
        # Rounds of fewer than 20 calls, some of them answered: only the end-of-run check applies.
        args = build_args(llm, corpus, out, *BATCH, "--max-failure-rate", "0.05", n=10)
        stopped = error_line(invoke(args))
        log = list(llm.log)
    failed = len([entry for entry in log if entry.get("fault") == "batch_line"])
    calls = len([entry for entry in log if entry["method"] == "BATCH"])
    assert 0 < failed < calls < 40
    assert f"{failed} of {calls} calls to " in stopped and "more than --max-failure-rate 5%" in stopped
    assert len(drafts(out)) == 10  # every round's records are kept
