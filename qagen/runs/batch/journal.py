"""The batch journal of a run directory (`batches.jsonl`) and its cache of results (`batches/`).

Every remote step of batch mode is written down around the step itself, so that re-running the
command after a crash, a Ctrl-C or a reboot never uploads or submits a request twice:

- `uploading` (the file's name, which is the hash of its content) before the upload, `uploaded`
  (its id and the custom_ids it holds) after; an `uploading` with no `uploaded` is looked for on the
  server by that name before anything is uploaded again;
- `submitting` (the input file) before a batch is created, `submitted` (the batch id) after; a
  `submitting` with no `submitted` is looked for among the server's batches by its input file;
- `state` whenever a poll sees a batch's status change (for `qagen status`);
- `cached` once a finished batch's output and error files are saved under `batches/`: from then
  on its results are read from there, never downloaded again; `imported` for a results file of an
  offline runner (`qagen batch import`), which is cached the same way;
- `batched`: the ids of the records made from batch results (once per round), so that summaries
  price them at batch prices, and the others, made online, at online prices.
- `exported`: the custom_ids of the requests file `qagen batch export` wrote last, the requests an
  imported results file is matched to.

A custom_id is the sha256 of the request body (`request_id`): the same request in any run, round
or machine has the same id, which is how results are matched to requests (`read_results`). An
answer in the cache is never asked for again, by any executor (`Journal.answer`).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qagen.llm.completions import chat_body
from qagen.llm.task import Outcome, Request
from qagen.runs.batch.results import read_results, reply_of

if TYPE_CHECKING:
    from qagen.llm.backends import ModelSettings

FINAL_STATES = frozenset({"completed", "expired", "failed", "cancelled"})


def request_id(body: bytes) -> str:
    """The custom_id of a request: the sha256 of its body as sent."""
    return hashlib.sha256(body).hexdigest()


def encode_body(body: dict[str, object]) -> bytes:
    """A request body as the `openai` client serialises it (compact, UTF-8, in key order)."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


@dataclass
class JournalBatch:
    """One uploaded input file, and the batch made of it (once submitted)."""

    file_id: str
    endpoint: str
    round: int
    custom_ids: list[str]
    batch_id: str | None = None
    status: str = "uploaded"
    counts: dict[str, int] = field(default_factory=dict)
    results: str | None = None
    """The cached results file, relative to the run directory (once the batch is finished)."""
    submitting: bool = False

    @property
    def active(self) -> bool:
        """Submitted (or being submitted), and its results not cached yet: poll it, never resubmit."""
        return self.results is None and (self.batch_id is not None or self.submitting)


class Journal:
    """The journal of one run directory, replayed into its batches; appends are flushed and synced."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.path = root / "batches.jsonl"
        self.cache_dir = root / "batches"
        self.batches: list[JournalBatch] = []
        self.uploading: dict[str, tuple[str, int, list[str]]] = {}  # name -> endpoint, round, ids
        self.batched: set[str] = set()
        """The ids of the records made from batch results (paid at batch prices)."""
        self.exported: list[str] | None = None
        """The custom_ids of the last requests file `qagen batch export` wrote (None: none yet)."""
        self._results: dict[str, dict[str, Any]] | None = None
        for event in self._events():
            self._apply(event)

    # --- reading ---------------------------------------------------------------------------------
    def _events(self) -> Iterator[dict[str, Any]]:
        if not self.path.exists():
            return
        for line in self.path.read_bytes().splitlines():
            try:
                yield json.loads(line)
            except ValueError:  # not JSON, or not UTF-8 (both ValueErrors)
                continue  # a line torn by a kill mid-write: its step is redone (the steps are idempotent)

    def _apply(self, event: dict[str, Any]) -> None:
        kind = event["event"]
        if kind == "uploading":
            self.uploading[event["name"]] = (event["endpoint"], event["round"], event["custom_ids"])
        elif kind == "uploaded":
            self.uploading.pop(event.get("name", ""), None)
            self.batches.append(JournalBatch(event["file_id"], event["endpoint"], event["round"], event["custom_ids"]))
        elif kind == "batched":
            self.batched.update(event["ids"])
        elif kind == "exported":
            self.exported = event["custom_ids"]
        elif kind == "imported":
            local = JournalBatch(event["file_id"], "offline", event["round"], event["custom_ids"], event["batch_id"])
            local.status, local.results = "imported", event["results"]
            self.batches.append(local)
        else:
            batch = self.by_file(event["file_id"])
            if batch is None:
                return
            if kind == "submitting":
                batch.submitting = True
            elif kind == "submitted":
                batch.batch_id, batch.status = event["batch_id"], event["status"]
            elif kind == "state":
                batch.status, batch.counts = event["status"], event["counts"]
            elif kind == "cached":
                batch.results = event["results"]

    def by_file(self, file_id: str) -> JournalBatch | None:
        return next((batch for batch in self.batches if batch.file_id == file_id), None)

    def active(self, endpoint: str) -> list[JournalBatch]:
        """The endpoint's batches that are submitted and not finished with."""
        return [batch for batch in self.batches if batch.endpoint == endpoint and batch.active]

    @property
    def rounds(self) -> int:
        return max((batch.round for batch in self.batches), default=0)

    def result(self, custom_id: str) -> dict[str, Any] | None:
        """The cached answer to a request: the chat-completion body of a result line, if any.

        Error lines and bodies that are no chat completion are not served from the cache: the run
        they came back in recorded them as failures, and a later run asks again."""
        if self._results is None:
            self._results = {}
            for batch in self.batches:
                if batch.results is not None:
                    answers = read_results(_read_lines(self.root / batch.results), set(batch.custom_ids)).answers
                    for answered, body in answers.items():
                        self._results.setdefault(answered, body)
        return self._results.get(custom_id)

    @property
    def has_results(self) -> bool:
        """Whether any batch's results are cached here (else no request can be answered from here)."""
        return any(batch.results is not None for batch in self.batches)

    def answer(self, settings: ModelSettings, request: Request) -> Outcome | None:
        """The outcome of a request already answered in a batch of this run (None: never answered):
        whichever executor meets the request again takes it from here instead of paying for it twice."""
        if not self.has_results:
            return None
        cached = self.result(request_id(encode_body(chat_body(settings, request))))
        return None if cached is None else reply_of(cached)

    # --- writing ---------------------------------------------------------------------------------
    def write(self, event: dict[str, Any]) -> None:
        """Append one event and sync it to disk before the step it announces (or after the one it records)."""
        event = {**event, "time": round(time.time(), 3)}
        self.root.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(event) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        self._apply(event)

    def mark_batched(self, record_ids: list[str]) -> None:
        """Note records made from batch results (a record made again online later is not one)."""
        if record_ids:
            self.write({"event": "batched", "ids": record_ids})

    def cache(self, batch: JournalBatch, name: str, content: bytes) -> None:
        """Save a finished batch's results (output and error lines together), then journal them."""
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        target = self.cache_dir / name
        temporary = target.with_name(target.name + ".tmp")
        temporary.write_bytes(content)
        with temporary.open("rb") as handle:
            os.fsync(handle.fileno())
        temporary.replace(target)
        self.write({"event": "cached", "file_id": batch.file_id, "results": f"batches/{name}"})
        self._results = None

    def results_of(self, batch: JournalBatch) -> list[dict[str, Any]]:
        """Every line of a finished batch's cached results."""
        return [] if batch.results is None else list(_read_lines(self.root / batch.results))


def _read_lines(path: Path) -> Iterator[dict[str, Any]]:
    for text in path.read_bytes().splitlines():
        if text.strip():
            line = json.loads(text)
            if isinstance(line, dict):
                yield line
