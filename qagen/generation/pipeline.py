"""The stages of a build, each resumable, and `build` which runs them all."""

from __future__ import annotations

import asyncio
import logging
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from qagen.config import BuildConfig
from qagen.corpus.chunk import ChunkStats, chunk_documents, make_splitter
from qagen.corpus.load.documents import CorpusReport, iter_documents
from qagen.corpus.load.fingerprint import FingerprintRecorder, corpus_location
from qagen.errors import CorpusError, NothingUsableError
from qagen.generation.embedders import pairing_embedder
from qagen.generation.estimate import Estimate, estimate
from qagen.generation.finalize import NoDraft, Outputs, settled_summary, tally, with_certified, write_outputs
from qagen.generation.ledger import Ledger
from qagen.generation.passages_short import passages_missing, short_of_passages
from qagen.generation.sample import PassagesPlan, Sample, StoredPassages
from qagen.generation.summary import check_readings
from qagen.generation.target import (
    Plan,
    left_out,
    next_plan,
    planned_drafts,
    read_round,
    record_plan,
    shortfall,
    start_plan,
)
from qagen.generation.tasks import BuildFlow, BuildTasks, label, make_budget
from qagen.generation.vetting import certified_config, settings_without_effect
from qagen.generation.write import funnel_table, warm_up
from qagen.llm.backends import require_key
from qagen.llm.clients import Clients, ModelLike
from qagen.llm.concurrency import run_coroutine
from qagen.llm.task import Role
from qagen.question_types import QUESTION_TYPES, draft_counts
from qagen.records import BuildSummary, Certified, SkippedInput
from qagen.runs.batch.executor import batch_executor
from qagen.runs.batch.journal import Journal
from qagen.runs.batch.rounds import BatchOptions
from qagen.runs.executor import Executor
from qagen.runs.rundir import RunDir
from qagen.runs.store import collections_spaced

NO_TOKEN_PROBABILITIES = (
    "The critics' server sent no token probabilities, so every verdict is read as written (a server that "
    "sends them when asked, as OpenAI's chat models, vLLM and llama.cpp's server do, lets qagen read each "
    "verdict as a probability, which agrees better with people)."
)
"""Said once per stage when the critic's server ignores `top_logprobs`."""
_logger = logging.getLogger(__name__)
_MAX_SKIP_MESSAGES = 20
_UP_TO_DATE = "nothing changed: dataset is up to date"
_LOOKAHEAD = 4
"""Chunks under way per call slot (see `Executor.map`): at 4 the last calls of a build end within
about one call's latency of each other (benchmarks/bench_scale.py measures the efficiency)."""
_WARM_UP_POLL_SECONDS = 0.05

Certifier = Callable[[RunDir, BuildConfig], Certified]
"""What reviewer labels certify for a run at the build's `precision` (`qagen.review.certify.certifier`), asked
once the run is open and chunked, before any draft: the threshold it certifies holds every round's drafts."""


def _say(message: str) -> None:
    tqdm.write(message, file=sys.stderr)


# --- chunking -----------------------------------------------------------------------------------
def chunk_stage(
    config: BuildConfig, run: RunDir, *, progress: bool = True, update_corpus: bool = False
) -> dict[str, Any]:
    """Load and chunk the corpus into the run directory (once; later calls reuse the chunks).

    A corpus that changed since it was chunked here is refused, or, with `update_corpus`, chunked
    again: the sample is then drawn anew, and replies for chunks that did not change are reused.
    """
    splitter = make_splitter(**config.chunking.model_dump())  # invalid settings fail before any reading
    if run.chunking_done():
        changes = run.check_corpus(config.corpus, update=update_corpus)
        if changes is None:
            return run.chunking_report()
        _say(f"The corpus changed since it was chunked into {run.root} ({changes}); chunking it again.")
    report = CorpusReport()
    recorder = FingerprintRecorder(corpus_location(config.corpus))
    shown = 0

    def on_skip(skipped: SkippedInput) -> None:
        nonlocal shown
        shown += 1
        if shown <= _MAX_SKIP_MESSAGES:
            detail = f" ({skipped.detail})" if skipped.detail else ""
            _say(f"skipped {skipped.source}: {skipped.reason}{detail}")
        elif shown == _MAX_SKIP_MESSAGES + 1:
            _say(f"... more inputs skipped; all are listed in {run.chunking_file}")

    corpus = config.corpus
    documents = iter_documents(
        Path(corpus.path) if corpus.path else None,
        report=report,
        hf_dataset=corpus.hf_dataset,
        split=corpus.split,
        text_column=corpus.text_column,
        source_column=corpus.source_column,
        on_skip=on_skip,
        recorder=recorder,
    )
    stats = ChunkStats()
    bar = tqdm(documents, desc="chunking", unit="doc", disable=not progress, file=sys.stderr)
    written = run.write_chunks(chunk_documents(bar, splitter, stats))
    bar.close()
    where = corpus.path or corpus.hf_dataset
    if written.chunks == 0:
        run.discard_chunks(written)
        reasons = ", ".join(f"{n} {r}" for r, n in report.skipped_by_reason().items()) or "no supported files"
        raise CorpusError(f"No usable text in {where} ({reasons}); nothing to build from.")
    summary = {
        "documents": report.documents,
        "skipped": len(report.skipped),
        "skipped_by_reason": report.skipped_by_reason(),
        "chunks": written.chunks,
        "duplicate_chunks": stats.duplicates,
        "characters": stats.characters,
        "skipped_inputs": [s.model_dump() for s in report.skipped],
    }
    run.finish_chunking(written, recorder.result(), summary)
    return summary


def load_sample(config: BuildConfig, run: RunDir, requested: Mapping[str, int | None] | None = None) -> Sample:
    """Every draft's passages, per question type (`QuestionTypeSpec.picker`), reading the chunk file
    anew for each picker and once more for where the chosen chunks are, instead of holding it all (the
    sample reads them back when it is gone through: `StoredPassages`); the pickers
    that pair passages by meaning read the `pair_embeddings` model.

    `requested`: the drafts asked of each type (a round of a build to a target size; None for a type:
    one per chunk); None: the build's own (`requested_drafts`)."""
    wanted_drafts: dict[str, int | None] = dict(requested) if requested is not None else requested_drafts(config, run)
    embed = pairing_embedder(config.pair_embeddings)
    # A call of several pairs drafts that many from its passages: n drafts take n / per_chunk calls, rounded up.
    per_call = {name: config.pairs_per_call(name) for name in wanted_drafts}
    picked = {
        name: QUESTION_TYPES.get(name).picker(
            run.iter_chunks, config.seed, None if n is None else -(-n // per_call[name]), embed
        )
        for name, n in wanted_drafts.items()
    }
    plans = (
        PassagesPlan(name, group.chunk_ids, group.link, pair if per_call[name] > 1 else None)
        for name, found in picked.items()
        for group in found.groups
        for pair in range(1, per_call[name] + 1)
    )
    items = StoredPassages(run.chunks_file, plans)
    return Sample(items, wanted_drafts, {name: found.short * per_call[name] for name, found in picked.items()})


def requested_drafts(config: BuildConfig, run: RunDir) -> dict[str, int | None]:
    """The drafts asked of each question type: `n_generations` split by the shares (`draft_counts`);
    a build of factoids alone drafts from `n_generations` chunks, or every chunk (None). A build to a
    `target` size asks what its latest round asked (`target.planned_drafts`)."""
    if config.target is not None:
        return dict(planned_drafts(config, run))
    if not config.mixed:
        return dict.fromkeys(config.question_types, config.n_generations)
    total = config.n_generations if config.n_generations is not None else int(run.chunking_report()["chunks"])
    return dict(draft_counts(config.question_types, total))


def run_llm_stages(
    config: BuildConfig,
    run: RunDir,
    tasks: BuildTasks,
    sample: Sample,
    *,
    generate: bool,
    critique: bool,
    progress: bool,
    ledger: Ledger | None = None,
    batch: BatchOptions | None = None,
    said: set[str] | None = None,
    finalizing: bool = False,
) -> str | None:
    """Draft and/or critique the sample, from synchronous code (the CLI, a script, a notebook);
    online, or in Batch API rounds when `batch` is given.

    `ledger`: where the stage keeps what it knows of the records (`build` hands it on to finalize,
    so the logs are read once); None makes one for this call. `said`: the notices said already by the
    build this call is part of (one that drafts in rounds calls it once per round), each said once; the
    call adds those it says. `finalizing`: this process writes the outputs after the stage (`build`),
    so what the final write needs that no record changes is made while the calls are in flight
    (`_warm_up_finalize`). Returns None when all the work was
    done, or a sentence saying which spending cap stopped it. Raises `BatchesRunningError` when
    not waiting for batches that are still running.
    """
    stopped: list[str] = []
    ledger = ledger or Ledger(run.drafts, run.critiques)
    said = said if said is not None else set()

    async def main() -> None:
        # Only the roles this stage calls: `qagen stage critique` must not need the generator's server.
        models: dict[Role, ModelLike] = {}
        if generate:
            models["generator"] = config.generator
        if critique:
            models["critic"] = config.critic
        clients = Clients.connect(models, config.call_limits())
        preloading = asyncio.ensure_future(_warm_up_once_replies_come(clients, tasks if finalizing else None))
        try:
            ledger.scan()
            with ledger.appending():
                budget = make_budget(config, ledger.spent(), batch=batch is not None)
                executor = (
                    Executor(
                        clients,
                        workers=config.concurrency,
                        budget=budget,
                        lookahead=_LOOKAHEAD,
                        answers=Journal(run.root),
                        # Each draft's calls in a row, so a server's prefix cache holds the passages they open with.
                        first_taken_first=config.shared_prefix,
                    )
                    if batch is None
                    else batch_executor(clients, run.root, batch, budget=budget)
                )
                flow = BuildFlow(tasks, config, executor, ledger, generate=generate, critique=critique)
                await executor.map(sample, flow, label=label(generate, critique), unit="draft", progress=progress)
            if budget is not None and budget.reached:
                stopped.append(budget.describe())
            else:
                clients.check_failure_rates()
            no_probabilities = (
                critique and config.critic.top_logprobs and clients["critic"].stats.no_token_probabilities
            )
            if no_probabilities and NO_TOKEN_PROBABILITIES not in said:
                _say(NO_TOKEN_PROBABILITIES)
                said.add(NO_TOKEN_PROBABILITIES)
        finally:
            preloading.cancel()
            await clients.aclose()

    with collections_spaced():  # (a build has them spaced already: `generate` and `critique` run this alone)
        run_coroutine(main())
    return stopped[0] if stopped else None


async def _warm_up_once_replies_come(clients: Clients, finalizing: BuildTasks | None) -> None:
    """Make what the final write needs and no record changes (`_warm_up_finalize`) while the LLM
    stage waits on the network.

    About a second of CPU for the imports, and the counting pass of the drafts' ranks over every chunk
    when `finalizing` (the build's tasks: the outputs are written next, in this process) is given; once
    the first reply is in, the first calls are all out and the stage mostly waits, so the final write
    starts at once. Started any earlier, the imports hold back the first wave of calls (a thread of its
    own shares the interpreter with the event loop: benchmarks/bench_build_timeline.py measures it).
    """
    while not any(client.stats.succeeded or client.stats.failed for client in clients.distinct()):
        await asyncio.sleep(_WARM_UP_POLL_SECONDS)
    threading.Thread(target=_warm_up_finalize, args=(finalizing,), name="warm-up-finalize", daemon=True).start()


def _warm_up_finalize(finalizing: BuildTasks | None) -> None:
    """The imports of the final write: `datasets` (`write.warm_up`) and bm25s with scipy for the
    drafts' ranks (nothing before the final write loads them: `qagen.corpus.words`); with the build's
    tasks, the ranks' counting pass over the chunks (`ChunkIndex.count_ahead`), unless a critic
    searches the chunks (the ranks then read the index of every chunk its searches build).

    A failure here is the final write's to raise (it makes the same imports and the same pass, in
    the build's own thread, where an error is said as errors are): only logged here."""
    try:
        warm_up()
        import qagen.corpus.bm25_index  # noqa: F401

        searched = finalizing is None or any(critic.reads_retrieved for critic in finalizing.critics)
        if not searched and finalizing is not None and finalizing.chunk_index is not None:
            finalizing.chunk_index.count_ahead()
    except Exception:
        _logger.debug("warming up the final write failed; the final write does it again", exc_info=True)


# --- outputs ------------------------------------------------------------------------------------
def finalize(
    config: BuildConfig, run: RunDir, tasks: BuildTasks, sample: Sample, certified: Certified | None = None
) -> BuildSummary:
    """Filter, write `dataset/`, `candidates/` and `summary.json`; return the summary. `certified`: what labels
    certify (`write_outputs`)."""
    return write_outputs_and_say(config, run, tasks, sample, certified=certified).summary


def write_outputs_and_say(
    config: BuildConfig,
    run: RunDir,
    tasks: BuildTasks,
    sample: Sample,
    ledger: Ledger | None = None,
    *,
    settled: bool = False,
    certified: Certified | None = None,
) -> Outputs:
    """`write_outputs`, saying so when the outputs were up to date already."""
    outputs = write_outputs(config, run, tasks, sample, ledger, settled=settled, certified=certified)
    if outputs.up_to_date:
        _say(_UP_TO_DATE)
    return outputs


# --- the whole build ----------------------------------------------------------------------------
@dataclass(frozen=True)
class BuildResult:
    """What `build` returns: where the run is, its summary (`summary.json`), and whether a spending
    cap stopped it."""

    run_dir: Path
    """The run directory: `dataset/`, `candidates/`, `summary.json` and every record."""
    summary: BuildSummary
    """The corpus, the funnel (`summary.funnel.kept`...), models, prompts and usage."""
    stopped_by_budget: str | None = None
    """None when the build finished; else which cap stopped it (re-run with a higher cap to go on)."""

    @property
    def table(self) -> str:
        """The funnel as the `qagen build` command prints it."""
        return funnel_table(self.summary)

    @property
    def shortfall(self) -> str | None:
        """A build to a target size that kept fewer questions: one sentence saying so (`target.shortfall`)."""
        return shortfall(self.summary)

    @property
    def short_of_passages(self) -> str | None:
        """Drafts the corpus had no passages for (a multi-hop pair): why, and how to get more
        (`passages_short.short_of_passages`); None when every draft asked for got its passages."""
        return short_of_passages(self.summary)


def plan(
    config: BuildConfig,
    out: Path | str,
    *,
    progress: bool = True,
    update_corpus: bool = False,
    batch: bool = False,
    certify: Certifier | None = None,
) -> Estimate:
    """What the build of `config` into `out` would still pay (at batch prices with `batch`), with no
    LLM call, writing nothing a later run must match: a new run is chunked and sampled in a
    temporary folder, so the real build may still choose other settings; an existing run is
    checked as the build checks it (other settings, a changed corpus are refused alike) and read
    as it is, chunked again in a temporary folder when `update_corpus` allows a changed corpus.
    `certify`: as the build's (`build`), so that rounds to a target are sized at a certified threshold."""
    _require_build_config(config)
    pairing_embedder(config.pair_embeddings)  # a missing dense extra is said before the corpus is read
    existing = RunDir(out)
    if existing.exists():
        with existing.locked() as run:
            run.check_settings(config, BuildTasks.for_config(config).prompt_hashes())
            if run.chunking_done() and run.check_corpus(config.corpus, update=update_corpus) is None:
                tasks = BuildTasks.for_config(config, run.iter_chunks)
                if config.target is not None:
                    certified = certify(run, config) if certify is not None and config.precision is not None else None
                    return _estimate_first_round(certified_settings(config, certified), run, tasks, batch=batch)
                return estimate(config, run, tasks, load_sample(config, run), batch=batch)
            return _plan_aside(config, progress=progress, batch=batch, records=run)
    return _plan_aside(config, progress=progress, batch=batch, records=None)


def _estimate_first_round(config: BuildConfig, run: RunDir, tasks: BuildTasks, *, batch: bool) -> Estimate:
    """The estimate of the first round a build to a target size would make a call in: the round it
    starts with (`starting_round`), or when every call of it is made already, the rounds it would size
    after it from what passed, as the build sizes them."""
    ledger = Ledger(run.drafts, run.critiques)
    try:
        plan = starting_round(config, run, tasks, ledger)
        while True:
            sample = load_sample(config, run, plan.drafts)
            priced = estimate(config, run, tasks, sample, batch=batch)
            if priced.calls:
                return priced
            following = next_plan(config, plan, tally(config, tasks, sample, ledger).by_type)
            if following is None:
                return priced
            plan = following
    finally:
        ledger.close()


def _plan_aside(config: BuildConfig, *, progress: bool, batch: bool, records: RunDir | None) -> Estimate:
    """The estimate over the corpus chunked and sampled in a temporary folder, against the records
    of `records` (the run to chunk again; None: a new run)."""
    with tempfile.TemporaryDirectory(prefix="qagen-plan-") as folder, RunDir(Path(folder) / "run").locked() as run:
        tasks = BuildTasks.for_config(config, run.iter_chunks)
        run.open(config, tasks.prompt_hashes())
        chunk_stage(config, run, progress=progress)
        return estimate(config, run, tasks, load_sample(config, run), batch=batch, records=records)


def build(
    config: BuildConfig,
    out: Path | str,
    *,
    progress: bool = True,
    update_corpus: bool = False,
    batch: BatchOptions | None = None,
    certify: Certifier | None = None,
) -> BuildResult:
    """Chunk, sample, draft, critique, filter and write; resumes whatever `out` already holds.

    One process at a time: another one already working in `out` makes this raise `RunInUseError`.
    With `update_corpus`, a corpus that changed since `out` was chunked is chunked again (see
    `chunk_stage`) instead of refused. With `batch`, the LLM calls go in Batch API rounds (half the
    price, hours instead of minutes); when not waiting for them (`BatchOptions.wait=False`) this
    raises `BatchesRunningError` once they are submitted: call it again later to go on. With
    `config.precision` and `certify`, the drafts are held to the threshold the run's labels certify, if
    any (`certified_settings`): a build to a target size counts only the drafts that pass it.
    """
    _require_build_config(config)
    with RunDir(out).locked() as run, collections_spaced():
        return _build(config, run, progress=progress, update_corpus=update_corpus, batch=batch, certify=certify)


def _require_build_config(config: object) -> None:
    """A `TypeError` that says what to pass, instead of one from deep inside the build."""
    if not isinstance(config, BuildConfig):
        kind = type(config).__name__
        raise TypeError(
            f"`config` is a {kind}, not a BuildConfig: pass qagen.BuildConfig(...), or "
            f"qagen.BuildConfig.model_validate(your_{kind})."
        )


def _build(
    config: BuildConfig,
    run: RunDir,
    *,
    progress: bool,
    update_corpus: bool,
    batch: BatchOptions | None,
    certify: Certifier | None,
) -> BuildResult:
    tasks = BuildTasks.for_config(config, run.iter_chunks)
    run.open(config, tasks.prompt_hashes())
    for unread in settings_without_effect(config, check_readings(config, tasks)):
        _say(unread)
    if not run.chunking_done():
        # A missing key (or dense extra) is said before the corpus is read, not after chunking all of it.
        for settings in (config.generator, config.critic):
            require_key(settings)
        pairing_embedder(config.pair_embeddings)
    chunk_stage(config, run, progress=progress, update_corpus=update_corpus)
    # Before any round: the labels are of drafts made already, and the threshold they certify holds every round's.
    certified = certify(run, config) if certify is not None and config.precision is not None else None
    config = certified_settings(config, certified)
    # Nothing to call and nothing changed since the outputs were written: they stand.
    if (settled := settled_summary(config, run, tasks)) is not None:
        _say(_UP_TO_DATE)
        if settled.funnel.sampled == 0:
            _raise_no_passages(settled)
        return BuildResult(run.root, with_certified(run, settled, certified))
    ledger = Ledger(run.drafts, run.critiques)
    if config.target is None:
        sample = load_sample(config, run)
        stopped = run_llm_stages(
            config, run, tasks, sample, generate=True, critique=True, progress=progress, ledger=ledger, batch=batch,
            finalizing=True,
        )  # fmt: skip
    else:
        sample, stopped = _draft_to_target(config, run, tasks, ledger, progress=progress, batch=batch)
    left_nothing = stopped is None and ledger.retry_later == 0
    outputs = write_outputs_and_say(config, run, tasks, sample, ledger, settled=left_nothing, certified=certified)
    if stopped is None and outputs.no_draft is not None:
        _raise_nothing_drafted(outputs.no_draft, run)
    if stopped is None and outputs.summary.funnel.sampled == 0:
        _raise_no_passages(outputs.summary)
    return BuildResult(run.root, outputs.summary, stopped)


def certified_settings(config: BuildConfig, certified: Certified | None) -> BuildConfig:
    """The settings that decide the drafts: `config`, holding the certified check to the threshold the labels
    certify when they certify one (`vetting.certified_config`); as they are when nothing is certified (too
    few labels, stale ones, or no precision asked): the summary's `certified` says why."""
    if certified is None or certified.status != "certified":
        return config
    assert certified.threshold is not None, "a certification without its threshold"
    return certified_config(config, certified.threshold, on=certified.cut_on)


def _draft_to_target(
    config: BuildConfig, run: RunDir, tasks: BuildTasks, ledger: Ledger, *, progress: bool, batch: BatchOptions | None
) -> tuple[Sample, str | None]:
    """Draft and critique in rounds until every question type has its part of the target, the draft
    budget is spent or the corpus has no more passages (`qagen.generation.target`); the last round's
    sample, and which spending cap stopped it (None: none did). A draft counts when it passes `config`:
    a certified threshold's too, when it holds one (`certified_settings`), so the rounds' pass rates
    are measured against it."""
    if (none := left_out(config)) is not None:
        _say(none[0].upper() + none[1:])
    plan = starting_round(config, run, tasks, ledger)
    said: set[str] = set()
    while True:
        record_plan(run, plan, config)  # before its calls: a build stopped in this round resumes this round
        sample = load_sample(config, run, plan.drafts)
        if progress:
            _say(f"round {plan.round}: {len(sample)} drafts for a target of {config.target} questions")
        stopped = run_llm_stages(
            config, run, tasks, sample, generate=True, critique=True, progress=progress, ledger=ledger, batch=batch,
            said=said, finalizing=True,
        )  # fmt: skip
        following = next_plan(config, plan, tally(config, tasks, sample, ledger).by_type) if stopped is None else None
        if following is None:
            return sample, stopped
        plan = following


def starting_round(config: BuildConfig, run: RunDir, tasks: BuildTasks, ledger: Ledger) -> Plan:
    """The round a build to a target size starts with in `run` (`target.start_plan`)."""
    recorded = read_round(run)
    if recorded is None:
        return start_plan(config, None, 0, dict)
    # The types of this build only: a type dropped from the shares is no part of its rounds.
    sample = load_sample(config, run, {name: recorded.plan.drafts.get(name, 0) for name in config.question_types})
    return start_plan(config, recorded, len(sample), lambda: tally(config, tasks, sample, ledger).statuses)


def _raise_no_passages(summary: BuildSummary) -> None:
    """A build the corpus could give no draft its passages has nothing to show (an empty dataset with
    exit 0 reads as a success): why, and what to do."""
    missing = passages_missing(summary)
    if missing is not None:
        raise NothingUsableError(
            f"Nothing could be drafted. {missing} Give the build more documents on the same subjects or smaller "
            "chunks (`chunk_size`, in a new `out`), or a question type of one passage beside these "
            "(`question_types`, e.g. factoid=50,multi_hop=50).",
            settings=("chunk_size", "out", "question_types"),
        )


def _raise_nothing_drafted(no_draft: NoDraft, run: RunDir) -> None:
    """A build in which no draft could be read has nothing to show: one sentence on why, with an
    example reply (the outputs are written first, so every failure can be looked at)."""
    raw = " ".join((no_draft.raw or "").split())[:160]
    raise NothingUsableError(
        f"No draft could be read: all {no_draft.candidates} generations failed (mostly {no_draft.reason}, "
        f"{no_draft.times} times; e.g. {no_draft.source_doc}: {raw!r}). Every reply is in {run.candidates_dir}."
    )
