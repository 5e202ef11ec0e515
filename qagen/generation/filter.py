"""Turn drafts and critiques into candidate rows with a status and a reason, in sampling order."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import NamedTuple

from qagen.config import BuildConfig
from qagen.generation.critique import Drafted
from qagen.generation.dedup import NearDuplicateFilter
from qagen.generation.tasks import BuildTasks
from qagen.records import (
    CRITERIA,
    UNDECIDED_STAGES,
    CandidateRow,
    CandidateStatus,
    Chunk,
    Critique,
    DatasetRow,
    Draft,
    Funnel,
)

NOT_ASKED = "not_asked"
"""The reason of an undecided row's stage: the call was never made (`generation:not_asked`)."""


@dataclass
class _Counts:
    """The funnel's counters while the candidates are assembled; `Funnel` is the finished count."""

    requested: int | None = None
    sampled: int = 0
    drafted: int = 0
    generation_failed: Counter[str] = field(default_factory=Counter)
    critique_failed: Counter[str] = field(default_factory=Counter)
    undecided: Counter[str] = field(default_factory=Counter)
    undecided_calls: Counter[str] = field(default_factory=Counter)
    rejected: int = 0
    rejected_by: Counter[str] = field(default_factory=Counter)
    critic_calls_skipped: int = 0
    duplicates: int = 0
    too_long: int = 0
    kept: int = 0
    examples: dict[str, str] = field(default_factory=dict)

    def failed(self, counter: Counter[str], reason: str, chunk: Chunk, raw: str | None) -> None:
        """Count a failure, and keep its first case as the reason's example."""
        counter[reason] += 1
        if reason not in self.examples:
            text = " ".join((raw or "").split())
            self.examples[reason] = f"{chunk.source} (chunk {chunk.id}): {text[:200]}"

    def funnel(self) -> Funnel:
        return Funnel(
            requested=self.requested,
            sampled=self.sampled,
            drafted=self.drafted,
            # Sorted, so two runs with the same outcome write the same summary.
            generation_failed=dict(sorted(self.generation_failed.items())),
            critique_failed=dict(sorted(self.critique_failed.items())),
            undecided={stage: self.undecided[stage] for stage in UNDECIDED_STAGES},
            undecided_calls={stage: self.undecided_calls[stage] for stage in UNDECIDED_STAGES},
            rejected=self.rejected,
            # Every criterion, zeros included: a reader can index it without checking.
            rejected_by={c: self.rejected_by.get(c, 0) for c in CRITERIA},
            critic_calls_skipped=self.critic_calls_skipped,
            duplicates=self.duplicates,
            too_long=self.too_long,
            kept=self.kept,
            failure_examples=dict(sorted(self.examples.items())),
        )


@dataclass(frozen=True)
class Assembly:
    candidates: list[CandidateRow]
    kept: list[DatasetRow]
    funnel: Funnel


class _Fate(NamedTuple):
    """What became of one sampled chunk, and the critiques of its draft that were found."""

    status: CandidateStatus
    reason: str
    critiques: dict[str, Critique]


def assemble(
    sample: list[Chunk],
    drafts: dict[str, Draft],
    critiques: dict[str, Critique],
    config: BuildConfig,
    tasks: BuildTasks,
) -> Assembly:
    """Candidate rows for every sampled chunk, in sampling order (so "keep the first" is stable)."""
    counts = _Counts(requested=config.n_generations, sampled=len(sample))
    dedup = NearDuplicateFilter(config.dedup_threshold)
    candidates: list[CandidateRow] = []
    for chunk in sample:
        did = tasks.draft.key(chunk)
        draft = drafts.get(did)
        if draft is None:
            # Never asked, not failed: the next `generate` (or build) drafts it.
            fate = _Fate("undecided", f"generation:{NOT_ASKED}", {})
            counts.undecided["generation"] += 1
            counts.undecided_calls["generation"] += 1
        elif not draft.ok:
            fate = _Fate("failed", f"generation:{draft.reason}", {})
            counts.failed(counts.generation_failed, draft.reason, chunk, draft.raw)
        elif (too_long := config.too_long(draft)) is not None:
            counts.drafted += 1
            counts.too_long += 1
            fate = _Fate("rejected", too_long, {})
        else:
            counts.drafted += 1
            fate = _judge(Drafted(draft, chunk), critiques, config, tasks, counts, dedup)
        candidates.append(_candidate(chunk, did, draft, fate, config, tasks))
    return Assembly(
        candidates=candidates,
        kept=[row.dataset_row() for row in candidates if row.status == "kept"],
        funnel=counts.funnel(),
    )


def _judge(
    drafted: Drafted,
    critiques: dict[str, Critique],
    config: BuildConfig,
    tasks: BuildTasks,
    counts: _Counts,
    dedup: NearDuplicateFilter,
) -> _Fate:
    """The draft's status and reason from its critiques.

    A known rejection outranks a failure, and a failure a critic never asked: a draft that passed
    every critic asked so far and needs another (the run stopped, or a lower threshold now lets
    through a score that stopped the critics before) is undecided, not failed.
    """
    draft = drafted.draft
    found: dict[str, Critique] = {}
    rejections: list[str] = []
    failures: list[tuple[str, Critique]] = []  # (`criterion:reason`, as the funnel counts them; the critique)
    missing: list[str] = []
    for critic in tasks.critics:  # in the order they are asked
        criterion = critic.criterion
        critique = critiques.get(critic.key(drafted))
        if critique is None:
            missing.append(criterion)
            continue
        found[criterion] = critique
        if not critique.ok or critique.score is None:
            failures.append((f"{criterion}:{critique.reason}", critique))
            continue
        if critique.score < config.threshold(criterion):
            rejections.append(f"{criterion}={critique.score}<{config.threshold(criterion)}")
            counts.rejected_by[criterion] += 1
    if rejections:
        counts.rejected += 1
        counts.critic_calls_skipped += len(missing)
        skipped = f" ({', '.join(missing)} not asked)" if missing else ""
        return _Fate("rejected", "; ".join(rejections) + skipped, found)
    if failures:
        failure, critique = failures[0]
        counts.failed(counts.critique_failed, failure, drafted.chunk, critique.raw)
        return _Fate("failed", f"critique:{failure}", found)
    if missing:
        counts.undecided["critique"] += 1
        counts.undecided_calls["critique"] += len(missing)
        return _Fate("undecided", "; ".join(f"critique:{criterion}:{NOT_ASKED}" for criterion in missing), found)
    earlier = dedup.first_seen(draft.question or "", draft.id)
    if earlier is not None:
        counts.duplicates += 1
        return _Fate("rejected", f"duplicate_of:{earlier}", found)
    counts.kept += 1
    return _Fate("kept", "", found)


def _candidate(
    chunk: Chunk,
    did: str,
    draft: Draft | None,
    fate: _Fate,
    config: BuildConfig,
    tasks: BuildTasks,
) -> CandidateRow:
    # A failed draft's reply is kept (it shows what went wrong); its question and answer are not.
    usable = draft if draft is not None and draft.ok else None
    found = fate.critiques
    grounded, relevant, standalone = found.get("groundedness"), found.get("relevance"), found.get("standalone")
    return CandidateRow(
        context=chunk.text,
        question=usable.question if usable else None,
        answer=usable.answer if usable else None,
        source_doc=chunk.source,
        groundedness_score=_score(grounded),
        groundedness_eval=grounded.rationale if grounded else None,
        relevance_score=_score(relevant),
        relevance_eval=relevant.rationale if relevant else None,
        standalone_score=_score(standalone),
        standalone_eval=standalone.rationale if standalone else None,
        id=did,
        chunk_id=chunk.id,
        start_index=chunk.start_index,
        end_index=chunk.end_index,
        generator_model=config.generator.spec,
        critic_model=config.critic.spec,
        qa_prompt_hash=tasks.draft.prompt.hash,
        groundedness_prompt_hash=tasks.critic("groundedness").prompt.hash,
        relevance_prompt_hash=tasks.critic("relevance").prompt.hash,
        standalone_prompt_hash=tasks.critic("standalone").prompt.hash,
        status=fate.status,
        reason=fate.reason,
        generation_raw=draft.raw if draft else None,
        groundedness_raw=grounded.raw if grounded else None,
        relevance_raw=relevant.raw if relevant else None,
        standalone_raw=standalone.raw if standalone else None,
    )


def _score(critique: Critique | None) -> int | None:
    # A failed critique's score is not shown even when one was read: the critique does not count.
    return critique.score if critique is not None and critique.ok else None
