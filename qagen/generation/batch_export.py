"""`qagen batch export`: the next round of a build's requests, written as a Batch API input file for
a self-hosted runner (`qagen.runs.batch.offline` makes the records already answered and writes the
round; `import_results` there reads the runner's output back)."""

from __future__ import annotations

from pathlib import Path

from qagen.config import BuildConfig
from qagen.errors import QagenError
from qagen.generation.ledger import Ledger
from qagen.generation.pipeline import load_sample
from qagen.generation.tasks import BuildFlow, BuildTasks
from qagen.llm.clients import Clients
from qagen.llm.concurrency import run_coroutine
from qagen.runs.batch.executor import BatchExecutor
from qagen.runs.batch.journal import Journal
from qagen.runs.batch.offline import export_first_round, offline_client
from qagen.runs.rundir import RunDir


def export_requests(config: BuildConfig, run_dir: Path, out: Path | None) -> int:
    """Make the records whose answers are cached, and write the next round's requests to `out`;
    return how many (0: nothing is left to ask). With `out` None, nothing is written: the
    records are made and the next round's requests only counted (what an import does)."""
    run = RunDir(run_dir)
    tasks = BuildTasks.for_config(config, run.iter_chunks)
    run.open(config, tasks.prompt_hashes())
    if not run.chunking_done():
        raise QagenError(f"{run_dir} has no chunks yet; chunk the corpus first.")
    sample = load_sample(config, run)
    exported: list[int] = []

    async def main() -> None:
        clients = Clients({"generator": offline_client(config.generator), "critic": offline_client(config.critic)})
        ledger = Ledger.read(run)
        with ledger.appending():

            async def draft_all(executor: BatchExecutor) -> None:
                flow = BuildFlow(tasks, config, executor, ledger)
                await executor.map(sample, flow, label="exporting", unit="draft", progress=False)

            exported.append(await export_first_round(clients, Journal(run.root), out, draft_all))

    run_coroutine(main())
    return exported[0]
