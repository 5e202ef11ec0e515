"""Turn drafts and critiques into candidate rows with a status and a reason, in sampling order."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol, TypeVar

from qagen.config import BuildConfig
from qagen.generation.checks.easiness import ChunkRanker, copied_share
from qagen.generation.checks.evidence import EvidencePlacement
from qagen.generation.checks.precheck import precheck
from qagen.generation.critique import Drafted
from qagen.generation.dedup import NearDuplicateFilter
from qagen.generation.semantic_dedup import SemanticDuplicates
from qagen.generation.tasks import BuildTasks
from qagen.records import (
    UNDECIDED_STAGES,
    CandidateRow,
    CandidateStatus,
    Chunk,
    CriticReply,
    Critique,
    DatasetRow,
    Draft,
    Funnel,
)

RecordT_co = TypeVar("RecordT_co", covariant=True)

NOT_ASKED = "not_asked"
"""The reason of an undecided row's stage: the call was never made (`generation:not_asked`)."""


@dataclass
class _Counts:
    """The funnel's counters while the candidates are assembled; `Funnel` is the finished count."""

    critics: tuple[str, ...] = ()
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
    semantic_duplicates: int = 0
    too_long: int = 0
    checks_rejected: Counter[str] = field(default_factory=Counter)
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
            # Every critic, zeros included: a reader can index it without checking.
            rejected_by={c: self.rejected_by.get(c, 0) for c in self.critics},
            critic_calls_skipped=self.critic_calls_skipped,
            duplicates=self.duplicates,
            too_long=self.too_long,
            checks_rejected=dict(sorted(self.checks_rejected.items())),
            semantic_duplicates=self.semantic_duplicates,
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


class _Quality(NamedTuple):
    """What the checks that cost no call found of a usable draft (`checks.precheck`, `checks.easiness`)."""

    evidence: EvidencePlacement | None
    copied_share: float | None
    bm25_rank: int | None


_NOT_MEASURED = _Quality(None, None, None)

TOO_LONG_REASONS = frozenset({"question_too_long", "answer_too_long"})
"""The precheck reasons counted as `too_long` in the funnel; the others go to `checks_rejected`."""


class Records(Protocol[RecordT_co]):
    """Records by id: a dict, or an index that reads them from the log when asked."""

    def get(self, key: str, /) -> RecordT_co | None: ...


class Assembler:
    """Candidate rows one sampled chunk at a time, in sampling order (so "keep the first" is
    stable), counting the funnel as it goes; `funnel()` once every chunk has had its row."""

    def __init__(
        self,
        config: BuildConfig,
        tasks: BuildTasks,
        sampled: int,
        *,
        ranker: ChunkRanker | None = None,
        semantic: SemanticDuplicates | None = None,
    ) -> None:
        """`ranker`: BM25 over the corpus, for each draft's `bm25_rank` (None: not ranked);
        `semantic`: the questions' embeddings, for duplicates by meaning (None: the lexical rule only)."""
        self.config = config
        self.tasks = tasks
        critics = tuple(spec.name for spec in config.critic_specs())
        self.counts = _Counts(critics=critics, requested=config.n_generations, sampled=sampled)
        self.dedup = NearDuplicateFilter(config.dedup_threshold)
        self.ranker = ranker
        self.semantic = semantic
        self.last_check_reason: str | None = None
        """The free check that rejected the last candidate's draft (None: none did), for the profile."""

    def candidate(self, chunk: Chunk, drafts: Records[Draft], critiques: Records[Critique]) -> CandidateRow:
        config, tasks, counts = self.config, self.tasks, self.counts
        did = tasks.draft.key(chunk)
        draft = drafts.get(did)
        quality = _NOT_MEASURED
        self.last_check_reason = None
        if draft is None:
            # Never asked, not failed: the next `generate` (or build) drafts it.
            fate = _Fate("undecided", f"generation:{NOT_ASKED}", {})
            counts.undecided["generation"] += 1
            counts.undecided_calls["generation"] += 1
        elif not draft.ok:
            fate = _Fate("failed", f"generation:{draft.reason}", {})
            counts.failed(counts.generation_failed, draft.reason, chunk, draft.raw)
        else:
            counts.drafted += 1
            checked = precheck(draft, chunk, config)
            quality = self._quality(draft, chunk, checked.evidence)
            if checked.reason in TOO_LONG_REASONS:
                counts.too_long += 1
                fate = _Fate("rejected", checked.reason, {})
            elif checked.reason is not None:
                counts.checks_rejected[checked.reason] += 1
                self.last_check_reason = checked.reason
                fate = _Fate("rejected", checked.reason, {})
            else:
                fate = _judge(Drafted(draft, chunk), critiques, config, tasks, counts, self.dedup, self.semantic)
        return _candidate(chunk, did, draft, fate, config, tasks, quality)

    def _quality(self, draft: Draft, chunk: Chunk, evidence: EvidencePlacement | None) -> _Quality:
        question = draft.question or ""
        rank = self.ranker.rank(question, chunk.id) if self.ranker is not None else None
        return _Quality(evidence, copied_share(question, chunk.text), rank)

    def funnel(self) -> Funnel:
        return self.counts.funnel()


def assemble(
    sample: list[Chunk],
    drafts: Records[Draft],
    critiques: Records[Critique],
    config: BuildConfig,
    tasks: BuildTasks,
    *,
    ranker: ChunkRanker | None = None,
    semantic: SemanticDuplicates | None = None,
) -> Assembly:
    """Candidate rows for every sampled chunk, in sampling order, all in memory (`Assembler` makes
    them one at a time; `ranker` and `semantic` as it takes them)."""
    assembler = Assembler(config, tasks, len(sample), ranker=ranker, semantic=semantic)
    candidates = [assembler.candidate(chunk, drafts, critiques) for chunk in sample]
    return Assembly(
        candidates=candidates,
        kept=[row.dataset_row() for row in candidates if row.status == "kept"],
        funnel=assembler.funnel(),
    )


def _judge(
    drafted: Drafted,
    critiques: Records[Critique],
    config: BuildConfig,
    tasks: BuildTasks,
    counts: _Counts,
    dedup: NearDuplicateFilter,
    semantic: SemanticDuplicates | None,
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
    question = draft.question or ""
    earlier = dedup.match(question)
    if earlier is not None:
        counts.duplicates += 1
        return _Fate("rejected", f"duplicate_of:{earlier}", found)
    if semantic is not None and (earlier := semantic.match(draft.id)) is not None:
        counts.semantic_duplicates += 1
        return _Fate("rejected", f"same_meaning_as:{earlier}", found)
    dedup.keep(question, draft.id)
    if semantic is not None:
        semantic.keep(draft.id)
    counts.kept += 1
    return _Fate("kept", "", found)


def _candidate(
    chunk: Chunk,
    did: str,
    draft: Draft | None,
    fate: _Fate,
    config: BuildConfig,
    tasks: BuildTasks,
    quality: _Quality,
) -> CandidateRow:
    # A failed draft's reply is kept (it shows what went wrong); its question and answer are not.
    usable = draft if draft is not None and draft.ok else None
    found = fate.critiques
    columns: dict[str, object] = {}
    extra: list[CriticReply] = []
    for spec in config.critic_specs():
        critique, prompt_hash = found.get(spec.name), tasks.critic(spec.name).prompt.hash
        score = _score(critique)
        rationale, raw = (critique.rationale, critique.raw) if critique else (None, None)
        if spec.own_columns:
            columns |= {
                f"{spec.name}_score": score,
                f"{spec.name}_eval": rationale,
                f"{spec.name}_prompt_hash": prompt_hash,
                f"{spec.name}_raw": raw,
            }
        else:
            extra.append(CriticReply(name=spec.name, score=score, eval=rationale, prompt_hash=prompt_hash, raw=raw))
    return CandidateRow.model_validate(
        {
            "context": chunk.text,
            "question": usable.question if usable else None,
            "answer": usable.answer if usable else None,
            "source_doc": chunk.source,
            "id": did,
            "chunk_id": chunk.id,
            "start_index": chunk.start_index,
            "end_index": chunk.end_index,
            "generator_model": config.generator.spec,
            "critic_model": config.critic.spec,
            "qa_prompt_hash": tasks.draft.prompt.hash,
            "status": fate.status,
            "reason": fate.reason,
            "generation_raw": draft.raw if draft else None,
            "evidence_quote": usable.evidence if usable else None,
            "evidence_start": _in_document(chunk, evidence.start) if (evidence := quality.evidence) else None,
            "evidence_end": _in_document(chunk, evidence.end) if evidence else None,
            "evidence_match": evidence.match if evidence else None,
            "copied_share": None if quality.copied_share is None else round(quality.copied_share, 4),
            "bm25_rank": quality.bm25_rank,
            "extra_critics": tuple(extra),
            **columns,
        }
    )


def _in_document(chunk: Chunk, offset: int | None) -> int | None:
    """An offset in the chunk as an offset in its document."""
    return None if offset is None else chunk.start_index + offset


def _score(critique: Critique | None) -> int | None:
    # A failed critique's score is not shown even when one was read: the critique does not count.
    return critique.score if critique is not None and critique.ok else None
