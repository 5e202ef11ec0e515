"""qagen's real CLI against a real OpenAI-compatible server with a real (tiny, messy) model.

SmolLM2-135M-Instruct behind `python -m llama_cpp.server` writes what small models write: template
echoes, runaway repetitions, prose instead of a verdict. These tests assert only what must hold
whatever it writes: every record is a usable result or a failure that keeps the reply, no score is
read from an echoed template, the token counts are the server's, a resume makes no call, and the
evaluation's values are in range or explained.

Each scenario puts the real model where its replies are read:

- `real_model`: the generator and the critics, then the reader and the judge (SmolLM2 writes
  `Question: ...` where the protocol asks for `Factoid question: ...`, read as a question; when no
  draft is usable, the critics get nothing to rate and the evaluation finds no question: asserted
  as such);
- `real_critics`: the critics, on drafts written by the bundled stand-in server (which always
  follows the protocol), so the critique parser faces the real model's replies;
- `real_judge`: the reader and the judge of `qagen evaluate`, on a test set built with the stand-in.

All traffic goes through a `RecordingProxy` on 127.0.0.1 that sends each request to the server of
the model it names and records the `usage` of every reply.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from click.testing import CliRunner
from datasets import load_from_disk

from qagen.cli.app import main
from qagen.failures import FailureKind
from qagen.generation.replies import verdict_blocks
from qagen.records import Critique, Draft, TaskOutput
from qagen.runs.store import RecordLog
from realserver.llama import MODEL_ALIAS, Exchange, RealServer, RecordingProxy
from standins.corpus import write_corpus
from standins.llm.server import StandInLLM

pytestmark = [pytest.mark.real_llm, pytest.mark.slow]

REAL = f"openai:{MODEL_ALIAS}"
STAND_IN = "openai:stand-in"
CAP = 128  # output tokens per reply
BUILD_FLAGS = ["--chunk-size", "400", "--chunk-overlap", "40", "--concurrency", "1", "--max-output-tokens", str(CAP)]
BUILD_FLAGS += ["--vetting", "cookbook"]  # the 1-5 ratings a real model writes, and what is read of them


@dataclass(frozen=True)
class Step:
    """One CLI command: its exit code, what it printed, and the chat completions it caused."""

    exit_code: int
    output: str
    exchanges: list[Exchange]
    requests: int  # every request that reached the proxy (chat completions or not)
    seconds: float


def run_cli(proxy: RecordingProxy, args: list[str]) -> Step:
    mark, requests = len(proxy.exchanges), proxy.requests
    started = time.monotonic()
    result = CliRunner().invoke(main, args)
    seconds = time.monotonic() - started
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception  # a traceback is a failure of its own: show it
    return Step(result.exit_code, result.output, proxy.since(mark), proxy.requests - requests, seconds)


@dataclass(frozen=True)
class Scenario:
    name: str
    generator: str
    critic: str
    corpus: Path
    run: Path
    build: Step
    rebuild: Step  # the same build command again
    evaluation: Path
    evaluate: Step
    reevaluate: Step  # the same evaluate command again

    def drafts(self) -> list[Draft]:
        return list(RecordLog(self.run / "drafts.jsonl", Draft).iter_records())

    def critiques(self) -> list[Critique]:
        return list(RecordLog(self.run / "critiques.jsonl", Critique).iter_records())

    def summary(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.run / "summary.json").read_text(encoding="utf-8"))
        return data

    def kept(self) -> int:
        return int(self.summary()["funnel"]["kept"])


class Setup(NamedTuple):
    """Which model writes the drafts and which rates them; the build's own flags."""

    generator: str
    critic: str
    flags: list[str]


SETUPS = {
    # The real model everywhere: generator, critics, reader and judge.
    "real_model": Setup(REAL, REAL, ["-n", "4", "--all-critics"]),
    # Protocol-following drafts from the stand-in, rated by the real critics (all three, always).
    "real_critics": Setup(STAND_IN, REAL, ["-n", "3", "--all-critics"]),
    # A test set the stand-in builds and keeps whole, answered and judged by the real model.
    "real_judge": Setup(STAND_IN, STAND_IN, ["-n", "2", "--min-score", "1"]),
}


def run_scenario(name: str, setup: Setup, real_server: RealServer, tmp: Path) -> Scenario:
    """Build, build again, evaluate, evaluate again: every command through one recording proxy."""
    corpus = write_corpus(tmp / "corpus", documents=3)
    run, evaluation = tmp / "run", tmp / "eval"
    with (
        StandInLLM() as stand_in,
        RecordingProxy(
            {"stand-in": f"127.0.0.1:{stand_in.port}", MODEL_ALIAS: f"127.0.0.1:{real_server.port}"},
            default=f"127.0.0.1:{real_server.port}",
            # Every request carries qagen's own cap; one that came without would be capped here and
            # recorded as such (`max_tokens_added`), and the tests fail on it.
            max_tokens_when_missing=CAP,
        ) as proxy,
    ):
        build_args = [
            "build", str(corpus), "--out", str(run), "--generator-model", setup.generator, "--critic-model",
            setup.critic,
            "--base-url", proxy.base_url, *BUILD_FLAGS, *setup.flags, "-q",
        ]  # fmt: skip
        build = run_cli(proxy, build_args)
        rebuild = run_cli(proxy, build_args)
        evaluate_args = [
            "evaluate", str(run), "--out", str(evaluation), "--baseline", "bm25", "--corpus", str(corpus),
            "--chunk-size", "400", "--k", "2", "--metrics", "correctness,retrieval", "--reader-model", REAL,
            "--base-url", proxy.base_url, "--concurrency", "1", "--max-output-tokens", str(CAP), "-q",
        ]  # fmt: skip
        evaluate = run_cli(proxy, evaluate_args)
        reevaluate = run_cli(proxy, evaluate_args)
    return Scenario(name, setup.generator, setup.critic, corpus, run, build, rebuild, evaluation, evaluate, reevaluate)


@pytest.fixture(scope="module", params=list(SETUPS))
def scenario(
    request: pytest.FixtureRequest,
    real_server: RealServer,
    tmp_path_factory: pytest.TempPathFactory,
    real_llm_notes: list[str],
) -> Scenario:
    name = str(request.param)
    made = run_scenario(name, SETUPS[name], real_server, tmp_path_factory.mktemp(name))
    real_llm_notes.append(describe(made))
    return made


def describe(s: Scenario) -> str:
    """One line for the terminal summary: what the real model did in this scenario."""

    def outcome(records: list[Draft] | list[Critique]) -> str:
        failed = Counter(r.reason for r in records if not r.ok)
        reasons = ", ".join(f"{reason} {n}" for reason, n in sorted(failed.items()))
        return f"{sum(r.ok for r in records)} ok, {sum(failed.values())} failed" + (f" ({reasons})" if reasons else "")

    real_calls = sum(e.model == MODEL_ALIAS for step in (s.build, s.evaluate) for e in step.exchanges)
    return (
        f"real LLM [{s.name}]: drafts {outcome(s.drafts())}; critiques {outcome(s.critiques())}; "
        f"kept {s.kept()}; evaluate exit {s.evaluate.exit_code}; {real_calls} calls to {MODEL_ALIAS}; "
        f"build {s.build.seconds:.0f} s, evaluate {s.evaluate.seconds:.0f} s"
    )


# --- the build ----------------------------------------------------------------------------------
def _nothing_drafted(scenario: Scenario) -> bool:
    return not any(draft.ok for draft in scenario.drafts())


def test_the_build_ends_with_its_outputs_whatever_the_model_writes(scenario: Scenario) -> None:
    # Unreadable replies are recorded failures, never a crash: the build ends and says what it kept,
    # or, when no draft at all could be read, exits 1 with one sentence naming the commonest failure.
    assert "Traceback" not in scenario.build.output
    assert (scenario.run / "dataset").is_dir() and (scenario.run / "candidates").is_dir()
    if _nothing_drafted(scenario):
        assert scenario.build.exit_code == 1, scenario.build.output
        assert scenario.build.output.startswith("error: No draft could be read: all "), scenario.build.output
        return
    assert scenario.build.exit_code == 0, scenario.build.output
    kept = scenario.kept()
    assert f"kept {kept} question{'s' if kept != 1 else ''}: {scenario.run / 'dataset'}" in scenario.build.output


def _check_record(record: TaskOutput, replies: Counter[str]) -> None:
    """Ok, or failed with the raw reply kept verbatim (the error, for a call that got no reply)."""
    if record.failure is None:
        assert record.raw is not None and record.raw in replies, record
        replies[record.raw] -= 1
        return
    assert record.raw is not None, record
    if record.failure.is_call_failure:
        assert record.raw.strip(), record  # the (redacted) error
        return
    assert record.raw in replies, record  # the reply as the server sent it
    replies[record.raw] -= 1
    assert record.raw.strip() or record.failure.kind is FailureKind.EMPTY_REPLY, record


def tokens(exchanges: list[Exchange], field: str) -> int:
    """The tokens the server reported in `usage[field]`, summed over its replies."""
    return sum(int(e.usage[field]) for e in exchanges if e.usage is not None)


def _replies(steps: list[Exchange], model: str) -> Counter[str]:
    return Counter(e.content or "" for e in steps if e.status == 200 and e.model == model)


def test_every_draft_is_a_usable_pair_or_a_failure_that_keeps_the_reply(scenario: Scenario) -> None:
    drafts = scenario.drafts()
    assert len(drafts) == scenario.summary()["funnel"]["sampled"]
    replies = _replies(scenario.build.exchanges, scenario.generator.split(":", 1)[1])
    for draft in drafts:
        assert draft.model == scenario.generator
        if draft.ok:
            assert draft.question and draft.question.strip(), draft
            assert draft.answer and draft.answer.strip(), draft
        else:
            assert draft.question is None and draft.answer is None, draft
        _check_record(draft, replies)


def test_every_critique_is_a_score_from_1_to_5_or_a_failure_that_keeps_the_reply(scenario: Scenario) -> None:
    critiques = scenario.critiques()
    ok_drafts = {d.id for d in scenario.drafts() if d.ok}
    # A draft a free check rejects meets no critic (that is what the checks save).
    checks = scenario.summary()["funnel"]["checks_rejected"]
    checked_out = {row["id"] for row in load_from_disk(str(scenario.run / "candidates")) if row["reason"] in checks}
    # --all-critics / --min-score 1: every other usable draft meets every critic.
    assert Counter(c.draft_id for c in critiques) == dict.fromkeys(ok_drafts - checked_out, 3)
    replies = _replies(scenario.build.exchanges, scenario.critic.split(":", 1)[1])
    for critique in critiques:
        assert critique.model == scenario.critic
        if critique.ok:
            assert critique.score is not None and 1 <= critique.score <= 5, critique
        else:
            assert critique.score is None, critique
        _check_record(critique, replies)


def test_no_score_is_read_from_a_template_echo_or_a_later_block(scenario: Scenario) -> None:
    for critique in scenario.critiques():
        if not critique.ok:
            continue
        assert critique.raw is not None
        first = verdict_blocks(critique.raw)[0]
        assert "(your rating" not in first.lower(), critique.raw
        rating = re.search(r"total\s+rating\W*(\d+)", first, re.IGNORECASE)
        assert rating is not None and int(rating.group(1)) == critique.score, critique.raw


def test_token_usage_is_what_the_server_reported(scenario: Scenario) -> None:
    exchanges = scenario.build.exchanges
    assert exchanges, "the build made no call"
    for exchange in exchanges:
        assert exchange.status == 200, exchange
        # qagen sent the cap itself (the proxy added none), and the server kept to it.
        assert exchange.max_tokens_sent == CAP and not exchange.max_tokens_added, exchange
        assert exchange.usage is not None and exchange.usage["completion_tokens"] <= CAP, exchange
    drafts, critiques = scenario.drafts(), scenario.critiques()
    by_model: dict[str, list[TaskOutput]] = {}
    for record in [*drafts, *critiques]:
        by_model.setdefault(record.model.split(":", 1)[1], []).append(record)
    assert {e.model for e in exchanges} == set(by_model)
    for model, records in by_model.items():
        served = [e for e in exchanges if e.model == model]
        assert len(records) == len(served), model  # one record per reply: none lost, none asked twice
        assert sum(r.usage.input_tokens for r in records) == tokens(served, "prompt_tokens")
        assert sum(r.usage.output_tokens for r in records) == tokens(served, "completion_tokens")
    # And summary.json reports the same tokens, stage by stage.
    usage = scenario.summary()["usage"]
    for stage, records in (("generation", drafts), ("critique", critiques)):
        assert usage[stage]["calls"] == len(records)
        assert usage[stage]["input_tokens"] == sum(r.usage.input_tokens for r in records)
        assert usage[stage]["output_tokens"] == sum(r.usage.output_tokens for r in records)


def test_resuming_the_build_makes_no_call(scenario: Scenario) -> None:
    assert scenario.rebuild.exit_code == scenario.build.exit_code, scenario.rebuild.output
    assert scenario.rebuild.requests == 0, scenario.rebuild.exchanges
    if scenario.rebuild.exit_code == 0:
        assert f"kept {scenario.kept()} questions" in scenario.rebuild.output


# --- the evaluation -----------------------------------------------------------------------------
_RESULT = re.compile(r"\[RESULT\]", re.IGNORECASE)


def _first_result_score(raw: str) -> str | None:
    """What follows the first `[RESULT]` that is not the prompt's `<an integer ...>` placeholder."""
    for marker in _RESULT.finditer(raw):
        tail = raw[marker.end() :].lstrip(" \t\n*:：=([")
        if tail.startswith("<"):
            continue
        number = re.match(r"\d+", tail)
        return number.group(0) if number else tail[:20]
    return None


def test_evaluation_scores_every_kept_question_or_says_there_is_none(scenario: Scenario) -> None:
    kept = scenario.kept()
    if kept == 0:
        # What `qagen evaluate` does today with an empty test set: one sentence, exit 1, no call.
        assert scenario.evaluate.exit_code == 1, scenario.evaluate.output
        assert scenario.evaluate.output.strip() == (
            f"error: {scenario.run} (run directory) has no usable questions (0 rows skipped)."
        )
        assert scenario.evaluate.requests == 0
        return
    summary = json.loads((scenario.evaluation / "summary.json").read_text(encoding="utf-8"))
    judge = summary["judges"]["correctness"]
    if summary["answered"] == 0 or (judge["judged"] == 0 and judge["failed"] > 0):
        # Nothing measured: exit 1 with one sentence (results and summary are written first).
        assert scenario.evaluate.exit_code == 1, scenario.evaluate.output
        assert "questions was answered" in scenario.evaluate.output or "could read none" in scenario.evaluate.output
    else:
        assert scenario.evaluate.exit_code == 0, scenario.evaluate.output
    lines = (scenario.evaluation / "results.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    assert len(rows) == kept
    assert sorted(row["question"] for row in rows) == sorted(load_from_disk(str(scenario.run / "dataset"))["question"])
    for row in rows:
        assert row["generated_answer"] is not None or row["answer_error"], row
        value = row["correctness"]
        if value is None:
            assert row["correctness_reason"], row
        else:
            # The written score, or its expected rating where the server sent token probabilities.
            written = row["correctness_detail"]["score"]
            assert 1 <= value <= 5 and isinstance(written, int), row
            assert row["correctness_reason"] == "", row
            assert _first_result_score(row["correctness_raw"]) == str(written), row["correctness_raw"]
            if row["correctness_detail"]["read_as"] == "written":
                assert value == written, row


def test_evaluation_usage_is_what_the_server_reported(scenario: Scenario) -> None:
    exchanges = scenario.evaluate.exchanges
    if scenario.kept() == 0:
        assert exchanges == []
        return
    assert exchanges and all(e.model == MODEL_ALIAS and e.status == 200 for e in exchanges), exchanges
    for exchange in exchanges:
        assert exchange.max_tokens_sent == CAP and not exchange.max_tokens_added, exchange
        assert exchange.usage is not None and exchange.usage["completion_tokens"] <= CAP, exchange
    summary = json.loads((scenario.evaluation / "summary.json").read_text(encoding="utf-8"))
    usage = summary["usage"]
    assert usage["system"]["input_tokens"] + usage["judge"]["input_tokens"] == tokens(exchanges, "prompt_tokens")
    assert usage["system"]["output_tokens"] + usage["judge"]["output_tokens"] == tokens(exchanges, "completion_tokens")


def test_resuming_the_evaluation_makes_no_call(scenario: Scenario) -> None:
    assert scenario.reevaluate.exit_code == scenario.evaluate.exit_code, scenario.reevaluate.output
    assert scenario.reevaluate.requests == 0, scenario.reevaluate.exchanges
