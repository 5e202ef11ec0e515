"""A grid of the bundled BM25 baseline over chunk sizes 500 / 1000 / 2000, against a test set drafted
from 2,000-character chunks (the stand-in LLM): the chunk-level metric credits a small chunk that
holds the answer as it credits a large one, so its differences come from retrieval, not from size."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from datasets import load_from_disk

from qagen.cli.app import main
from qagen.corpus.evidence import normalise
from standins.llm.server import StandInLLM

SIZES = (500, 1000, 2000)
K = 3
VOCABULARY = "harbour valley engineers measured river station council museum archive northern modern".split()


def _word(rng: random.Random) -> str:
    return "".join(rng.choice("bdfgklmnprstvz") + rng.choice("aeiou") for _ in range(4)).capitalize()


def _corpus(root: Path) -> Path:
    """Documents of paragraphs (about 300 characters each) that each open with three words of their own.

    The stand-in drafts its question from the first words of a 2,000-character chunk and answers
    with its first sentence, so BM25 can find the paragraph holding the answer at every chunk size.
    """
    rng = random.Random(11)
    root.mkdir()
    for document in range(10):
        paragraphs = []
        for _ in range(14):
            body = ". ".join(" ".join(rng.choice(VOCABULARY) for _ in range(9)).capitalize() for _ in range(4))
            opening = f"{_word(rng)} {_word(rng)} {_word(rng)} opened in the year {rng.randint(1, 999)}."
            paragraphs.append(f"{opening} {body}.")
        (root / f"doc{document}.md").write_text("\n\n".join(paragraphs), encoding="utf-8")
    return root


def _invoke(*args: object) -> None:
    result = CliRunner().invoke(main, [*map(str, args), "-q"], catch_exceptions=False)
    assert result.exit_code == 0, result.output


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _old_rule_hit(contexts: list[dict[str, Any]], row: dict[str, Any]) -> float:
    """The rule this metric replaced: a context covering half of the reference chunk."""
    start, end = row["start_index"], row["end_index"]
    return float(
        any(
            context["source"] == row["source_doc"]
            and min(end, context["end_index"]) - max(start, context["start_index"]) >= (end - start) / 2
            for context in contexts[:K]
        )
    )


def test_a_grid_over_chunk_sizes_scores_retrieval_not_size(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path / "corpus")
    with StandInLLM() as server:
        server_url = ["--base-url", server.base_url]
        model = ["--generator-model", "openai:stand-in", *server_url]
        _invoke("build", corpus, "--out", tmp_path / "run", *model, "--n-generations", "40", "--seed", "3")
        reader = ["--reader-model", "openai:stand-in", *server_url]
        sizes = ",".join(map(str, SIZES))
        _invoke(
            "evaluate", tmp_path / "run", "--baseline", "bm25", "--corpus", corpus, *reader, "--out", tmp_path / "grid",
            "--chunk-size", sizes, "--k", K, "--metrics", "retrieval",
        )  # fmt: skip
    references = {row["id"]: row for row in load_from_disk(str(tmp_path / "run" / "dataset"))}
    runs: dict[int, Path] = {}
    for summary_file in (tmp_path / "grid").glob("*/summary.json"):
        runs[json.loads(summary_file.read_text())["system_settings"]["chunk_size"]] = summary_file.parent
    assert sorted(runs) == list(SIZES)

    old: dict[int, list[float]] = {}  # the old rule's hits on the questions whose answer the top k retrieved
    for size, run in runs.items():
        rows = _lines(run / "results.jsonl")
        answers = {record["item_id"]: record["output"] for record in _lines(run / "answers.jsonl")}
        assert len(rows) >= 8
        old[size] = []
        for row in rows:
            # The set carries the build's evidence: the sentence the stand-in quoted, which is its answer.
            assert row["evidence"]["match"] == "quoted"
            # Where the retrieved text holds the answer, the chunk counts, whatever its size; else not.
            answer = f" {normalise(row['true_answer'])} "
            holds_answer = any(answer in f" {normalise(text)} " for text in row["retrieved_docs"][:K])
            assert row["evidence_hit@k"] == float(holds_answer), (size, row["id"])
            if holds_answer:
                old[size].append(_old_rule_hit(answers[row["id"]]["contexts"], references[row["id"]]))
    # BM25 finds the paragraph holding the answer at every size here, and every size is credited alike...
    means = {
        size: json.loads((run / "summary.json").read_text())["metrics"][f"evidence_hit@{K}"]
        for size, run in runs.items()
    }
    assert means[500]["n"] >= 8 and means[500]["mean"] == means[1000]["mean"] == means[2000]["mean"] >= 0.8, means
    # ...where the rule it replaced gave the 500-character chunks holding the answer nothing.
    assert sum(old[500]) == 0 and sum(old[2000]) == len(old[2000]) >= 8, old
