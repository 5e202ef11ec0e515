"""Offline batches, for self-hosted models: `export_requests` writes the next round's requests as a
Batch API input file (what `python -m vllm.entrypoints.openai.run_batch -i requests.jsonl -o
results.jsonl` reads), and `import_results` reads a runner's output file into the run directory's
batch cache, from which the next export (or run) takes those answers. Repeat until the export has
nothing left; then the filter stage writes the dataset.

Export runs the build's own flow with an executor that, at the first round, writes the round's
requests instead of sending them and stops: so the requests, their custom_ids and their order of
rounds are those of batch mode and of online mode.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from qagen.config import BuildConfig
from qagen.errors import QagenError
from qagen.generation.ledger import Ledger
from qagen.generation.pipeline import load_sample
from qagen.generation.tasks import BuildFlow, BuildTasks
from qagen.llm.backends import ModelSettings
from qagen.llm.client import LLMClient
from qagen.llm.clients import Clients
from qagen.llm.task import Reply, Request
from qagen.runs.batch.executor import BatchExecutor
from qagen.runs.batch.journal import Journal
from qagen.runs.batch.rounds import BatchOptions, input_line
from qagen.runs.concurrency import run_coroutine
from qagen.runs.rundir import RunDir


class _RoundExportedError(Exception):
    """The first round is written: the flows stop there."""


class _NoCalls:
    """The backend of an export: nothing is ever sent from here."""

    async def reply(self, request: Request) -> Reply:
        raise AssertionError("an export makes no call")

    async def aclose(self) -> None:
        """Nothing to close."""


class _ExportExecutor(BatchExecutor):
    def __init__(self, clients: Clients, journal: Journal, out: Path) -> None:
        super().__init__(clients, journal, BatchOptions(wait=False))
        self.out = out
        self.exported = 0

    async def _round(self) -> None:
        queued, self._queued = self._queued, {}
        temporary = self.out.with_name(self.out.name + ".tmp")
        with temporary.open("wb") as handle:
            for custom_id, entry in queued.items():
                handle.write(input_line(custom_id, entry.body))
        temporary.replace(self.out)
        self.exported = len(queued)
        raise _RoundExportedError


def export_requests(config: BuildConfig, run_dir: Path, out: Path) -> int:
    """Write the next round's requests to `out`; return how many (0: nothing is left to ask)."""
    run = RunDir(run_dir)
    tasks = BuildTasks.for_config(config, run.iter_chunks)
    run.open(config, tasks.prompt_hashes())
    if not run.chunking_done():
        raise QagenError(f"{run_dir} has no chunks yet; chunk the corpus first.")
    sample = load_sample(config, run)
    exported: list[int] = []

    async def main() -> None:
        def offline(settings: ModelSettings) -> LLMClient:
            return LLMClient(_NoCalls(), settings)

        clients = Clients({"generator": offline(config.generator), "critic": offline(config.critic)})
        ledger = Ledger.read(run)
        with ledger.appending():
            executor = _ExportExecutor(clients, Journal(run.root), out)
            flow = BuildFlow(tasks, config, executor, ledger)
            with contextlib.suppress(_RoundExportedError):  # raised once the round's requests are in `out`
                await executor.map(sample, flow, label="exporting", unit="draft", progress=False)
            exported.append(executor.exported)

    run_coroutine(main())
    return exported[0]


@dataclass(frozen=True)
class Imported:
    """What an imported results file held."""

    lines: int
    answered: int
    errors: int
    new: bool
    """False when the same file was imported before (nothing changes)."""


def import_results(run_dir: Path, results: Path) -> Imported:
    """Cache an offline runner's output file in the run directory for the next export or run."""
    RunDir(run_dir).require()
    content = results.read_bytes()
    custom_ids: list[str] = []
    answered = 0
    for number, text in enumerate(content.splitlines(), start=1):
        if not text.strip():
            continue
        try:
            line = json.loads(text)
            custom_id = str(line["custom_id"])
        except (ValueError, KeyError, TypeError):
            raise QagenError(
                f"Line {number} of {results} is not a batch output line (JSON with a `custom_id`); "
                "give the output file of the batch runner."
            ) from None
        custom_ids.append(custom_id)
        answered += (line.get("response") or {}).get("status_code") == 200
    journal = Journal(run_dir)
    local_id = f"local-{hashlib.sha256(content).hexdigest()[:20]}"
    if journal.by_file(local_id) is not None:
        return Imported(len(custom_ids), answered, len(custom_ids) - answered, new=False)
    journal.cache_dir.mkdir(parents=True, exist_ok=True)
    (journal.cache_dir / f"{local_id}.jsonl").write_bytes(content)
    journal.write(
        {"event": "imported", "file_id": local_id, "batch_id": local_id, "round": journal.rounds + 1,
         "custom_ids": custom_ids, "results": f"batches/{local_id}.jsonl"}
    )  # fmt: skip
    return Imported(len(custom_ids), answered, len(custom_ids) - answered, new=True)
