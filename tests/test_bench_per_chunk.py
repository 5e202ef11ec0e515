"""`benchmarks/bench_per_chunk.py` end to end in its `--standin` mode: both builds, the blind export, the
labels from the stand-in's hidden truth, and the figures it prints, checked against the runs' own records."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

from standins.llm.truth import is_good

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_per_chunk.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_per_chunk", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_the_bench_compares_both_builds_and_reads_the_labels(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bench = _bench()
    out = tmp_path / "bench"
    bench.main(["--standin", "--out", str(out), "-n", "6", "--per-chunk", "3"])
    printed = capsys.readouterr().out
    # Six drafts each: six calls, then two of three pairs.
    assert re.search(r"^drafting calls +6 +2$", printed, re.MULTILINE), printed
    assert re.search(r"^drafts \(pairs asked for\) +6 +6$", printed, re.MULTILINE)
    summaries = {n: json.loads((out / f"per_chunk_{n}" / "summary.json").read_text()) for n in (1, 3)}
    per_draft = [round(summaries[n]["usage"]["generation"]["input_tokens"] / 6) for n in (1, 3)]
    assert re.search(rf"^  per draft +{per_draft[0]:,} +{per_draft[1]:,}$", printed, re.MULTILINE)
    assert per_draft[1] < per_draft[0]
    # The export is blind (no build, no place) and holds every parsed draft of both.
    rows = [json.loads(line) for line in (out / "drafts_to_review.jsonl").read_text().splitlines()]
    blind = {"id", "question_type", "passages", "question", "answer"}
    assert len(rows) == 12 and all(set(row) == blind for row in rows)
    # Share good by place, as the hidden truth labels the drafts of each place.
    places = {}
    for line in (out / "per_chunk_3" / "drafts.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["pair"] is not None:
            places[record["id"]] = record["pair"]
    good = {row["id"]: is_good(row["question"], bench.STANDIN_GOOD_RATE) for row in rows}
    section = printed.split("with the reviewer's labels", 1)[1].split("  per_chunk=3", 1)[1]
    for place in (1, 2, 3):
        ids = [draft for draft, at in places.items() if at == place]
        assert f"pair {place}: good {sum(good[d] for d in ids)}/{len(ids)} " in section
    # The report alone reads the same directory with the same labels.
    bench.main(["--report", str(out), "--labels", str(out / "labels.jsonl")])
    assert capsys.readouterr().out.strip() in printed
