"""The last stage of a build: the records, filtered, into `dataset/`, `candidates/` and `summary.json`.

Streaming: the sampled chunks are taken in sampling order, each one's draft and critiques read
back from the logs (`Ledger`), its candidate row made and handed to `save_outputs` at once (which
streams rows to disk a batch at a time), so memory does not grow with the sample beyond the ledger's
small states.

Skipped when nothing changed: `outputs.stamp.json` records what the outputs were made from (the
size and modification time of the record logs and the chunk files, the settings, the prompts'
hashes, the qagen version) and the size and modification time of what was written. When all of it
is as it was, the outputs stand as they are. The stamp also says whether the LLM stage before it
left anything to do (`settled`: every sampled chunk's draft and critics finished, no call to redo);
then a build with nothing changed skips that stage too (`settled_summary`).
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from tqdm import tqdm

from qagen._version import __version__
from qagen.config import BuildConfig
from qagen.corpus.chunk_index import ChunkIndex
from qagen.generation.filter import Assembler, sample_ranks
from qagen.generation.kept_quality import carried_over, read_kept_ids, stored_kept_quality
from qagen.generation.ledger import Ledger
from qagen.generation.mix_change import mix_change
from qagen.generation.profile import ProfileCounter
from qagen.generation.sample import Sample
from qagen.generation.semantic_dedup import QuestionVectors, SemanticDedup, SemanticDuplicates, load_semantic_dedup
from qagen.generation.summary import check_readings, summarise_build
from qagen.generation.target import Passed, choose
from qagen.generation.tasks import BuildTasks
from qagen.generation.write import DATA_FILE, save_outputs
from qagen.records import (
    BuildSummary,
    CandidateRow,
    CandidateStatus,
    Certified,
    Duplicates,
    Passages,
    TypeFunnel,
)
from qagen.runs.batch.journal import Journal
from qagen.runs.rundir import RunDir
from qagen.runs.scratch import KeySet
from qagen.runs.store import write_json_atomic

STAMP_FILE = "outputs.stamp.json"

_GENERATION = "generation:"


class NoDraft(NamedTuple):
    """A run in which no draft could be read: its commonest failure, with the first case of it."""

    reason: str
    times: int
    candidates: int
    source_doc: str
    raw: str | None


class Outputs(NamedTuple):
    summary: BuildSummary
    up_to_date: bool
    """Nothing changed since the outputs were written: they were left as they are."""
    no_draft: NoDraft | None
    """Set when chunks were sampled and not one draft could be read."""


class _GenerationFailures:
    """The candidates' generation failures by reason, each with its first case (for `NoDraft`)."""

    def __init__(self) -> None:
        self.count: Counter[str] = Counter()
        self.first: dict[str, tuple[str, str | None]] = {}

    def add(self, candidate: CandidateRow, item: Passages) -> None:
        """Count the candidate drafted from `item` (whose document names the case: an unanswerable
        row's `source_doc` is empty)."""
        reason = candidate.reason
        if reason.startswith(_GENERATION):
            self.count[reason] += 1
            self.first.setdefault(reason, (item.first.source, candidate.generation_raw))

    def commonest(self, candidates: int) -> NoDraft:
        reason, times = self.count.most_common(1)[0]
        source_doc, raw = self.first[reason]
        return NoDraft(reason, times, candidates, source_doc, raw)


def write_outputs(
    config: BuildConfig,
    run: RunDir,
    tasks: BuildTasks,
    sample: Sample,
    ledger: Ledger | None = None,
    *,
    settled: bool = False,
    certified: Certified | None = None,
) -> Outputs:
    """Filter the sample's records into the outputs, unless they are up to date (see the module).

    `ledger`: the LLM stage's, so only what it appended is read here; None reads the logs whole.
    `settled`: that stage, just run over this sample with these settings, left nothing to do.
    `certified`: what reviewer labels certify (`filter.precision`), put in `summary.json`; `config` holds the
    drafts to its threshold already when it certifies one (`vetting.certified_config`).
    """
    made_from = _made_from(config, run, tasks)
    stamp = _holding_stamp(run, made_from)
    if stamp is not None:
        if settled and not stamp.get("settled"):
            write_json_atomic(_stamp_file(run), {**stamp, "settled": True})
        return Outputs(with_certified(run, _stored_summary(run), certified), up_to_date=True, no_draft=None)
    # The estimate from people's labels is not the records': it is carried over, stale if the kept set changes.
    kept_quality = stored_kept_quality(run.summary_file)
    changed_mix = mix_change(config, run)
    ledger = ledger or Ledger(run.drafts, run.critiques)
    ledger.scan()
    # The build's own index when its tasks have one (its critics' searches may have built it already).
    chunk_index = tasks.chunk_index if tasks.chunk_index is not None else ChunkIndex(run.iter_chunks)
    dedup = load_semantic_dedup(config.dedup_embeddings)
    if dedup.lexical_only_because is not None and config.dedup_embeddings is not None:
        # Said when embeddings were asked for and cannot be used, not when they were turned off.
        _say(f"Duplicates by meaning are not looked for, {dedup.lexical_only_because}: the lexical rule only.")
    vectors = _question_vectors(dedup, sample, tasks, ledger)
    chosen = None
    if config.target is not None:
        chosen = choose(_tally(config, tasks, sample, ledger, vectors).passed, config)
    ranks = sample_ranks(sample, ledger.drafts, tasks, chunk_index)
    assembler = Assembler(config, tasks, sample, ranks=ranks, semantic=_semantic(config, vectors), chosen=chosen)
    profile = ProfileCounter(check_readings(config, tasks), chunk_index.chunks_per_document(), config.question_types)
    failures = _GenerationFailures()
    # On disk: a set of 100,000 ids takes about 15 MB in memory (the kept ones are read back from
    # `dataset/` where they are needed).
    sample_ids = KeySet("the sampled drafts' ids")

    def candidates() -> Iterator[CandidateRow]:
        for item in sample:
            candidate = assembler.candidate(item, ledger.drafts, ledger.critiques)
            failures.add(candidate, item)
            profile.add(candidate, assembler.last_check_reason)
            sample_ids.add(candidate.id)
            for paid in tasks.of(item).paid_keys(item):  # a composed draft's parts, a reply of several pairs
                sample_ids.add(paid)
            yield candidate

    try:
        extra_critics = any(not spec.own_columns for spec in config.critic_specs())
        save_outputs(candidates(), run.dataset_dir, run.candidates_dir, extra_critics=extra_critics, mixed=config.mixed)
    finally:
        ledger.close()
    funnel = assembler.funnel()
    duplicates = Duplicates(
        lexical=funnel.duplicates,
        semantic=funnel.semantic_duplicates,
        semantic_model=dedup.model.label if dedup.model is not None else None,
        lexical_only_because=dedup.lexical_only_because,
    )
    paid = ledger.paid_for(sample_ids, Journal(run.root).batched)
    summarised = summarise_build(config, run, tasks, funnel, paid, assembler.by_type())
    kept_quality = carried_over(kept_quality, lambda: read_kept_ids(run))
    summary = summarised.model_copy(
        update={"profile": profile.result(duplicates), "kept_quality": kept_quality, "certified": certified}
    )
    write_json_atomic(run.summary_file, summary.model_dump(mode="json"))
    if changed_mix is not None and (left_out := changed_mix.left_out(read_kept_ids(run))) is not None:
        _say(left_out)
    no_draft = failures.commonest(len(sample)) if sample and funnel.drafted == 0 else None
    if no_draft is None:
        # Not when nothing could be drafted: the next run says so again instead of standing by it.
        written = {"made_from": made_from, "outputs": _file_stats(run, _outputs(run)), "settled": settled}
        write_json_atomic(_stamp_file(run), written)
    return Outputs(summary, up_to_date=False, no_draft=no_draft)


class Tally(NamedTuple):
    """What the filter makes of a sample, written nowhere: each type's funnel, and the drafts that pass."""

    by_type: dict[str, TypeFunnel]
    passed: list[Passed]
    """In sampling order."""
    statuses: dict[str, list[CandidateStatus]]
    """Each type's candidates' statuses, in sampling order (what sizes a round anew: `target.replan`)."""
    rows: dict[str, CandidateRow]
    """The candidate rows asked for (`rows_of`), by id."""


class Kept(NamedTuple):
    """What `write_outputs` would keep of a sample, written nowhere (`kept_of`)."""

    ids: frozenset[str]
    """The kept drafts' ids (duplicates and the target's choice included)."""
    rows: dict[str, CandidateRow]
    """The candidate rows asked for, by id (their status is the filter's, before the target's choice)."""


def kept_of(
    config: BuildConfig, tasks: BuildTasks, sample: Sample, ledger: Ledger, rows_of: Collection[str] = ()
) -> Kept:
    """The drafts of `sample` that `config` keeps, and the candidate rows of those of `rows_of` it holds."""
    tallied = tally(config, tasks, sample, ledger, rows_of)
    passed = tallied.passed
    ids = choose(passed, config) if config.target is not None else frozenset(draft.id for draft in passed)
    return Kept(ids, tallied.rows)


def with_certified(run: RunDir, summary: BuildSummary, certified: Certified | None) -> BuildSummary:
    """`summary` saying `certified`, written over the run's `summary.json` when it said otherwise (more labels
    that certify the same threshold change no output: the outputs' stamp still holds)."""
    if certified is None or summary.certified == certified:
        return summary
    summary = summary.model_copy(update={"certified": certified})
    replace_summary(run, summary)
    return summary


def tally(
    config: BuildConfig, tasks: BuildTasks, sample: Sample, ledger: Ledger, rows_of: Collection[str] = ()
) -> Tally:
    """The sample filtered as `write_outputs` filters it (duplicates by meaning included), without
    ranking the drafts or writing anything: what a build to a target size counts after each round;
    with the candidate rows of the drafts `rows_of` names."""
    ledger.scan()
    vectors = _question_vectors(load_semantic_dedup(config.dedup_embeddings), sample, tasks, ledger)
    return _tally(config, tasks, sample, ledger, vectors, rows_of)


def _tally(
    config: BuildConfig,
    tasks: BuildTasks,
    sample: Sample,
    ledger: Ledger,
    vectors: dict[str, list[float]] | None,
    rows_of: Collection[str] = (),
) -> Tally:
    assembler = Assembler(config, tasks, sample, semantic=_semantic(config, vectors))
    passed: list[Passed] = []
    statuses: dict[str, list[CandidateStatus]] = {}
    rows: dict[str, CandidateRow] = {}
    for item in sample:
        candidate = assembler.candidate(item, ledger.drafts, ledger.critiques)
        statuses.setdefault(item.question_type, []).append(candidate.status)
        if candidate.status == "kept":
            passed.append(Passed(candidate.id, item.question_type, item.first.source))
        if candidate.id in rows_of:
            rows[candidate.id] = candidate
    return Tally(assembler.by_type(), passed, statuses, rows)


def _question_vectors(
    dedup: SemanticDedup, sample: Sample, tasks: BuildTasks, ledger: Ledger
) -> dict[str, list[float]] | None:
    """The embeddings of the sample's questions, by draft id (those the LLM stage embedded as they
    arrived taken from the build's tasks); None when duplicates by meaning are not looked for."""
    if dedup.model is None:
        return None
    embedded = tasks.question_vectors
    vectors = embedded if embedded is not None and embedded.model is dedup.model else QuestionVectors(dedup.model)
    return vectors.of(_questions(sample, tasks, ledger))


def _semantic(config: BuildConfig, vectors: dict[str, list[float]] | None) -> SemanticDuplicates | None:
    """A fresh finder of duplicates by meaning (it remembers what it kept), or None."""
    return None if vectors is None else SemanticDuplicates(vectors, config.semantic_dedup_threshold)


def _questions(sample: Sample, tasks: BuildTasks, ledger: Ledger) -> dict[str, str]:
    """The question of every usable draft of the sample, by draft id (what duplicates by meaning embed)."""
    questions: dict[str, str] = {}
    for item in sample:
        draft = ledger.drafts.get(tasks.draft_key(item))
        if draft is not None and draft.ok and draft.question:
            questions[draft.id] = draft.question
    return questions


def _say(message: str) -> None:
    tqdm.write(message, file=sys.stderr)


def settled_summary(config: BuildConfig, run: RunDir, tasks: BuildTasks) -> BuildSummary | None:
    """The stored summary when a build has nothing to do: the outputs are up to date and the LLM
    stage that preceded them left nothing to redo; else None."""
    stamp = _holding_stamp(run, _made_from(config, run, tasks))
    return _stored_summary(run) if stamp is not None and stamp.get("settled") is True else None


def _stored_summary(run: RunDir) -> BuildSummary:
    # Stamped outputs were written by this qagen version (the stamp says so): its summary reads back.
    return BuildSummary.model_validate_json(run.summary_file.read_bytes())


def replace_summary(run: RunDir, summary: BuildSummary) -> None:
    """Write `summary` over the run's `summary.json`, the outputs' stamp still holding if it held: what
    the review tools put in a summary (`kept_quality`) is no change of what the outputs were made from,
    so the next build with the same settings stands by them instead of filtering again."""
    name = run.summary_file.relative_to(run.root).as_posix()
    before = _file_stats(run, [run.summary_file])[name]
    write_json_atomic(run.summary_file, summary.model_dump(mode="json"))
    try:
        stamp = json.loads(_stamp_file(run).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return  # no stamp: the next build writes the outputs anyway
    outputs = stamp.get("outputs") if isinstance(stamp, dict) else None
    if isinstance(outputs, dict) and outputs.get(name) == before:
        written = {**outputs, **_file_stats(run, [run.summary_file])}
        write_json_atomic(_stamp_file(run), {**stamp, "outputs": written})


def _holding_stamp(run: RunDir, made_from: dict[str, Any]) -> dict[str, Any] | None:
    """The stamp, when the outputs and what they were made from are as it says; else None."""
    try:
        stamp = json.loads(_stamp_file(run).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    # Through JSON, so both sides compare as JSON sees them (tuples are lists).
    wanted = json.loads(json.dumps({"made_from": made_from, "outputs": _file_stats(run, _outputs(run))}))
    if not isinstance(stamp, dict) or any(stamp.get(key) != value for key, value in wanted.items()):
        return None
    return stamp


def _made_from(config: BuildConfig, run: RunDir, tasks: BuildTasks) -> dict[str, Any]:
    return {
        "qagen_version": __version__,
        "settings": config.model_dump(mode="json"),
        "prompts": tasks.prompt_hashes(),
        "inputs": _file_stats(
            run, [run.drafts.path, run.critiques.path, run.chunks_file, run.chunking_file, run.rounds_file]
        ),
    }


def _outputs(run: RunDir) -> list[Path]:
    written = [folder / name for folder in (run.dataset_dir, run.candidates_dir) for name in (DATA_FILE, "state.json")]
    return [run.summary_file, *written]


def _file_stats(run: RunDir, paths: list[Path]) -> dict[str, list[int] | None]:
    """Each file's size and modification time (ns), by its path in the run; None when missing."""
    stats: dict[str, list[int] | None] = {}
    for path in paths:
        name = path.relative_to(run.root).as_posix()
        try:
            stat = path.stat()
        except OSError:
            stats[name] = None
            continue
        stats[name] = [stat.st_size, stat.st_mtime_ns]
    return stats


def _stamp_file(run: RunDir) -> Path:
    return run.root / STAMP_FILE
