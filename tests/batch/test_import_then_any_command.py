"""After `qagen batch import`, no command pays again for a request the imported file answered: the
answers are records at once (so `qagen stage filter` does not send the user to `qagen stage generate`), and
every executor, online ones included, takes a request answered in a batch from the run's cache."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from qagen.cli.app import main
from standins.llm.offline import answer_requests
from standins.llm.server import StandInLLM

SETTINGS = ("--seed", "7", "--chunk-size", "400", "--chunk-overlap", "40")
MODEL = ("--generator-model", "openai:stand-in", "--n-generations", "8")


def _said(*args: str) -> str:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def _imported_drafts(corpus: Path, tmp_path: Path) -> tuple[Path, set[str]]:
    """A run whose 8 drafts were exported, answered offline and imported; and their request ids."""
    run = tmp_path / "run"
    _said("stage", "chunk", str(corpus), "--out", str(run), *SETTINGS)
    _said("batch", "export", str(run), "--out", str(tmp_path / "requests.jsonl"), *MODEL)
    answer_requests(tmp_path / "requests.jsonl", tmp_path / "results.jsonl")
    said = _said("batch", "import", str(run), str(tmp_path / "results.jsonl"))
    assert said.splitlines()[0] == "8 answers imported for 8 exported requests"
    ids = {json.loads(text)["custom_id"] for text in (tmp_path / "requests.jsonl").read_text().splitlines()}
    return run, ids


def _drafts(run: Path) -> int:
    return len((run / "drafts.jsonl").read_text().splitlines())


def test_filter_after_an_import_counts_the_drafts_and_suggests_no_generate(corpus: Path, tmp_path: Path) -> None:
    run, _ = _imported_drafts(corpus, tmp_path)
    said = _said("stage", "filter", str(run))
    assert "qagen stage generate" not in said and "no draft yet" not in said
    assert "8 drafts passed every critic asked" in said
    assert "generation in batches  8 calls" in said


def test_filter_after_an_import_names_the_next_export_as_the_step_that_decides_the_rest(
    corpus: Path, tmp_path: Path
) -> None:
    run, _ = _imported_drafts(corpus, tmp_path)
    said = _said("stage", "filter", str(run), "--min-score", "3")
    calls = json.loads((run / "summary.json").read_text())["funnel"]["undecided_calls"]["critique"]
    assert "qagen stage critique" not in said  # no call is made from here in a run made through batch files
    assert (
        "8 drafts passed every critic asked but need one never asked (undecided, not failed: its request was not "
        f"answered yet, or a lower score had stopped their critics); `qagen batch export {run} --min-score 3` "
        f"writes the requests that decide them (up to {calls}, a round at a time) for your batch runner, and "
        f"`qagen batch import {run} RESULTS` reads its results back.\n"
    ) in said
    # The command named works as written: it exports the critics' first round, one request per draft.
    command = re.search(r"`qagen (batch export [^`]+)`", said)
    assert command is not None
    exported = _said(*command.group(1).split(), "--out", str(tmp_path / "critics.jsonl"))
    assert exported.startswith(f"8 requests -> {tmp_path / 'critics.jsonl'}")
    assert calls >= 8


@pytest.mark.parametrize("command", ["generate", "critique", "build"])
def test_no_command_after_an_import_asks_an_imported_request_again(corpus: Path, tmp_path: Path, command: str) -> None:
    run, imported = _imported_drafts(corpus, tmp_path)
    with StandInLLM() as llm:
        online = ("--generator-model", "openai:stand-in", "--base-url", llm.base_url, "-q")
        args = {
            "generate": ["stage", "generate", str(run), *online],
            "critique": ["stage", "critique", str(run), "--critic-base-url", llm.base_url, "-q"],
            "build": ["build", str(corpus), "--out", str(run), *online, "--n-generations", "8", *SETTINGS],
        }[command]
        _said(*args)
        asked = llm.requests_by_body()
    assert not set(asked) & imported
    assert all(count == 1 for count in asked.values())
    assert _drafts(run) == 8
    # Only critics were left to ask: each call asked is one critique recorded.
    critiques = run / "critiques.jsonl"
    assert len(asked) == (0 if command == "generate" else len(critiques.read_text().splitlines()))
    assert command == "generate" or len(asked) >= 8


def test_answers_cached_but_not_yet_recorded_are_not_asked_again_online(corpus: Path, tmp_path: Path) -> None:
    # As if the import had been killed after saving the results file, before recording the drafts.
    run, _ = _imported_drafts(corpus, tmp_path)
    (run / "drafts.jsonl").unlink()
    for index in run.glob("drafts.jsonl.*"):
        index.unlink()
    with StandInLLM() as llm:
        _said("stage", "generate", str(run), "--generator-model", "openai:stand-in", "--base-url", llm.base_url, "-q")
        asked = llm.requests_by_body()
    assert not asked
    assert _drafts(run) == 8
    assert "8 records from batches" in _said("status", str(run))
