"""The free checks in a real build against the stand-in LLM: drafts whose evidence is not in their
chunk, or that break one of the prompt's rules, are rejected with their own reason before any
critic (the stand-in's request log holds no critic call for them); kept rows carry evidence
offsets whose text is the quoted sentence; replies without the evidence line (an older prompt, the
reviewed drafts' recorded replies) still build, and the checks still apply."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from datasets import Dataset, load_from_disk

from qagen.config import BuildConfig
from qagen.corpus.settings import CorpusSettings
from qagen.generation.checks.evidence import EVIDENCE_NOT_FOUND
from qagen.generation.checks.rules import ANSWER_IN_QUESTION, ANSWER_NOT_GROUNDED, FREE_CHECKS, SOURCE_POINTING
from qagen.generation.pipeline import build
from qagen.llm.backends import ModelSettings
from qagen.llm.prompts import load_prompt
from qagen.llm.untrusted import neutralize
from qagen.review.check_precision import read_reviewed, rejections
from standins.llm.replies import recorded_key
from standins.llm.server import StandInLLM

RULE_REASONS = {
    "generation:source_pointing": SOURCE_POINTING,
    "generation:answer_in_question": ANSWER_IN_QUESTION,
    "generation:ungrounded_answer": ANSWER_NOT_GROUNDED,
    "generation:evidence_miss": EVIDENCE_NOT_FOUND,
}


def _config(corpus: CorpusSettings, llm: StandInLLM, **changes: Any) -> BuildConfig:
    model = ModelSettings(spec="openai:stand-in", base_url=llm.base_url)
    settings: dict[str, Any] = {
        "corpus": corpus, "chunking": {"chunk_size": 400, "chunk_overlap": 40}, "n_generations": 40, "seed": 5,
        "generator": model, "critic": model, "dedup_embeddings": None,
    }  # fmt: skip
    return BuildConfig.model_validate({**settings, **changes})


def _rows(path: Path) -> list[dict[str, Any]]:
    return list(load_from_disk(str(path)))


def _critiqued(llm: StandInLLM) -> Counter[str]:
    return Counter(entry["question"] for entry in llm.log if entry["prompt"] in ("critique", "check", "reader"))


def test_drafts_failing_a_free_check_get_no_critic_call(corpus: Path, tmp_path: Path) -> None:
    with StandInLLM(pass_rate=1.0) as llm:
        llm.configure(evidence_miss_rate=0.2, rule_break_rate=0.3)
        result = build(_config(CorpusSettings(path=str(corpus)), llm), tmp_path / "run", progress=False)
        drafted = {entry["reply"]: entry["kind"] for entry in llm.log if entry["prompt"] == "generation"}
        critiqued = _critiqued(llm)
    candidates = _rows(tmp_path / "run" / "candidates")
    broken = Counter()
    for row in candidates:
        kind = drafted[row["generation_raw"]]
        if kind in RULE_REASONS:
            broken[kind] += 1
            assert (row["status"], row["reason"]) == ("rejected", RULE_REASONS[kind]), row["question"]
            assert critiqued[row["question"]] == 0  # rejected before any critic: no call
            assert row["standalone_raw"] is row["groundedness_raw"] is None
        else:
            assert row["reason"] not in RULE_REASONS.values()
            assert critiqued[row["question"]] > 0
    assert set(broken) == set(RULE_REASONS)  # every kind of broken draft was really sent
    funnel = result.summary.model_dump(mode="json")["funnel"]
    assert funnel["checks_rejected"] == dict(sorted(Counter(RULE_REASONS[k] for k in broken.elements()).items()))
    assert result.summary.model_dump(mode="json")["profile"]["checks"] == funnel["checks_rejected"]

    kept = _rows(tmp_path / "run" / "dataset")
    assert kept
    for row in kept:
        text = (corpus / row["source_doc"]).read_text(encoding="utf-8")
        assert row["evidence_match"] == "quoted" and row["evidence_quote"]
        assert text[row["evidence_start"] : row["evidence_end"]] == row["evidence_quote"]
        assert row["start_index"] <= row["evidence_start"] < row["evidence_end"] <= row["end_index"]


def test_replies_without_the_evidence_line_still_build_and_are_checked(corpus: Path, tmp_path: Path) -> None:
    # The generation prompt as it was before it asked for the evidence sentence.
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    text = load_prompt("qa_generation").text
    older = "\n".join(line for line in text.splitlines() if "evidence" not in line.lower())
    (prompts / "qa_generation.txt").write_text(older, encoding="utf-8")
    with StandInLLM(pass_rate=1.0) as llm:
        llm.configure(rule_break_rate=0.3)
        config = _config(CorpusSettings(path=str(corpus)), llm, prompts_dir=str(prompts))
        build(config, tmp_path / "run", progress=False)
        critiqued = _critiqued(llm)
        replies = [entry["reply"] for entry in llm.log if entry["prompt"] == "generation"]
    assert replies and not any("Evidence:" in reply for reply in replies)
    candidates = _rows(tmp_path / "run" / "candidates")
    reasons = Counter(row["reason"] for row in candidates)
    assert reasons[SOURCE_POINTING] and reasons[ANSWER_IN_QUESTION] and reasons[ANSWER_NOT_GROUNDED]
    # The stand-in's answer is its chunk's first sentence: found by its words, and placed.
    kept = [row for row in candidates if row["status"] == "kept"]
    assert kept
    for row in kept:
        assert row["evidence_quote"] is None and row["evidence_match"] == "answer_words"
        text = (corpus / row["source_doc"]).read_text(encoding="utf-8")
        assert text[row["evidence_start"] : row["evidence_end"]] == row["answer"]
    for row in candidates:
        if row["reason"] in {SOURCE_POINTING, ANSWER_IN_QUESTION, ANSWER_NOT_GROUNDED}:
            assert critiqued[row["question"]] == 0


def test_the_reviewed_drafts_recorded_replies_build_and_the_checks_apply(reference_data: Path, tmp_path: Path) -> None:
    reviewed = reference_data / "gitdoc_drafts_reviewed.jsonl"
    lines = [json.loads(line) for line in reviewed.read_text(encoding="utf-8").splitlines() if line.strip()]
    corpus = tmp_path / "reviewed"
    Dataset.from_dict({"text": [r["chunk"] for r in lines], "source": [r["id"] for r in lines]}).save_to_disk(
        str(corpus)
    )
    recorded = {recorded_key(neutralize(r["chunk"])): r["generation_raw"] for r in lines}
    with StandInLLM(pass_rate=1.0) as llm:
        llm.configure(recorded_drafts=recorded)
        config = _config(
            CorpusSettings(hf_dataset=str(corpus), source_column="source"),
            llm,
            chunking={"chunk_size": 2000, "chunk_overlap": 0},
            n_generations=None,
        )
        build(config, tmp_path / "run", progress=False)
        formats = Counter(entry["format"] for entry in llm.log if entry["prompt"] == "generation")
        critiqued = _critiqued(llm)
    assert formats == {"recorded": len(lines)}  # every reply was the recorded one
    by_id = {draft.id: draft for draft in read_reviewed(reviewed)}
    candidates = _rows(tmp_path / "run" / "candidates")
    assert len(candidates) == len(lines)
    # The build's order: every free check on by default, then the evidence check.
    expected_reasons = {check.name: check.reason for check in FREE_CHECKS if check.default_on}
    expected_reasons["evidence"] = EVIDENCE_NOT_FOUND
    rejected = 0
    for row in candidates:
        draft = by_id[row["source_doc"]]
        assert row["evidence_quote"] is None  # the recorded replies have no evidence line
        verdicts = rejections(draft)
        # The build's reason is the first check that rejects, in the build's order.
        first = next((name for name in expected_reasons if verdicts[name]), None)
        if first is None:
            assert row["reason"] not in expected_reasons.values()
            assert critiqued[row["question"]] > 0
        else:
            rejected += 1
            assert row["reason"] == expected_reasons[first], (row["question"], row["reason"])
            assert critiqued[row["question"]] == 0
    assert rejected >= 5
