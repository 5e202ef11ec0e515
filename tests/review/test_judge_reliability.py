"""People's labels of an evaluation's answers give its judge's reliability: in `summary.json` (written by
`qagen evaluate`, `qagen agreement` and `qagen compare`) and in `qagen compare`'s table; without labels
the judge is said to be unmeasured. And `qagen compare` says the smallest difference it tells apart."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from qagen.cli.app import main
from qagen.evaluate.report import UNMEASURED, load_runs, paired_differences, smallest_told_apart
from qagen.evaluate.stamp import STAMP_FILE
from qagen.review.estimate import wilson_interval
from qagen.review.judge_reliability import judge_reliability
from qagen.review.labels import Label, LabelStore
from standins.llm.server import StandInLLM

REFERENCES = ["Reverse chronological order.", "The default port is 8080.", "It uses gzip compression.",
              "Hooks run before a commit.", "The worktree list command.", "Bundles carry objects offline."]  # fmt: skip


def _evaluate(server: StandInLLM, tmp_path: Path, name: str, replies: list[str]) -> tuple[Path, str]:
    testset, answers = tmp_path / "set.jsonl", tmp_path / f"{name}.jsonl"
    testset.write_text("".join(json.dumps({"id": f"q{i}", "question": f"Q{i}?", "answer": a}) + "\n"
                               for i, a in enumerate(REFERENCES)))  # fmt: skip
    answers.write_text("".join(json.dumps({"id": f"q{i}", "question": f"Q{i}?", "answer": a}) + "\n"
                               for i, a in enumerate(replies)))  # fmt: skip
    out = tmp_path / name
    args = ["evaluate", str(testset), "--answers", str(answers), "--out", str(out), "--reader-model",
            "openai:stand-in", "--base-url", server.base_url, "--metrics", "answer_correct,text", "-q"]  # fmt: skip
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return out, result.output


def _summary(out: Path) -> dict[str, object]:
    return json.loads((out / "summary.json").read_text())


def test_labels_of_answers_give_the_judges_agreement_in_the_summary_and_the_comparison(tmp_path: Path) -> None:
    # The stand-in judge says Yes to the first three (the references themselves), No to the others.
    replies = [*REFERENCES[:3], "Oldest first.", "git stash", "Nothing at all."]
    with StandInLLM() as server:
        right, said = _evaluate(server, tmp_path, "right", replies)
        wrong, _ = _evaluate(server, tmp_path, "wrong", ["I do not know."] * 6)
        # No labels yet: the judge is unmeasured, in the summary and on the screen.
        assert _summary(right)["judge_reliability"] == {"answer_correct": UNMEASURED}
        assert f"answer_correct: {UNMEASURED}" in said

        # A reviewer: the first four correct (the fourth against the judge), the last two wrong.
        people = [True, True, True, True, False, False]
        with LabelStore(right) as store:
            for number, correct in enumerate(people):
                store.append(Label(kind="answer", item_id=f"q{number}", reviewer="ann", correct=correct, via="page"))
        agreement = CliRunner().invoke(main, ["agreement", str(right)], catch_exceptions=False)
        assert agreement.exit_code == 0, agreement.output
        recorded = _summary(right)["judge_reliability"]["answer_correct"]  # type: ignore[index]
        low, high = wilson_interval(5, 6)
        assert recorded["labels"] == 6 and recorded["accuracy"] == 5 / 6 and recorded["cut"] == 0.5
        assert (recorded["accuracy_low"], recorded["accuracy_high"]) == (low, high)
        assert recorded["kappa"] is not None and recorded["kappa_low"] <= recorded["kappa"] <= recorded["kappa_high"]
        # Only the summary was edited, no score: a re-run still has nothing to do, and keeps the line.
        calls = len(server.log)
        _, again = _evaluate(server, tmp_path, "right", replies)
        assert len(server.log) == calls and "agrees with 5 of 6 labels" in again
        assert (right / STAMP_FILE).exists()

    compared = CliRunner().invoke(main, ["compare", str(right), str(wrong)], catch_exceptions=False)
    assert compared.exit_code == 0, compared.output
    measured = judge_reliability(right)["answer_correct"]
    assert measured is not None
    assert f"right: {measured.line()}" in compared.output
    assert "agrees with 5 of 6 labels, 0.83" in compared.output
    assert f"wrong: answer_correct: {UNMEASURED}" in compared.output
    # The smallest difference told apart: half the paired interval, per metric, printed beside each test.
    runs = load_runs([right, wrong])
    for difference in paired_differences(runs):
        assert f"±{smallest_told_apart(difference.test):.3f}" in compared.output
        assert smallest_told_apart(difference.test) == (difference.test.high - difference.test.low) / 2
    assert "told apart from: the smallest difference" in compared.output
