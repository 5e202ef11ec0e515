"""Multi-hop drafts composed from a factoid of each passage (`qagen.generation.compose`), through builds
against the stand-in server: each part is the factoid's own draft of its passage, a record of its own
that no run pays for twice; a part that fails, that a free check rejects or (under checks vetting) that
the factoid's `supported` critic rejects ends the draft before the composing call; the composed draft
carries its parts; the estimate and the summary count every call."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from datasets import load_from_disk

from qagen.cli.app import main
from qagen.config import BuildConfig, ChunkSettings, CorpusSettings
from qagen.failures import Failure, FailureKind
from qagen.generation.checks.precheck import precheck
from qagen.generation.compose import judge_parts
from qagen.generation.critique import Drafted
from qagen.generation.pipeline import build
from qagen.generation.tasks import BuildTasks
from qagen.llm.backends import ModelSettings
from qagen.question_types import QUESTION_TYPES
from qagen.records import Chunk, Critique, Draft, Passages
from standins.llm.outcomes import MULTI_HOP_MARK, unit_interval
from standins.llm.replies import MISSING_EVIDENCE, recorded_key

FACTOID_TEMPLATE = "Factoid question: (your"
COMPOSE_TEMPLATE = "Multi-hop question: (your"
SUPPORTED = "Is the proposed answer correct, and fully supported by the passage?"
"""The line of the `supported` critic's prompt."""


def _no_to_parts(share: float) -> Callable[[str, str], int]:
    """A score policy: `supported` says No to the `share` of part questions (a factoid's; by hash), and
    every critic yes to everything else."""

    def policy(criterion: str, question: str) -> int:
        return 1 if criterion == "supported" and _rejected_part(question, share) else 5

    return policy


def _rejected_part(question: str, share: float) -> bool:
    return MULTI_HOP_MARK not in question and unit_interval("part", question) < share


def _config(corpus: Path, llm: Any, **settings: Any) -> BuildConfig:
    model = ModelSettings(spec="openai:stand-in", base_url=llm.base_url)
    return BuildConfig(
        corpus=CorpusSettings(path=str(corpus)),
        chunking=ChunkSettings(chunk_size=400, chunk_overlap=40),
        n_generations=settings.pop("n_generations", 8),
        question_types=settings.pop("question_types", {"multi_hop": 100}),
        generator=model,
        critic=model,
        dedup_embeddings=None,
        **settings,
    )


def _drafts(run: Path) -> dict[str, Draft]:
    """The run's draft records by id (the last line of an id, as the run reads them)."""
    lines = (run / "drafts.jsonl").read_text(encoding="utf-8").splitlines()
    return {draft.id: draft for draft in (Draft.model_validate_json(line) for line in lines)}


def _prompts(llm: Any, template: str) -> list[str]:
    """The drafting prompts the stand-in was sent whose answer template is `template`."""
    return [entry["messages"] for entry in llm.log if entry.get("messages") and template in entry["messages"]]


def test_a_multi_hop_draft_is_composed_from_the_factoid_of_each_of_its_passages(
    corpus: Path, llm: Any, tmp_path: Path
) -> None:
    llm.configure(pass_rate=1.0, logprobs=True, log_prompts=True)
    run = tmp_path / "run"
    config = _config(corpus, llm)
    result = build(config, run, progress=False)
    rows = list(load_from_disk(str(run / "candidates")))
    drafts = _drafts(run)
    factoid = BuildTasks.for_config(config).types["multi_hop"].compose
    assert factoid is not None
    composed = [drafts[row["id"]] for row in rows]
    assert len(composed) == 8 and result.summary.funnel.kept > 0
    for row, draft in zip(rows, composed, strict=True):
        # Each part is the factoid draft of its passage, keyed as the factoid type keys it, stored on its own.
        chunks = [Chunk(id=i, source=s, text=t, start_index=a, end_index=b) for i, s, t, a, b in zip(
            row["chunk_ids"], row["source_docs"], row["contexts"], row["start_indices"], row["end_indices"], strict=True
        )]  # fmt: skip
        item = Passages(question_type="multi_hop", chunks=tuple(chunks))
        assert [part.id for part in draft.parts] == list(factoid.part_keys(item))
        assert all(drafts[part.id] == part and not part.parts for part in draft.parts)
        assert [part.chunk_id for part in draft.parts] == row["chunk_ids"]
        # Its evidence: the parts' sentences, one a line; its answer the parts' answers, each a sentence, not
        # what the composing reply says (the stand-in writes an answer of its own there).
        assert draft.evidence == "\n".join(part.evidence or "" for part in draft.parts) == row["evidence_quote"]
        sentences = [(part.answer or "").rstrip(".") + "." for part in draft.parts]
        assert row["answer"] == " ".join(sentences)
        assert row["generation_raw"] == draft.raw and draft.raw.startswith("Multi-hop question:")
    # The composing prompt shows the parts' questions and answers and the documents, never the passages.
    composing = _prompts(llm, COMPOSE_TEMPLATE)
    assert len(composing) == len(composed)
    for draft in composed:
        (prompt,) = [text for text in composing if all(part.question in text for part in draft.parts)]
        assert all(part.answer in prompt for part in draft.parts)
        assert not any(row["contexts"][0] in prompt for row in rows)
    # Every drafting call, the parts' and the composing ones, is paid once and counted in the summary.
    parts = {part.id for draft in composed for part in draft.parts}
    assert len(_prompts(llm, FACTOID_TEMPLATE)) == len(parts)
    assert result.summary.usage.generation.calls == len(parts) + len(composed)
    assert max(llm.requests_by_body().values()) == 1
    calls = len(llm.log)
    build(config, run, progress=False)
    assert len(llm.log) == calls  # a rerun pays for nothing


def test_a_part_a_free_check_rejects_ends_its_draft_before_the_composing_call(
    corpus: Path, llm: Any, tmp_path: Path
) -> None:
    # The stand-in quotes a sentence no chunk holds, with an answer no chunk holds, for a share of passages.
    llm.configure(pass_rate=1.0, logprobs=True, log_prompts=True, evidence_miss_rate=0.4)
    run = tmp_path / "run"
    result = build(_config(corpus, llm, n_generations=12), run, progress=False)
    rows = list(load_from_disk(str(run / "candidates")))
    ended = [row for row in rows if row["reason"] == "evidence_not_found"]
    assert ended and len(ended) < len(rows)
    drafts = _drafts(run)
    for row in ended:
        # Rejected with the part's reason and shown with its reply; no composed draft, no critic.
        assert row["id"] not in drafts and row["question"] is None and row["status"] == "rejected"
        assert MISSING_EVIDENCE in row["generation_raw"] and row["evidence_quote"] == MISSING_EVIDENCE
        assert not any(row["generation_raw"] in text for text in _prompts(llm, COMPOSE_TEMPLATE))
    assert len(_prompts(llm, COMPOSE_TEMPLATE)) == len(rows) - len(ended)
    assert result.summary.funnel.checks_rejected["evidence_not_found"] == len(ended)
    assert result.summary.question_types["multi_hop"].rejected_by["evidence_not_found"] == len(ended)
    assert result.summary.funnel.drafted == len(rows)
    # The check decides again on every run: without it, the parts stored are composed, and nothing else is paid.
    calls = len(_prompts(llm, FACTOID_TEMPLATE))
    again = build(_config(corpus, llm, n_generations=12, check_evidence=False), run, progress=False)
    assert len(_prompts(llm, FACTOID_TEMPLATE)) == calls
    assert again.summary.funnel.checks_rejected.get("evidence_not_found", 0) == 0


def test_a_part_that_cannot_be_read_fails_its_draft_with_its_reason(corpus: Path, llm: Any, tmp_path: Path) -> None:
    first = build(_config(corpus, llm, n_generations=4), tmp_path / "first", progress=False)
    assert first.summary.funnel.generation_failed == {}
    broken = next(iter(load_from_disk(str(tmp_path / "first" / "candidates"))))["contexts"][1]
    llm.configure(
        recorded_drafts={recorded_key(broken): "Sorry, nothing here to ask about."}, log_prompts=True, pass_rate=1.0
    )
    run = tmp_path / "run"
    result = build(_config(corpus, llm, n_generations=4), run, progress=False)
    failed = [row for row in load_from_disk(str(run / "candidates")) if row["status"] == "failed"]
    assert failed and all(broken in row["contexts"] for row in failed)
    for row in failed:
        assert row["reason"] == "generation:parse_failure"
        assert row["generation_raw"] == "Sorry, nothing here to ask about." and row["question"] is None
    assert result.summary.funnel.generation_failed == {"parse_failure": len(failed)}
    assert len(_prompts(llm, COMPOSE_TEMPLATE)) == 4 - len(failed)


def test_a_run_stopped_between_the_parts_and_the_composing_call_pays_for_no_part_again(
    corpus: Path, llm: Any, tmp_path: Path
) -> None:
    llm.configure(pass_rate=1.0, logprobs=True, log_prompts=True)
    run = tmp_path / "run"
    # A cap of one token: both parts go out together, then the cap stops the composing call.
    build(_config(corpus, llm, n_generations=1, max_tokens=1), run, progress=False)
    parts = list(_drafts(run).values())
    assert len(parts) == 2 and not any(draft.parts for draft in parts)
    assert len(_prompts(llm, FACTOID_TEMPLATE)) == 2 and _prompts(llm, COMPOSE_TEMPLATE) == []
    planned = CliRunner().invoke(main, _cli(llm, corpus, run, "-n", "1", "--dry-run"), catch_exceptions=False)
    assert "drafts to make          1 (already made: 0)" in planned.output
    assert "drafting calls          1\n" in planned.output  # the composing call alone, its parts stored

    result = build(_config(corpus, llm, n_generations=1), run, progress=False)
    assert len(_prompts(llm, FACTOID_TEMPLATE)) == 2 and len(_prompts(llm, COMPOSE_TEMPLATE)) == 1
    (composed,) = [draft for draft in _drafts(run).values() if draft.parts]
    # The same records (stored in the order their calls ended; the draft keeps its passages' order).
    assert sorted(composed.parts, key=lambda part: part.id) == sorted(parts, key=lambda part: part.id)
    assert result.summary.usage.generation.calls == 3


def test_a_part_supported_rejects_ends_its_draft_before_the_composing_call(
    corpus: Path, llm: Any, tmp_path: Path
) -> None:
    llm.configure(score_policy=_no_to_parts(0.3), logprobs=True, log_prompts=True)
    run = tmp_path / "run"
    result = build(_config(corpus, llm, n_generations=12), run, progress=False)
    rows = list(load_from_disk(str(run / "candidates")))
    drafts = _drafts(run)
    ended = [row for row in rows if row["reason"].startswith("unsupported_answer (supported P(yes)=")]
    assert ended and len(ended) < len(rows)
    composing = _prompts(llm, COMPOSE_TEMPLATE)
    assert len(composing) == len(rows) - len(ended)
    for row in ended:
        # Rejected with the part's verdict and shown with its reply; no composed draft, no critic of its own.
        assert row["id"] not in drafts and row["question"] is None and row["status"] == "rejected"
        (part,) = [draft for draft in drafts.values() if draft.raw == row["generation_raw"]]
        assert not part.parts and _rejected_part(part.question or "", 0.3)
        which = row["chunk_ids"].index(part.chunk_id) + 1
        assert row["reason"].endswith(f" in part {which}")
        assert row["evidence_quote"] == part.evidence
        assert all(critic["score"] is None and critic["raw"] is None for critic in row["extra_critics"])
        assert not any(part.question in text for text in composing)
    for row in rows:
        if row not in ended:  # both parts said yes: composed, and vetted as a multi-hop draft
            assert row["id"] in drafts and drafts[row["id"]].parts and row["question"]
            assert not any(_rejected_part(part.question or "", 0.3) for part in drafts[row["id"]].parts)
    # Counted as the supported critic's rejections, once a draft, never as a free check's.
    assert result.summary.funnel.rejected_by["supported"] == len(ended)
    assert result.summary.question_types["multi_hop"].rejected_by["unsupported_answer"] == len(ended)
    assert "unsupported_answer" not in result.summary.funnel.checks_rejected
    assert max(llm.requests_by_body().values()) == 1
    calls = len(llm.log)
    build(_config(corpus, llm, n_generations=12), run, progress=False)
    assert len(llm.log) == calls  # a rerun pays for nothing


def test_a_draft_whose_two_parts_supported_rejects_is_counted_once(corpus: Path, llm: Any, tmp_path: Path) -> None:
    llm.configure(score_policy=_no_to_parts(1.0), logprobs=True, log_prompts=True)
    run = tmp_path / "run"
    result = build(_config(corpus, llm, n_generations=4), run, progress=False)
    rows = list(load_from_disk(str(run / "candidates")))
    assert len(rows) == 4 and all(row["reason"].startswith("unsupported_answer (") for row in rows)
    assert _prompts(llm, COMPOSE_TEMPLATE) == []
    parts = _drafts(run)  # every draft stored is a part: none was composed
    assert not any(draft.parts for draft in parts.values())
    # Both parts of each draft asked together, each once (a chunk two drafts share: its part once).
    assert len(_prompts(llm, SUPPORTED)) == len(parts) >= 4
    funnel = result.summary.funnel
    assert funnel.rejected == 4 and funnel.rejected_by["supported"] == 4 and funnel.drafted == 4
    assert result.summary.question_types["multi_hop"].rejected_by == {"unsupported_answer": 4}
    assert result.summary.usage.critique.calls == len(parts)


def test_under_the_cookbooks_vetting_the_parts_are_not_asked_a_critic(corpus: Path, llm: Any, tmp_path: Path) -> None:
    llm.configure(score_policy=_no_to_parts(1.0), logprobs=True, log_prompts=True)
    config = _config(corpus, llm, n_generations=4, vetting="cookbook")
    assert BuildTasks.for_config(config).types["multi_hop"].part_critics == ()
    result = build(config, tmp_path / "run", progress=False)
    assert _prompts(llm, SUPPORTED) == []
    assert len(_prompts(llm, COMPOSE_TEMPLATE)) == 4 and result.summary.funnel.kept == 4


def test_a_part_is_asked_supported_as_a_factoid_build_asks_it(tmp_path: Path) -> None:
    """The same task, so the same record: a build that also drafts the chunk's factoid pays for it once."""
    config = BuildConfig(corpus=CorpusSettings(path=str(tmp_path)), question_types={"multi_hop": 100})
    mixed = config.model_copy(update={"question_types": {"factoid": 50, "multi_hop": 50}})
    factoids = config.model_copy(update={"question_types": {"factoid": 100}})
    (alone,) = BuildTasks.for_config(config).types["multi_hop"].part_critics
    mixed_tasks = BuildTasks.for_config(mixed)
    assert mixed_tasks.types["multi_hop"].part_critics == (mixed_tasks.types["factoid"].critic("supported"),)
    factoid_critic = BuildTasks.for_config(factoids).types["factoid"].critic("supported")
    assert factoid_critic is not None and alone.criterion == "supported"
    chunk = Chunk(id="a", source="zlib.rst", text="The default level is 6.", start_index=0, end_index=23)
    drafted = Drafted(_part("The default level is 6.", "6", "a"), Passages.of(chunk))
    assert alone.key(drafted) == factoid_critic.key(drafted) and alone.request(drafted) == factoid_critic.request(
        drafted
    )


def test_a_run_stopped_between_the_parts_critics_and_the_composing_call_pays_for_no_verdict_again(
    corpus: Path, llm: Any, tmp_path: Path
) -> None:
    llm.configure(pass_rate=1.0, logprobs=True, log_prompts=True)
    run = tmp_path / "run"
    build(_config(corpus, llm, n_generations=1, max_tokens=1), run, progress=False)  # the parts alone
    parts = _drafts(run)
    assert len(parts) == 2 and _prompts(llm, SUPPORTED) == []
    planned = CliRunner().invoke(main, _cli(llm, corpus, run, "-n", "1", "--dry-run"), catch_exceptions=False)
    assert "drafting calls          1\n" in planned.output  # the composing call alone, its parts stored
    multi_hop = BuildTasks.for_config(_config(corpus, llm, n_generations=1)).types["multi_hop"]
    expected = 2 + sum(0.8**i for i in range(len(multi_hop.critics)))  # both parts' verdicts, then its critics
    assert f"critic calls (expected) {expected:,.0f}\n" in planned.output

    # A cap just over what the parts cost: their verdicts go out together, then it stops the composing call.
    spent = sum(draft.usage.input_tokens + draft.usage.output_tokens for draft in parts.values())
    build(_config(corpus, llm, n_generations=1, max_tokens=spent + 1), run, progress=False)
    assert len(_prompts(llm, SUPPORTED)) == 2 and _prompts(llm, COMPOSE_TEMPLATE) == []
    assert (run / "critiques.jsonl").read_text(encoding="utf-8").count("\n") == 2
    planned = CliRunner().invoke(main, _cli(llm, corpus, run, "-n", "1", "--dry-run"), catch_exceptions=False)
    assert f"critic calls (expected) {expected - 2:,.0f}\n" in planned.output

    result = build(_config(corpus, llm, n_generations=1), run, progress=False)
    assert len(_prompts(llm, FACTOID_TEMPLATE)) == 2 and len(_prompts(llm, COMPOSE_TEMPLATE)) == 1
    part_verdicts = [text for text in _prompts(llm, SUPPORTED) if MULTI_HOP_MARK not in text]
    assert len(part_verdicts) == 2 and max(llm.requests_by_body().values()) == 1
    assert result.summary.funnel.kept == 1


def _cli(llm: Any, corpus: Path, out: Path, *extra: str) -> list[str]:
    return [
        "build", str(corpus), "--out", str(out), "--generator-model", "openai:stand-in", "--base-url", llm.base_url,
        "--chunk-size", "400", "--chunk-overlap", "40", "--question-types", "multi_hop", "-q", *extra,
    ]  # fmt: skip


def test_the_dry_run_counts_a_factoid_of_each_passage_and_the_composing_call(
    corpus: Path, llm: Any, tmp_path: Path
) -> None:
    planned = CliRunner().invoke(main, _cli(llm, corpus, tmp_path / "run", "-n", "4", "--dry-run"))
    assert planned.exit_code == 0, planned.output
    assert "drafts to make          4 (already made: 0)" in planned.output
    assert "drafting calls          12 (a multi-hop draft: a factoid of each passage, then the call" in planned.output
    # Each part's supported verdict, then the composed draft's critics, each asked of a share of those before.
    multi_hop = BuildTasks.for_config(_config(corpus, llm)).types["multi_hop"]
    expected = 4 * (2 + sum(0.8**i for i in range(len(multi_hop.critics))))
    assert f"critic calls (expected) {expected:,.0f}\n" in planned.output
    cookbook = CliRunner().invoke(
        main, [*_cli(llm, corpus, tmp_path / "c", "-n", "4", "--dry-run"), "--vetting", "cookbook"]
    )
    cookbook_critics = BuildTasks.for_config(_config(corpus, llm, vetting="cookbook")).types["multi_hop"].critics
    assert f"critic calls (expected) {4 * sum(0.8**i for i in range(len(cookbook_critics))):,.0f}\n" in cookbook.output
    factoids = [*_cli(llm, corpus, tmp_path / "f", "-n", "4", "--dry-run"), "--question-types", "factoid"]
    factoids_planned = CliRunner().invoke(main, factoids)
    assert "drafting calls          4\n" in factoids_planned.output


def _part(evidence: str, answer: str, chunk: str) -> Draft:
    return Draft(id=f"p-{chunk}", chunk_id=chunk, model="m", prompt_hash="h", question=f"Which setting is {chunk}?",
                 answer=answer, evidence=evidence)  # fmt: skip


def test_each_parts_evidence_is_looked_for_in_its_own_passage_and_the_answer_may_be_as_long_as_its_parts(
    tmp_path: Path,
) -> None:
    config = BuildConfig(corpus=CorpusSettings(path=str(tmp_path)), max_answer_chars=40)
    first = Chunk(id="a", source="zlib.rst", text="The default level is 6, a compromise.", start_index=0, end_index=38)
    second = Chunk(id="b", source="zlib.rst", text="wbits sets the window size.", start_index=0, end_index=27)
    item = Passages(question_type="multi_hop", chunks=(first, second))
    parts = (
        _part("The default level is 6", "level 6", "a"),
        _part("wbits sets the window size.", "the window size", "b"),
    )
    answer = "Level 6 by default; wbits sets the window size."  # longer than 40, within 2 x 40
    composed = Draft(id="c", chunk_id="a", model="m", prompt_hash="h", question="How do zlib's level and wbits "
                     "differ?", answer=answer, evidence="x", parts=parts)  # fmt: skip
    assert precheck(composed, item, config).reason is None
    assert judge_parts(parts, item, config, QUESTION_TYPES.get("factoid")).composable
    # The second part's sentence quoted from the first passage: found in neither part's own passage.
    swapped = (parts[0], _part("The default level is 6, a compromise.", "a compromise", "b"))
    checked = precheck(composed.model_copy(update={"parts": swapped}), item, config)
    assert checked.reason == "evidence_not_found" and checked.passage == second
    verdict = judge_parts(swapped, item, config, QUESTION_TYPES.get("factoid"))
    assert verdict.checked is not None and verdict.checked.reason == "evidence_not_found"
    assert verdict.ending == swapped[1] and verdict.critique is None and not verdict.composable
    too_long = composed.model_copy(update={"answer": "x" * 81})
    assert precheck(too_long, item, config).reason == "answer_too_long"
    assert judge_parts((parts[0], None), item, config, QUESTION_TYPES.get("factoid")).missing


def _supported(score: int | None, failure: Failure | None = None) -> Critique:
    return Critique(id=f"s{score}", draft_id="p", criterion="supported", model="m", prompt_hash="h", score=score,
                    failure=failure, raw="Yes" if score == 5 else "No")  # fmt: skip


def test_of_the_parts_verdicts_a_rejection_outranks_a_failed_call_which_outranks_one_not_stored(
    tmp_path: Path,
) -> None:
    config = BuildConfig(corpus=CorpusSettings(path=str(tmp_path)))
    first = Chunk(id="a", source="zlib.rst", text="The default level is 6, a compromise.", start_index=0, end_index=38)
    second = Chunk(id="b", source="zlib.rst", text="wbits sets the window size.", start_index=0, end_index=27)
    item = Passages(question_type="multi_hop", chunks=(first, second))
    parts = (_part("The default level is 6", "level 6", "a"), _part("wbits sets the window size.", "window size", "b"))
    factoid = QUESTION_TYPES.get("factoid")
    yes, no, failed = _supported(5), _supported(1), _supported(None, Failure.of(FailureKind.SERVER_ERROR))

    def judged(*found: Critique | None) -> Any:
        return judge_parts(parts, item, config, factoid, lambda drafted: [{"supported": v} for v in found])

    assert judged(yes, yes).composable and judge_parts(parts, item, config, factoid).composable
    rejected = judged(failed, no)
    assert rejected.ending == parts[1] and rejected.critique == no and rejected.ends and not rejected.composable
    assert rejected.checked is not None and rejected.checked.reason is None and rejected.checked.passage == second
    stopped = judged(failed, None)  # never read as a pass: the draft waits for the call to be made again
    assert stopped.ending == parts[0] and stopped.critique == failed and stopped.ends
    waiting = judged(None, yes)
    assert waiting.unvetted == ("supported",) and not waiting.ends and not waiting.composable
    assert judged(None, None).unvetted == ("supported", "supported")
    # A part a free check rejects ends the draft before its verdicts are looked up.
    swapped = (parts[0], _part("The default level is 6, a compromise.", "a compromise", "b"))
    unread = judge_parts(swapped, item, config, factoid, lambda drafted: pytest.fail("verdicts looked up"))
    assert unread.checked is not None and unread.checked.reason == "evidence_not_found" and unread.critique is None
