"""The critics the early stop skipped, asked for the drafts people label, and for those only.

A draft one critic rejects is not shown to the critics after it (a build saves those calls), so a
rejected draft often has one or two scores. Agreement per criterion needs every labelled draft's
score from every critic, so the missing critics are asked here: through the run's own critic client, the same
tasks and the executor, stored in `critiques.jsonl` like every other critique (a later build or
filter reads them, and no call is ever paid twice). How many calls go out is said before the first
one; with `allow_calls=False` they are refused instead.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NamedTuple

from tqdm import tqdm

from qagen.errors import QagenError
from qagen.generation.critique import CriticTask, Drafted
from qagen.generation.ledger import Ledger
from qagen.generation.tasks import make_budget
from qagen.llm.clients import Clients
from qagen.llm.concurrency import run_coroutine
from qagen.records import CandidateRow, Chunk, Passages
from qagen.review.run_drafts import RunDrafts, read_run_drafts
from qagen.runs.batch.journal import Journal
from qagen.runs.executor import Executor
from qagen.runs.rundir import RunDir


def _say(message: str) -> None:
    tqdm.write(message, file=sys.stderr)


class SkippedCall(NamedTuple):
    """One critic not yet asked about one sampled draft."""

    critic: CriticTask
    drafted: Drafted


def skipped_calls(drafts: RunDrafts, ledger: Ledger, draft_ids: Iterable[str]) -> list[SkippedCall]:
    """The critic calls the drafts `draft_ids` still need: critics never asked, or asked without a
    reply (a failed call the next run would make again). A critic that replied, even unreadably, was
    paid for and is not asked again."""
    calls: list[SkippedCall] = []
    for draft_id in draft_ids:
        row = drafts.get(draft_id)
        draft = ledger.drafts.get(draft_id) if row is not None else None
        if row is None or draft is None or not draft.ok:
            continue
        item = _passages_of(row)
        drafted = drafts.tasks.drafted(draft, item)
        for critic in drafts.tasks.of(item).critics:
            state = ledger.critiques.state(critic.key(drafted))
            if state is None or state.retry:
                calls.append(SkippedCall(critic, drafted))
    return calls


def ask_skipped_critics(
    run_dir: Path,
    draft_ids: Iterable[str],
    *,
    allow_calls: bool = True,
    progress: bool = False,
    say: Callable[[str], None] | None = None,
) -> int:
    """Ask the critics `draft_ids` miss (see the module); return how many calls were made.

    Says how many calls it makes before the first one. With `allow_calls=False` it makes none and
    raises `QagenError` when some are needed. Holds the run directory's lock while it asks.
    """
    ids = list(draft_ids)
    with RunDir(run_dir).locked() as run:
        drafts = read_run_drafts(run.root)
        ledger = Ledger.read(run)
        calls = skipped_calls(drafts, ledger, ids)
        if not calls:
            ledger.close()
            return 0
        count = Counter(call.critic.criterion for call in calls)
        which = ", ".join(f"{n} {criterion}" for criterion, n in sorted(count.items()))
        drafts_needing = len({call.drafted.draft.id for call in calls})
        what = (
            f"{len(calls)} critic call{'s' if len(calls) != 1 else ''} ({which}) for the {drafts_needing} sampled "
            f"draft{'s' if drafts_needing != 1 else ''} whose critics stopped early, so every labelled draft has every "
            "critic's verdict"
        )
        if not allow_calls:
            ledger.close()
            raise QagenError(
                f"Labelling {run_dir} needs {what}; they were not made (`allow_calls=False`). Allow the calls to go "
                "on: they are stored in the run like its other critiques and never paid twice.",
                settings=("allow_calls=False",),
            )
        (say or _say)(f"asking {what} (model {drafts.config.critic.spec})")
        try:
            _ask(drafts, ledger, calls, progress=progress)
        finally:
            ledger.close()
    return len(calls)


def _ask(drafts: RunDrafts, ledger: Ledger, calls: list[SkippedCall], *, progress: bool) -> None:
    config = drafts.config
    stopped: list[str] = []

    async def main() -> None:
        clients = Clients.connect({"critic": config.critic}, config.call_limits())
        try:
            with ledger.appending():
                budget = make_budget(config, ledger.spent())
                executor = Executor(
                    clients, workers=config.concurrency, budget=budget, answers=Journal(drafts.run.root)
                )

                async def ask(call: SkippedCall) -> None:
                    await executor.run(call.critic, call.drafted, ledger.critique_store)

                await executor.map(calls, ask, label="critiquing the sample", unit="call", progress=progress)
            if budget is not None and budget.reached:
                stopped.append(budget.describe())
            else:
                clients.check_failure_rates()
        finally:
            await clients.aclose()

    run_coroutine(main())
    if stopped:
        raise QagenError(
            f"Stopped asking the skipped critics: {stopped[0]}. The critiques made are saved; raise the cap and "
            "do the same again to ask the rest."
        )


def _passages_of(row: CandidateRow) -> Passages:
    """The passages a candidate row was drafted from (the row holds all of them)."""
    if not row.chunk_ids:  # a build of factoids alone: the one chunk of the cookbook's columns
        source, chunk_id, start, end = row.source_doc, row.chunk_id, row.start_index, row.end_index
        if source is None or chunk_id is None or start is None or end is None:
            # Only a question with no retrieval target leaves them empty, and such a type is drafted by
            # builds of several types, whose rows name their passages in `chunk_ids`.
            raise QagenError(
                f"Candidate {row.id} names no passage: the run's candidates/ is damaged; `qagen stage filter` on "
                "the run writes it again."
            )
        chunk = Chunk(id=chunk_id, source=source, text=row.context, start_index=start, end_index=end)
        return Passages(question_type=row.question_type, chunks=(chunk,))
    chunks = tuple(
        Chunk(id=chunk_id, source=source, text=text, start_index=start, end_index=end)
        for chunk_id, source, text, start, end in zip(
            row.chunk_ids, row.source_docs, row.contexts, row.start_indices, row.end_indices, strict=True
        )
    )
    return Passages(question_type=row.question_type, chunks=chunks)
