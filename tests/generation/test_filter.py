"""What a candidate's status is when critics are missing: undecided (never asked) is not failed."""

from __future__ import annotations

from qagen.config import BuildConfig
from qagen.corpus.settings import CorpusSettings
from qagen.failures import Failure, FailureKind
from qagen.generation.critique import Drafted
from qagen.generation.filter import assemble
from qagen.generation.sample import Sample
from qagen.generation.tasks import BuildTasks
from qagen.records import Chunk, Critique, Draft, Passages

CONFIG = BuildConfig(corpus=CorpusSettings(path="docs"), n_generations=5, vetting="cookbook")  # 1-5 ratings
TASKS = BuildTasks.for_config(CONFIG)


def _chunk(number: int) -> Passages:
    text = f"Fact number {number}: the harbour of town {number} opens at {number} o'clock."
    return Passages.of(Chunk(id=f"c{number}", source="facts.txt", text=text, start_index=0, end_index=len(text)))


def _draft(item: Passages) -> Draft:
    key = TASKS.draft_key(item)
    question = f"When does the harbour of town {item.first.id} open?"
    answer = item.first.text.split("opens ")[1]  # its chunk holds it: no free check rejects it
    return Draft(
        id=key, chunk_id=item.first.id, model="m", prompt_hash="h", question=question, answer=answer, raw="raw"
    )


def _critique(drafted: Drafted, criterion: str, score: int | None, failure: FailureKind | None = None) -> Critique:
    critic = TASKS.critic(criterion)
    return Critique(
        id=critic.key(drafted),
        draft_id=drafted.draft.id,
        criterion=criterion,
        model="m",
        prompt_hash="h",
        failure=Failure.of(failure) if failure else None,
        score=score,
        raw=f"Total rating: {score}",
    )


def test_a_critic_never_asked_leaves_the_draft_undecided_and_a_rejection_or_failure_outranks_it() -> None:
    chunks = [_chunk(number) for number in range(5)]
    drafts = {_draft(chunk).id: _draft(chunk) for chunk in chunks[:4]}  # the fifth chunk has no draft yet
    drafted = [Drafted(drafts[TASKS.draft_key(chunk)], chunk) for chunk in chunks[:4]]
    critiques = [
        # 0: standalone 3 stopped the critics at threshold 4: at 3 it passes, the others were never asked.
        _critique(drafted[0], "standalone", 3),
        # 1: a rejection is known, whatever was not asked.
        _critique(drafted[1], "standalone", 2),
        # 2: a failed critic outranks the one after it that was never asked.
        _critique(drafted[2], "standalone", 5),
        _critique(drafted[2], "relevance", None, FailureKind.PARSE_FAILURE),
        # 3: every critic asked and passed.
        *(_critique(drafted[3], criterion, 4) for criterion in ("standalone", "relevance", "groundedness")),
    ]
    config = CONFIG.model_copy(update={"min_score": 3})
    result = assemble(Sample(chunks), drafts, {c.id: c for c in critiques}, config, TASKS)

    fates = [(row.status, row.reason) for row in result.candidates]
    assert fates == [
        ("undecided", "critique:relevance:not_asked; critique:groundedness:not_asked"),
        ("rejected", "standalone=2<3 (relevance, groundedness not asked)"),
        ("failed", "critique:relevance:parse_failure"),
        ("kept", ""),
        ("undecided", "generation:not_asked"),
    ]
    funnel = result.funnel
    assert funnel.critique_failed == {"relevance:parse_failure": 1}  # nothing "not_critiqued_yet"
    assert funnel.generation_failed == {}
    assert funnel.undecided == {"generation": 1, "critique": 1}
    # The calls that decide them: one draft; two critics for the first draft (at most).
    assert funnel.undecided_calls == {"generation": 1, "critique": 2}
    assert (funnel.kept, funnel.rejected, funnel.requested, funnel.sampled) == (1, 1, 5, 5)


def test_the_same_records_at_the_threshold_that_stopped_the_critics_are_a_rejection() -> None:
    chunk = _chunk(0)
    draft = _draft(chunk)
    critique = _critique(Drafted(draft, chunk), "standalone", 3)
    result = assemble(Sample([chunk]), {draft.id: draft}, {critique.id: critique}, CONFIG, TASKS)
    assert [(row.status, row.reason) for row in result.candidates] == [
        ("rejected", "standalone=3<4 (relevance, groundedness not asked)")
    ]
    assert result.funnel.undecided == {"generation": 0, "critique": 0}
