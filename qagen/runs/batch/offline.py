"""Offline batches, for self-hosted models: `qagen.generation.batch_export.export_requests` writes
the next round's requests as a Batch API input file (what `python -m vllm.entrypoints.openai.run_batch
-i requests.jsonl -o results.jsonl` reads), and `import_results` reads a runner's output file into
the run directory's batch cache, from which every later command takes those answers
(`Journal.answer`). The records answered are made at once (`export_requests` with no file), so
`qagen stage filter` and `qagen status` see them. Repeat until the export has nothing left; then the
filter stage writes the dataset.

An export runs the build's own flow with an executor that, at the first round, writes the round's
requests instead of sending them and stops (`export_first_round`): so the requests, their
custom_ids and their order of rounds are those of batch mode and of online mode.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qagen.errors import QagenError
from qagen.llm.backends import ModelSettings
from qagen.llm.client import LLMClient
from qagen.llm.clients import Clients
from qagen.llm.task import Reply, Request
from qagen.runs.batch.executor import BatchExecutor
from qagen.runs.batch.journal import Journal
from qagen.runs.batch.results import read_results
from qagen.runs.batch.rounds import BatchOptions, input_line
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
    """Makes the records whose answers are cached; at the first round, writes its requests to `out`
    (and journals their ids, which an import is matched to) or, with no `out`, only counts them."""

    def __init__(self, clients: Clients, journal: Journal, out: Path | None) -> None:
        super().__init__(clients, journal, BatchOptions(wait=False))
        self.out = out
        self.exported = 0

    async def _round(self) -> None:
        queued, self._queued = self._queued, {}
        self.exported = len(queued)
        if self.out is not None:
            temporary = self.out.with_name(self.out.name + ".tmp")
            with temporary.open("wb") as handle:
                for custom_id, entry in queued.items():
                    handle.write(input_line(custom_id, entry.body))
            temporary.replace(self.out)
            self.journal.write({"event": "exported", "round": self.journal.rounds + 1, "custom_ids": list(queued)})
        raise _RoundExportedError


def offline_client(settings: ModelSettings) -> LLMClient:
    """A client of `settings` that never sends a request: an export's records are made from cached
    answers, and the rest are written to a file instead."""
    return LLMClient(_NoCalls(), settings)


async def export_first_round(
    clients: Clients, journal: Journal, out: Path | None, run: Callable[[BatchExecutor], Awaitable[object]]
) -> int:
    """Run `run` (a flow over an executor) with an executor that makes the records whose answers are
    cached and, at the first round, writes that round's requests to `out` (with no `out`, only counts
    them) and stops the flow there; return how many requests the round has (0: nothing is left to ask)."""
    executor = _ExportExecutor(clients, journal, out)
    with contextlib.suppress(_RoundExportedError):  # raised once the round's requests are in `out`
        await run(executor)
    return executor.exported


def made_offline(run_dir: Path) -> bool:
    """Whether the run's requests go out as offline batch files (`qagen batch export` wrote some):
    what such a run still needs is asked by its next export, not by calls from this machine."""
    return Journal(run_dir).exported is not None


@dataclass(frozen=True)
class Imported:
    """What an imported results file held, counted against the requests of the last export."""

    requests: int
    """Requests in the last exported file."""
    answered: int
    """Requests answered by this file and by no file imported before."""
    answered_before: int
    """Requests this file answers that an earlier import had answered already (ignored)."""
    errors: int
    """Requests with only error lines (asked again by the next export)."""
    malformed: int
    """Requests whose replies are no chat completion (asked again by the next export)."""
    missing: int
    """Requests of the export with no line in the file (asked again by the next export)."""
    duplicates: int
    """Lines for a request an earlier line of the file stood for (ignored)."""
    unknown: int
    """Lines for no request of the export (another round's, another run's: ignored)."""
    new: bool
    """False when the same file was imported before (nothing changes)."""


def import_results(run_dir: Path, results: Path) -> Imported:
    """Cache an offline runner's output file in the run directory for the next export or run,
    its lines matched to the requests of the last export (`read_results`)."""
    RunDir(run_dir).require()
    content = results.read_bytes()
    lines = _output_lines(results, content)
    journal = Journal(run_dir)
    if journal.exported is None:
        raise QagenError(f"No requests were exported from {run_dir} yet; run `qagen batch export {run_dir}` first.")
    requests = journal.exported
    read = read_results(lines, set(requests))
    before = {custom_id for custom_id in read.answers if journal.result(custom_id) is not None}
    local_id = f"local-{hashlib.sha256(content).hexdigest()[:20]}"
    new = journal.by_file(local_id) is None
    imported = Imported(
        requests=len(requests),
        answered=len(read.answers) - len(before) if new else 0,
        answered_before=len(before),
        errors=read.errors,
        malformed=read.malformed,
        missing=len(requests) - len(read.lines),
        duplicates=read.duplicates,
        unknown=read.unknown,
        new=new,
    )
    if not new:
        return imported
    if not read.lines:
        raise QagenError(
            f"None of the {len(lines)} lines of {results} answers a request of the last export from {run_dir} "
            f"({len(requests)} requests): it holds the results of another round or run; give the file the "
            "batch runner wrote from the last exported requests. Nothing was imported."
        )
    journal.cache_dir.mkdir(parents=True, exist_ok=True)
    (journal.cache_dir / f"{local_id}.jsonl").write_bytes(content)
    journal.write(
        {"event": "imported", "file_id": local_id, "batch_id": local_id, "round": journal.rounds + 1,
         "custom_ids": list(read.lines), "results": f"batches/{local_id}.jsonl"}
    )  # fmt: skip
    return imported


def _output_lines(results: Path, content: bytes) -> list[dict[str, Any]]:
    """The lines of a Batch API output file; a requests file, or a line that is no output line, is refused."""
    lines: list[dict[str, Any]] = []
    for number, text in enumerate(content.splitlines(), start=1):
        if not text.strip():
            continue
        try:
            line = json.loads(text)
        except ValueError:
            line = None
        if not isinstance(line, dict) or not isinstance(line.get("custom_id"), str):
            raise QagenError(
                f"Line {number} of {results} is not a batch output line (JSON with a `custom_id`); "
                "give the output file of the batch runner."
            )
        if "body" in line and "response" not in line and "error" not in line:
            raise QagenError(
                f"{results} is a requests file (line {number} has a request `body` and no `response`), not the "
                "results of one; give the output file the batch runner wrote from it (`-o` of vLLM's run_batch)."
            )
        lines.append(line)
    return lines
