"""Offline batches: requests exported round by round, answered by the stand-in's offline runner and
imported, give the same records and dataset as online mode; `qagen status` tells where a run is."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from qagen.cli.app import main
from standins.llm.offline import answer_requests
from standins.llm.server import StandInLLM
from tests.batch.test_batch_build import build_args, rows


def _invoke(*args: str) -> str:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def _records(run: Path, name: str) -> list[dict[str, object]]:
    return sorted((json.loads(line) for line in (run / name).read_text().splitlines()), key=lambda r: str(r["id"]))


def test_export_import_round_trip_gives_the_records_of_online_mode(corpus: Path, tmp_path: Path) -> None:
    with StandInLLM() as online:
        _invoke(*build_args(online, corpus, tmp_path / "online"))
    run = tmp_path / "offline"
    _invoke(
        "stage", "chunk", str(corpus), "--out", str(run), "--seed", "7", "--chunk-size", "400", "--chunk-overlap", "40"
    )
    model = ["--generator-model", "openai:stand-in", "--n-generations", "40"]
    rounds = 0
    while True:
        requests, results = tmp_path / f"requests{rounds}.jsonl", tmp_path / f"results{rounds}.jsonl"
        said = _invoke("batch", "export", str(run), "--out", str(requests), *model)
        if "nothing left" in said:
            break
        rounds += 1
        assert rounds <= 4
        lines = [json.loads(line) for line in requests.read_text().splitlines()]
        assert {line["url"] for line in lines} == {"/v1/chat/completions"} and all(line["custom_id"] for line in lines)
        answer_requests(requests, results)
        assert "answers imported" in _invoke("batch", "import", str(run), str(results))
        assert "imported before" in _invoke("batch", "import", str(run), str(results))
    assert rounds >= 2
    _invoke("stage", "filter", str(run))
    for name in ("drafts.jsonl", "critiques.jsonl"):
        assert _records(run, name) == _records(tmp_path / "online", name)
    for name in ("dataset", "candidates"):
        assert rows(run, name) == rows(tmp_path / "online", name)
    status = _invoke("status", str(run))
    assert f"batch rounds: {rounds}" in status and "records, one per call: 40 drafting" in status
    # Every record came from imported results: `status` and the summary count them as batch work.
    paid = sum(1 for name in ("drafts.jsonl", "critiques.jsonl") for _ in (run / name).read_text().splitlines())
    assert f"{paid} records from batches" in status
    assert sum(spend["calls"] for spend in json.loads((run / "summary.json").read_text())["batch"].values()) > 0
