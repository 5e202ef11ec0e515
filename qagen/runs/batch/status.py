"""Where a run directory stands (`qagen status`): its batch rounds and batches, records, and spend."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from qagen.llm.cost import BatchTally, cached_note, cost_of, price_for
from qagen.llm.task import add_usage
from qagen.runs.batch.journal import Journal
from qagen.runs.rundir import RunDir


def describe_run(run_dir: Path, about: Callable[[RunDir], list[str]] | None = None) -> str:
    """Some lines saying what a run directory holds and what it waits for; `about`: lines on what was
    made of its records (a build's funnel and target), said after the first."""
    run = RunDir(run_dir)
    run.require()
    journal = Journal(run_dir)
    # A pair read from a reply of several is no call: the reply's record is (`Draft.reply_id`).
    drafts = {key: draft for key, draft in run.drafts.load().items() if draft.reply_id is None}
    critiques = run.critiques.load()
    lines = [f"run directory {run_dir}", *(about(run) if about is not None else [])]
    # Calls, not drafts: a multi-hop draft's parts are records of their own, and so is a draft outside the sample.
    lines.append(
        f"  records, one per call: {len(drafts):,} drafting ({sum(d.failure is not None for d in drafts.values()):,} "
        f"failed), {len(critiques):,} critic ({sum(c.failure is not None for c in critiques.values()):,} failed)"
    )
    spent: dict[str, tuple[BatchTally, BatchTally]] = {}  # model -> online, in batches
    for record in [*drafts.values(), *critiques.values()]:
        online, in_batches = spent.setdefault(record.model, (BatchTally(), BatchTally()))
        (in_batches if record.id in journal.batched else online).add(1, record.usage)
    for model, (online, in_batches) in sorted(spent.items()):
        tokens = add_usage(online.usage, in_batches.usage)
        price = price_for(model)
        cost = ""
        if price is not None:
            paid = cost_of(online.usage, price) + cost_of(in_batches.usage, price.batch())
            cost = f", ${paid:.4f} (${cost_of(tokens, price):.4f} at online prices)"
        batched = f"; {in_batches.calls:,} records from batches, at batch prices" if in_batches.calls else ""
        lines.append(
            f"  spent on {model}: {tokens.input_tokens:,} input{cached_note(tokens.cached_input_tokens)} + "
            f"{tokens.output_tokens:,} output tokens{cost}{batched}"
        )
    if not journal.batches:
        lines.append("  batches: none")
    else:
        lines.append(f"  batch rounds: {journal.rounds}")
        for batch in journal.batches:
            counts = batch.counts
            done = (
                f" {counts.get('completed', 0)}/{counts.get('total', 0)} done, {counts.get('failed', 0)} failed"
                if counts
                else ""
            )
            state = "results saved" if batch.results else "waiting" if batch.active else "not submitted"
            lines.append(
                f"  round {batch.round}: {batch.batch_id or batch.file_id} {batch.status}{done}, "
                f"{len(batch.custom_ids):,} requests ({state})"
            )
        if any(batch.active for batch in journal.batches):
            lines.append("  run the same command again to collect the running batches")
    return "\n".join(lines)
