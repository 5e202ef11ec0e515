"""Turn drafts and critiques into candidate rows with a status and a reason, in sampling order,
counting the funnel as a whole and per question type."""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import NamedTuple, Protocol, TypeVar

from qagen.config import BuildConfig
from qagen.corpus.chunk_index import ChunkIndex, RankQuery
from qagen.generation.checks.easiness import shares
from qagen.generation.checks.evidence import EvidencePlacement
from qagen.generation.compose import ended_by_part
from qagen.generation.critique import Drafted
from qagen.generation.dedup import NearDuplicateFilter
from qagen.generation.sample import Sample
from qagen.generation.score import CHECK_SIGNALS, SCORE_COLUMN, Signals, predicted_keep
from qagen.generation.semantic_dedup import SemanticDuplicates
from qagen.generation.target import OVER_TARGET
from qagen.generation.tasks import BuildTasks, TypeTasks
from qagen.generation.vetting import Vetter, rejected_as, score_rejection
from qagen.records import (
    NO_TARGET_COLUMNS,
    UNDECIDED_STAGES,
    CandidateRow,
    CandidateStatus,
    Chunk,
    CriticReply,
    Critique,
    DatasetRow,
    Draft,
    Funnel,
    Passages,
    TypeFunnel,
    Verdict,
)

RecordT_co = TypeVar("RecordT_co", covariant=True)

NOT_ASKED = "not_asked"
"""The reason of an undecided row's stage: the call was never made (`generation:not_asked`)."""


@dataclass
class _TypeCounts:
    """One question type's counters (`TypeFunnel` is the finished count)."""

    share: int
    requested: int | None
    sampled: int = 0
    short: int = 0
    drafted: int = 0
    generation_failed: int = 0
    critique_failed: int = 0
    undecided: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    kept: int = 0
    copied: array[float] = field(default_factory=lambda: array("d"))

    def finished(self) -> TypeFunnel:
        return TypeFunnel(
            share=self.share,
            requested=self.requested,
            sampled=self.sampled,
            short=self.short,
            drafted=self.drafted,
            generation_failed=self.generation_failed,
            critique_failed=self.critique_failed,
            undecided=self.undecided,
            rejected=sum(self.rejected.values()),
            rejected_by=dict(sorted(self.rejected.items())),
            kept=self.kept,
            kept_copied_share=sum(self.copied) / len(self.copied) if self.copied else None,
        )


@dataclass
class _Counts:
    """The funnel's counters while the candidates are assembled; `Funnel` is the finished count."""

    vetter: Vetter
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
    decided_as_written: Counter[str] = field(default_factory=Counter)
    critic_calls_skipped: int = 0
    duplicates: int = 0
    semantic_duplicates: int = 0
    too_long: int = 0
    checks_rejected: Counter[str] = field(default_factory=Counter)
    over_target: int = 0
    kept: int = 0
    examples: dict[str, str] = field(default_factory=dict)
    types: dict[str, _TypeCounts] = field(default_factory=dict)

    def vetted(self, critique: Critique) -> Verdict | None:
        """The critique's verdict (`vetting.vet`), counting those decided by what was written for want of
        token probabilities."""
        verdict = self.vetter.vet(critique)
        # A reader that found no answer has nothing to measure; a yes/no or 1-5 verdict lacked token probabilities.
        if verdict is not None and verdict.measured_as == "written" and verdict.kind in ("yes_no", "rating"):
            self.decided_as_written[verdict.name] += 1
        return verdict

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
            decided_as_written=dict(sorted(self.decided_as_written.items())),
            critic_calls_skipped=self.critic_calls_skipped,
            duplicates=self.duplicates,
            too_long=self.too_long,
            checks_rejected=dict(sorted(self.checks_rejected.items())),
            semantic_duplicates=self.semantic_duplicates,
            over_target=self.over_target,
            kept=self.kept,
            failure_examples=dict(sorted(self.examples.items())),
        )

    def by_type(self) -> dict[str, TypeFunnel]:
        return {name: counts.finished() for name, counts in self.types.items()}


@dataclass(frozen=True)
class Assembly:
    candidates: list[CandidateRow]
    kept: list[DatasetRow]
    funnel: Funnel
    by_type: dict[str, TypeFunnel]


class _Fate(NamedTuple):
    """What became of one sampled item, and the critiques of its draft that were found with their verdicts."""

    status: CandidateStatus
    reason: str
    critiques: dict[str, Critique]
    rejected_as: tuple[str, ...] = ()
    """A rejected draft's reasons as the type's funnel counts them: each rejecting critic (or what it
    rejects as: `single_hop`), or `duplicate`."""
    verdicts: Mapping[str, Verdict] = MappingProxyType({})
    """The verdicts of the critiques found that have one (`vetting.vet`), as they decided: the row shows them."""
    predicted_keep: float | None = None
    """The combined score (`qagen.generation.score`); None when not scored."""


class _Quality(NamedTuple):
    """What the checks that cost no call found of a usable draft (`checks.precheck`, `checks.easiness`)."""

    evidence: EvidencePlacement | None
    passage: Chunk | None
    """The passage the evidence was placed in (a draft of several passages may quote any of them)."""
    copied_share: float | None
    bm25_rank: int | None
    answer_shares: Mapping[str, float | None]
    """`extractive_share` and `restated_share` (`checks.easiness.shares`), as the row shows them."""

    def in_document(self, first: Chunk, offset: int | None) -> int | None:
        """An evidence offset as an offset in the first passage's document (`source_doc`, whose offsets
        the columns give); None when the evidence is in another passage, or not placed."""
        if offset is None or self.passage is None or self.passage.id != first.id:
            return None
        return first.start_index + offset


class _Shown(NamedTuple):
    """One of the build's critics as a question type's rows show it."""

    name: str
    own_columns: tuple[str, ...] | None
    """Its own columns (`<name>_score`, `_eval`, `_measurement`, `_passed`, `_prompt_hash`, `_raw`); None: it is
    an entry of `extra_critics`."""
    prompt_hash: str | None
    """Its prompt's hash for the type; None: the type is not vetted by it."""


_OWN_COLUMNS = ("score", "eval", "measurement", "passed", "prompt_hash", "raw")
"""The columns of a critic with columns of its own, after its name (`CriticSpec.own_columns`)."""


_NOT_MEASURED = _Quality(None, None, None, None, MappingProxyType({"extractive_share": None, "restated_share": None}))

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
        sample: Sample,
        *,
        ranks: Sequence[int | None] | None = None,
        semantic: SemanticDuplicates | None = None,
        chosen: frozenset[str] | None = None,
    ) -> None:
        """`ranks`: each sampled item's `bm25_rank`, by its place in the sample (`sample_ranks`; None:
        not ranked);
        `semantic`: the questions' embeddings, for duplicates by meaning (None: the lexical rule only);
        `chosen`: the ids of the passing drafts to keep (a build to a target size, `target.choose`),
        the other passing ones rejected as `over_target` (None: every one that passes is kept)."""
        self.config = config
        self.tasks = tasks
        asked = {task.criterion for task in tasks.critics}
        specs = config.critic_specs()
        critics = tuple(spec.name for spec in specs if spec.name in asked)
        requested = config.n_generations
        if config.target is not None:
            requested = sum(n for n in sample.requested.values() if n is not None)
        self.counts = _Counts(Vetter(config), critics=critics, requested=requested, sampled=len(sample))
        # Each type's critic columns: the build's critics, each with its prompt's hash for the type (None:
        # not asked of it), found once, not for each row.
        self._shown = {
            name: tuple(
                _Shown(
                    spec.name,
                    tuple(f"{spec.name}_{column}" for column in _OWN_COLUMNS) if spec.own_columns else None,
                    task.prompt.hash if (task := typed.critic(spec.name)) else None,
                )
                for spec in specs
            )
            for name, typed in tasks.types.items()
        }
        for name, share in config.question_types.items():
            self.counts.types[name] = _TypeCounts(
                share=share, requested=sample.requested.get(name), short=sample.short.get(name, 0)
            )
        self.dedup = NearDuplicateFilter(config.dedup_threshold)
        self.ranks = ranks
        self._position = 0
        """The place in the sample of the item `candidate` takes next."""
        self.semantic = semantic
        self.chosen = chosen
        self.last_check_reason: str | None = None
        """The free check that rejected the last candidate's draft (None: none did), for the profile."""

    def candidate(self, item: Passages, drafts: Records[Draft], critiques: Records[Critique]) -> CandidateRow:
        config, tasks, counts = self.config, self.tasks.of(item), self.counts
        of_type = counts.types[item.question_type]
        of_type.sampled += 1
        position, self._position = self._position, self._position + 1
        did = tasks.draft.key(item)
        draft = drafts.get(did)
        quality = _NOT_MEASURED
        self.last_check_reason = None
        # A composed draft's parts are judged first: one that failed, or that a free check or its critic
        # rejects, ends it with its reason (shown with that part's reply), whether it was composed or not.
        parts = self.tasks.judge_parts(item, self.tasks.stored_parts(item, draft, drafts.get), config, critiques.get)
        compose = tasks.compose
        if parts is not None and compose is not None and not parts.missing:
            draft = ended_by_part(compose, item, parts) or draft
        if draft is None:
            # Never asked, not failed: the next `generate` (or build) drafts it.
            fate = _Fate("undecided", f"generation:{NOT_ASKED}", {})
            counts.undecided["generation"] += 1
            counts.undecided_calls["generation"] += 1
            of_type.undecided += 1
        elif not draft.ok:
            fate = _Fate("failed", f"generation:{draft.reason}", {})
            counts.failed(counts.generation_failed, draft.reason, item.first, draft.raw)
            of_type.generation_failed += 1
        else:
            counts.drafted += 1
            of_type.drafted += 1
            part_checks = parts.checked if parts is not None else None
            checked = part_checks or self.tasks.precheck(draft, item, config)
            # A draft its parts ended shows no question to rank (one composed all the same is not shown).
            rank = self.ranks[position] if self.ranks is not None and part_checks is None else None
            found = shares(draft.question or "", draft.answer or "", [passage.text for passage in item.chunks])
            answer = {"extractive_share": _rounded(found.extractive), "restated_share": _rounded(found.restated)}
            quality = _Quality(checked.evidence, checked.passage or item.first, found.copied, rank, answer)
            # The build's free checks, then the type's own: either rejects before any critic is asked.
            reason = checked.reason or (None if part_checks else tasks.check(draft, item))
            if reason in TOO_LONG_REASONS:
                counts.too_long += 1
            elif reason is not None:
                counts.checks_rejected[reason] += 1
                self.last_check_reason = reason
            if reason is not None:
                of_type.rejected[reason] += 1
                fate = _Fate("rejected", reason, {})
            else:
                if parts is not None and parts.critique is not None:
                    fate = _part_vetted(parts.critique, parts.ending, item, counts)
                elif parts is not None and parts.unvetted:
                    fate = _undecided(parts.unvetted, {}, counts)
                else:
                    drafted = self.tasks.drafted(draft, item)
                    fate = _judge(drafted, critiques, config, tasks, counts, self.dedup, self.semantic, quality)
                if fate.status == "kept" and self.chosen is not None and did not in self.chosen:
                    counts.over_target += 1
                    fate = fate._replace(status="rejected", reason=OVER_TARGET, rejected_as=(OVER_TARGET,))
                if fate.status == "kept":
                    counts.kept += 1
                    of_type.kept += 1
                    if quality.copied_share is not None:
                        of_type.copied.append(quality.copied_share)
                elif fate.status == "rejected":
                    # A draft counts once, under the first reason it was rejected for (the critics asked
                    # together, or every critic asked, may each reject it).
                    of_type.rejected[fate.rejected_as[0]] += 1
                elif fate.status == "failed":
                    of_type.critique_failed += 1
                else:
                    of_type.undecided += 1
        return _candidate(item, did, draft, fate, config, tasks, quality, self._shown[item.question_type])

    def funnel(self) -> Funnel:
        return self.counts.funnel()

    def by_type(self) -> dict[str, TypeFunnel]:
        """The funnel of each question type of the build, in the order of its `question_types`."""
        return self.counts.by_type()


def rank_queries(sample: Sample, drafts: Records[Draft], tasks: BuildTasks) -> Iterator[RankQuery]:
    """What `bm25_rank` ranks for each sampled item, in order: a usable draft's question and its first
    passage; a query ranked None for an item with no usable draft."""
    for item in sample:
        draft = drafts.get(tasks.draft_key(item))
        if draft is not None and draft.ok:
            yield RankQuery(draft.question or "", item.first.id)
        else:
            yield RankQuery("", None)


def sample_ranks(
    sample: Sample, drafts: Records[Draft], tasks: BuildTasks, chunk_index: ChunkIndex
) -> Sequence[int | None]:
    """Each sampled item's `bm25_rank` by its place in the sample, as the `Assembler` takes them (`ranks`)."""
    return chunk_index.ranks(rank_queries(sample, drafts, tasks))


def assemble(
    sample: Sample,
    drafts: Records[Draft],
    critiques: Records[Critique],
    config: BuildConfig,
    tasks: BuildTasks,
    *,
    chunk_index: ChunkIndex | None = None,
    semantic: SemanticDuplicates | None = None,
) -> Assembly:
    """Candidate rows for every sampled item, in sampling order, all in memory (`Assembler` makes
    them one at a time; ranked against `chunk_index`, duplicates by meaning with `semantic`)."""
    ranks = sample_ranks(sample, drafts, tasks, chunk_index) if chunk_index is not None else None
    assembler = Assembler(config, tasks, sample, ranks=ranks, semantic=semantic)
    candidates = [assembler.candidate(item, drafts, critiques) for item in sample]
    return Assembly(
        candidates=candidates,
        kept=[row.dataset_row() for row in candidates if row.status == "kept"],
        funnel=assembler.funnel(),
        by_type=assembler.by_type(),
    )


def _judge(
    drafted: Drafted,
    critiques: Records[Critique],
    config: BuildConfig,
    tasks: TypeTasks,
    counts: _Counts,
    dedup: NearDuplicateFilter,
    semantic: SemanticDuplicates | None,
    quality: _Quality,
) -> _Fate:
    """The draft's status and reason from its critiques, and its combined score (held to a certified cut on
    it when the build has one: `vetting.score_verdict`).

    A known rejection outranks a failure, and a failure a critic never asked: a draft that passed
    every critic asked so far and needs another (the run stopped, or a lower threshold now lets
    through a score that stopped the critics before) is undecided, not failed.
    """
    draft = drafted.draft
    found: dict[str, Critique] = {}
    verdicts: dict[str, Verdict] = {}
    rejections: list[str] = []
    rejected: list[str] = []
    failures: list[tuple[str, Critique]] = []  # (`criterion:reason`, as the funnel counts them; the critique)
    missing: list[str] = []
    for critic in tasks.critics:  # in the order they are asked
        criterion = critic.criterion
        critique = critiques.get(critic.key(drafted))
        if critique is None:
            missing.append(criterion)
            continue
        found[criterion] = critique
        verdict = counts.vetted(critique)
        if verdict is None:
            failures.append((f"{criterion}:{critique.reason}", critique))
            continue
        verdicts[criterion] = verdict
        if not verdict.passed:
            assert verdict.why is not None
            rejections.append(verdict.why)
            rejected.append(rejected_as(counts.vetter.spec(criterion), critique))
            counts.rejected_by[criterion] += 1
    predicted = _predicted_keep(drafted.passages.question_type, verdicts, quality)
    if rejections:
        counts.rejected += 1
        counts.critic_calls_skipped += len(missing)
        skipped = f" ({', '.join(missing)} not asked)" if missing else ""
        return _Fate("rejected", "; ".join(rejections) + skipped, found, tuple(rejected), verdicts, predicted)
    if failures:
        failure, critique = failures[0]
        counts.failed(counts.critique_failed, failure, drafted.passages.first, critique.raw)
        return _Fate("failed", f"critique:{failure}", found, verdicts=verdicts, predicted_keep=predicted)
    if missing:
        return _undecided(missing, found, counts, verdicts)._replace(predicted_keep=predicted)
    if (below := score_rejection(config, predicted)) is not None:
        counts.rejected += 1
        counts.rejected_by[SCORE_COLUMN] += 1
        return _Fate("rejected", below, found, (SCORE_COLUMN,), verdicts, predicted)
    question = draft.question or ""
    earlier = dedup.match(question)
    if earlier is not None:
        counts.duplicates += 1
        return _Fate("rejected", f"duplicate_of:{earlier}", found, ("duplicate",), verdicts, predicted)
    if semantic is not None and (earlier := semantic.match(draft.id)) is not None:
        counts.semantic_duplicates += 1
        return _Fate("rejected", f"same_meaning_as:{earlier}", found, ("same_meaning",), verdicts, predicted)
    dedup.keep(question, draft.id)
    if semantic is not None:
        semantic.keep(draft.id)
    return _Fate("kept", "", found, verdicts=verdicts, predicted_keep=predicted)


def _predicted_keep(question_type: str, verdicts: Mapping[str, Verdict], quality: _Quality) -> float | None:
    """The draft's combined score from its verdicts and the signals that cost no call (`generation.score`)."""
    values: dict[str, float | None] = {name: verdicts[name].measurement for name in CHECK_SIGNALS if name in verdicts}
    copied = None if quality.copied_share is None else round(quality.copied_share, 4)  # as the row shows it
    values |= {"bm25_rank": quality.bm25_rank, "copied_share": copied, **quality.answer_shares}
    return predicted_keep(question_type, Signals(values, tuple(name for name in CHECK_SIGNALS if name in verdicts)))


def _undecided(
    missing: Sequence[str], found: dict[str, Critique], counts: _Counts, verdicts: dict[str, Verdict] | None = None
) -> _Fate:
    """A draft waiting for the critics `missing` names (each once for every call to make)."""
    counts.undecided["critique"] += 1
    counts.undecided_calls["critique"] += len(missing)
    reason = "; ".join(f"critique:{criterion}:{NOT_ASKED}" for criterion in dict.fromkeys(missing))
    return _Fate("undecided", reason, found, verdicts=verdicts or MappingProxyType({}))


def _part_vetted(critique: Critique, part: Draft | None, item: Passages, counts: _Counts) -> _Fate:
    """A composed draft a part's critic ended (`PartsVerdict.critique`), counted once as a draft that
    critic rejects, or whose call failed: with the reason it gives a draft of the part's type, and which
    part (by its passage's place) it was."""
    criterion = critique.criterion
    chunk_ids = [chunk.id for chunk in item.chunks]
    which = f" in part {chunk_ids.index(part.chunk_id) + 1}" if part is not None and part.chunk_id in chunk_ids else ""
    verdict = counts.vetted(critique)
    if verdict is None:
        failure = f"{criterion}:{critique.reason}"
        counts.failed(counts.critique_failed, failure, item.first, critique.raw)
        return _Fate("failed", f"critique:{failure}{which}", {})
    assert verdict.why is not None, "a part's critic ends a draft only by rejecting it"
    counts.rejected += 1
    counts.rejected_by[criterion] += 1
    return _Fate("rejected", verdict.why + which, {}, (rejected_as(counts.vetter.spec(criterion), critique),))


def _candidate(
    item: Passages,
    did: str,
    draft: Draft | None,
    fate: _Fate,
    config: BuildConfig,
    tasks: TypeTasks,
    quality: _Quality,
    shown: Sequence[_Shown],
) -> CandidateRow:
    """The row of an item; `shown`: the build's critics as its type's rows show them."""
    # A failed draft's reply is kept (it shows what went wrong); its question and answer are not.
    usable = draft if draft is not None and draft.ok else None
    found = fate.critiques
    columns: dict[str, object] = {}
    extra: list[CriticReply] = []
    for name, own_columns, prompt_hash in shown:
        critique = found.get(name)
        score = _score(critique)
        rationale, raw = (critique.rationale, critique.raw) if critique else (None, None)
        verdict = fate.verdicts.get(name)
        if own_columns is not None:
            measurement, passed = (verdict.measurement, verdict.passed) if verdict else (None, None)
            columns.update(zip(own_columns, (score, rationale, measurement, passed, prompt_hash, raw), strict=True))
        elif prompt_hash is not None:  # a critic that does not vet this type has no verdict to show
            decided = {} if verdict is None else {field: getattr(verdict, field) for field in _DECISION}
            extra.append(
                CriticReply(name=name, score=score, eval=rationale, prompt_hash=prompt_hash, raw=raw, **decided)
            )
    chunk = item.first
    # A question its passages do not answer (unanswerable) has no retrieval target: the columns that
    # name one stay empty, so no reader takes the passage it borrowed its subject from for its answer.
    no_target = {} if tasks.spec.answer_in_passages else dict.fromkeys(NO_TARGET_COLUMNS)
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
            "question_type": item.question_type,
            "contexts": tuple(passage.text for passage in item.chunks),
            "source_docs": tuple(passage.source for passage in item.chunks),
            "chunk_ids": item.chunk_ids,
            "start_indices": tuple(passage.start_index for passage in item.chunks),
            "end_indices": tuple(passage.end_index for passage in item.chunks),
            "status": fate.status,
            "reason": fate.reason,
            "generation_raw": draft.raw if draft else None,
            "evidence_quote": usable.evidence if usable else None,
            "evidence_start": quality.in_document(chunk, evidence.start) if (evidence := quality.evidence) else None,
            "evidence_end": quality.in_document(chunk, evidence.end) if evidence else None,
            "evidence_match": evidence.match if evidence else None,
            "copied_share": None if quality.copied_share is None else round(quality.copied_share, 4),
            "bm25_rank": quality.bm25_rank,
            **quality.answer_shares,
            SCORE_COLUMN: fate.predicted_keep if usable else None,
            "extra_critics": tuple(extra),
            **columns,
            **no_target,
        }
    )


def _rounded(share: float | None) -> float | None:
    """A share as the row shows it."""
    return None if share is None else round(share, 4)


_DECISION = ("measured_as", "measurement", "cut", "passed")
"""What `extra_critics` shows of a verdict beside the written word."""


def _score(critique: Critique | None) -> int | None:
    # A failed critique's score is not shown even when one was read: the critique does not count.
    return critique.score if critique is not None and critique.ok else None
