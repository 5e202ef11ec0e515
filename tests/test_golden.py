"""Behaviour pinned across refactors: a build and an evaluation on a fixed corpus against the stand-in
LLM give exactly the rows recorded in `tests/golden/build_and_evaluate.json`.

The golden file was first written by the code before the task/executor redesign (issue 10), which
changed no row; it was regenerated for issue 11's deliberate changes (cut-off replies `truncated`,
the funnel's failure examples, `max_tokens` in every request), once when the bootstrap intervals
moved to numpy's `default_rng` (only the summary's interval bounds changed), and for issue 23's (the
generation prompt asks for the evidence sentence, so its hash and every request body changed; rows
gained the evidence, copied-share and BM25-rank columns; the funnel counts free-check rejections and
duplicates by meaning), and when each stage's usage gained its cached input tokens (issue 29: 0 here,
the stand-in reports none by default), and for issue 43 (the judges ask for token probabilities, so every
judge request body changed and the stand-in's malformed judge replies fell on other calls; the build's
rows, funnel and usage did not change). Any change to a row, a reason
string, an id or a count shows up here. Regenerate it only for a deliberate change of behaviour
(`QAGEN_WRITE_GOLDEN=1 python -m pytest tests/test_golden.py`), and say so in the commit. A change
to the request body alone (a new field) also changes it: the stand-in picks replies by hash.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from datasets import load_from_disk

from qagen.cli.app import main
from standins.corpus import write_corpus
from standins.llm.server import StandInLLM

GOLDEN = Path(__file__).parent / "golden" / "build_and_evaluate.json"


def _invoke(*args: object) -> None:
    result = CliRunner().invoke(main, [str(arg) for arg in args], catch_exceptions=False)
    assert result.exit_code == 0, result.output


def _observed(tmp_path: Path) -> dict[str, Any]:
    corpus = write_corpus(tmp_path / "corpus", documents=12)
    run, evaluation = tmp_path / "run", tmp_path / "eval"
    with StandInLLM() as server:
        # Every reply path: other rating formats, malformed drafts and verdicts, duplicates.
        server.configure(format_variety=0.3, generation_format_variety=0.3, malformed_rate=0.1, duplicate_rate=0.1)
        # One call at a time: identical requests (a grader that reads only the answer and contexts, a
        # critic that reads only a duplicated question) get the stand-in's replies in arrival order,
        # which concurrency would make a race.
        calls = ["--base-url", server.base_url, "--concurrency", "1"]
        model = ["--generator-model", "openai:stand-in", *calls]
        reader = ["--reader-model", "openai:stand-in", *calls]
        _invoke(
            "build", corpus, "--out", run, *model, "--n-generations", "24", "--seed", "7",
            "--chunk-size", "400", "--chunk-overlap", "40", "-q",
        )  # fmt: skip
        _invoke(
            "evaluate", run, "--baseline", "bm25", "--corpus", corpus, *reader, "--out", evaluation,
            "--chunk-size", "400", "--metrics", "correctness,ragas,graders,retrieval,text", "-q",
        )  # fmt: skip
    build_summary = json.loads((run / "summary.json").read_text())
    eval_summary = json.loads((evaluation / "summary.json").read_text())
    return {
        "candidates": list(load_from_disk(str(run / "candidates"))),
        "dataset": list(load_from_disk(str(run / "dataset"))),
        "funnel": build_summary["funnel"],
        "usage": build_summary["usage"],
        "results": [json.loads(line) for line in (evaluation / "results.jsonl").read_text().splitlines()],
        "evaluation": {key: eval_summary[key] for key in ("metrics", "questions", "answered", "failed", "judges")},
    }


@pytest.mark.slow
def test_build_and_evaluation_give_the_golden_rows(tmp_path: Path) -> None:
    observed = json.loads(json.dumps(_observed(tmp_path)))  # as JSON sees it: tuples are lists
    if os.environ.get("QAGEN_WRITE_GOLDEN"):
        GOLDEN.write_text(json.dumps(observed, indent=1, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    for part in golden:
        assert observed[part] == golden[part], part
    assert golden["candidates"] and golden["dataset"] and golden["results"]
