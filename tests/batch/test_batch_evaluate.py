"""`qagen evaluate --batch` against the stand-in's Batch API: the baseline's reader and the judges
answer in batch rounds, a user's own system answers as online and its judges go in batches; either
way the results rows and the summary's metrics are those of online mode, in at most three rounds,
and the summary prices the batched calls at half the online price."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from click.testing import CliRunner, Result

from qagen.cli.app import main
from standins.corpus import write_corpus
from standins.llm.server import StandInLLM

# Every judge, faithfulness (statements, then verdicts) and context precision (one call per context) included.
METRICS = "correctness,faithfulness,context_precision,context_recall,context_relevance,graders,retrieval,text"


class Built(NamedTuple):
    corpus: Path
    run: Path
    root: Path


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    root = tmp_path_factory.mktemp("batch-evaluate")
    corpus = write_corpus(root / "corpus", documents=8)
    with StandInLLM() as server:
        result = invoke(
            "build", corpus, "--out", root / "run", "--generator-model", "openai:stand-in", "--base-url",
            server.base_url,
            "--n-generations", "12", "--seed", "7",
            "--chunk-size", "400", "--chunk-overlap", "40",
        )  # fmt: skip
        assert result.exit_code == 0, result.output
    yield Built(corpus, root / "run", root)


def invoke(*args: object) -> Result:
    return CliRunner().invoke(main, [*(str(arg) for arg in args), "-q"], catch_exceptions=False)


def model(server: StandInLLM) -> list[str]:
    return ["--reader-model", "openai:stand-in", "--base-url", server.base_url]


def priced(server: StandInLLM) -> list[str]:
    """A model of known price (the stand-in answers any name): the summary prices its calls."""
    return ["--reader-model", "openai:gpt-4o-mini", "--base-url", server.base_url]


def results(eval_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (eval_dir / "results.jsonl").read_text().splitlines()]


def summary(eval_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((eval_dir / "summary.json").read_text())
    return data


def evaluate_both(built: Built, name: str, *system: object) -> tuple[Path, Path, list[dict[str, Any]]]:
    """The same evaluation online and with --batch (each on a fresh stand-in: the same replies);
    the directories, and the batch server's log."""
    online, batched = built.root / f"{name}-online", built.root / f"{name}-batch"
    with StandInLLM() as server:
        result = invoke("evaluate", built.run, *system, *priced(server), "--out", online, "--metrics", METRICS)
        assert result.exit_code == 0, result.output
    with StandInLLM(batch_polls=1) as server:
        args = ["evaluate", built.run, *system, *priced(server), "--out", batched, "--metrics", METRICS]
        result = invoke(*args, "--batch", "--batch-poll", "0.01")
        assert result.exit_code == 0, result.output
        log = list(server.log)
    spend = summary(batched)["batch"]["judge"]
    said = f"judge calls in batches: {spend['calls']} (${spend['cost_usd']:.4f} at batch prices instead of "
    assert said in result.output
    return online, batched, log


def assert_same_results(online: Path, batched: Path, *, roles: set[str]) -> None:
    assert results(batched) == results(online)
    spent = summary(batched).pop("batch")
    assert summary(online).pop("batch") == {}
    assert {key: value for key, value in summary(batched).items() if key != "batch"} == {
        key: value for key, value in summary(online).items() if key != "batch"
    }
    assert summary(batched)["answered"] > 0
    judged = summary(batched)["judges"]
    assert set(judged) >= {"correctness", "faithfulness", "context_precision"}
    assert all(counts["judged"] > 0 for counts in judged.values())
    # Every paid call of the run was answered in a batch: all of each role's tokens, at half the price.
    assert set(spent) == roles
    for role, spend in spent.items():
        usage = summary(batched)["usage"][role]
        assert (spend["input_tokens"], spend["output_tokens"]) == (usage["input_tokens"], usage["output_tokens"])
        assert spend["calls"] > 0 and spend["online_cost_usd"] > 0
        assert spend["cost_usd"] == pytest.approx(spend["online_cost_usd"] / 2, abs=1e-6)
    raws = [row[f"{metric}_raw"] for row in results(batched) for metric in judged]
    assert spent["judge"]["calls"] == sum(len(raw) if isinstance(raw, list) else raw is not None for raw in raws)


def test_baseline_reader_and_judges_in_batches_give_the_online_results(built: Built) -> None:
    system = ("--baseline", "bm25", "--corpus", built.corpus, "--chunk-size", "400")
    online, batched, log = evaluate_both(built, "baseline", *system)
    assert_same_results(online, batched, roles={"system", "judge"})
    # No chat call went online: the reader's and every judge's went in batch lines.
    assert not [entry for entry in log if entry["path"].endswith("/chat/completions") and entry["method"] == "POST"]
    created = [entry for entry in log if entry["kind"] == "batch_create"]
    # The reader's answers; then every judge's first call; then faithfulness's verdicts.
    assert len(created) == 3


def write_answers(built: Built) -> Path:
    """The baseline's online answers as a user's answers file: a system qagen does not call."""
    answers = built.root / "answers.jsonl"
    if answers.exists():
        return answers
    with StandInLLM() as server:
        baseline = built.root / "answers-source"
        result = invoke(
            "evaluate", built.run, "--baseline", "bm25", "--corpus", built.corpus, "--chunk-size", "400",
            *model(server), "--out", baseline, "--metrics", "retrieval",
        )  # fmt: skip
        assert result.exit_code == 0, result.output
    rows = [
        {"question": row["question"], "answer": row["generated_answer"], "contexts": row["retrieved_docs"]}
        for row in results(baseline)
    ]
    answers.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return answers


def test_own_system_answers_online_and_its_judges_go_in_batches(built: Built) -> None:
    online, batched, log = evaluate_both(built, "answers", "--answers", write_answers(built))
    assert_same_results(online, batched, roles={"judge"})  # the user's system is not paid through qagen
    created = [entry for entry in log if entry["kind"] == "batch_create"]
    assert len(created) == 2  # the judges' first calls, then faithfulness's verdicts


def test_no_wait_exits_4_and_the_same_command_later_finishes(built: Built, tmp_path: Path) -> None:
    out = tmp_path / "eval"
    with StandInLLM(batch_polls=50) as server:
        args = ["evaluate", built.run, "--answers", write_answers(built), *model(server), "--out", out]
        first = invoke(*args, "--metrics", "correctness", "--batch", "--no-wait")
        assert first.exit_code == 4, first.output
        assert "run the same command again" in first.output
        again = invoke(*args, "--metrics", "correctness", "--batch", "--no-wait")
        assert again.exit_code == 4, again.output
        assert len([entry for entry in server.log if entry["kind"] == "batch_create"]) == 1  # polled, not resubmitted
        server.configure(batch_polls=0)
        done = invoke(*args, "--metrics", "correctness", "--batch", "--batch-poll", "0.01")
        assert done.exit_code == 0, done.output
    assert summary(out)["judges"]["correctness"]["judged"] > 0
