"""One round of batch mode on one endpoint: the requests waiting for it are uploaded and submitted
(or, after a restart, found in the journal and polled), the batches polled with backoff until they
finish, their results cached, and every request's outcome read from them.

Each remote step is journalled around itself (`qagen.runs.batch.journal`), so a round interrupted
anywhere is resumed by the next run without uploading or submitting anything twice.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from qagen.errors import LLMUnavailableError
from qagen.llm.client import NO_REPLY, connection_problem
from qagen.redaction import redact
from qagen.runs.batch.api import CHAT_URL, BatchAPI, BatchState
from qagen.runs.batch.journal import FINAL_STATES, Journal, JournalBatch
from qagen.runs.batch.results import LineOutcome, outcome_of, read_results


@dataclass(frozen=True)
class BatchOptions:
    """How batch mode waits for its batches."""

    wait: bool = True
    """Poll until every batch of a round is finished; False: submit (or poll once) and return."""
    poll_seconds: float = 10.0
    """Seconds before the second poll of a round; the wait doubles after each poll, up to `max_poll_seconds`."""
    max_poll_seconds: float = 300.0


def input_line(custom_id: str, body: bytes) -> bytes:
    """One line of a Batch API input file; the body goes in as the very bytes an online call sends."""
    head = f'{{"custom_id":"{custom_id}","method":"POST","url":"{CHAT_URL}","body":'.encode()
    return head + body + b"}\n"


def input_file(requests: Mapping[str, bytes]) -> tuple[str, bytes]:
    """The name (the hash of the content: an interrupted upload is found by it) and content of an
    input file; its lines in custom_id order, so that the same requests make the same file however
    the flows happened to queue them."""
    content = b"".join(input_line(custom_id, requests[custom_id]) for custom_id in sorted(requests))
    return f"qagen-{hashlib.sha256(content).hexdigest()[:20]}.jsonl", content


Progress = Callable[[str], None]


class Round:
    """The batches of one endpoint for one round."""

    def __init__(self, api: BatchAPI, journal: Journal, endpoint: str, options: BatchOptions, say: Progress) -> None:
        self.api = api
        self.journal = journal
        self.endpoint = endpoint
        self.options = options
        self.say = say

    async def run(self, requests: Mapping[str, bytes], number: int) -> dict[str, LineOutcome] | None:
        """Every request's outcome; None when not waiting and a batch is still running."""
        ids = set(requests)
        batches = [batch for batch in self.journal.active(self.endpoint) if ids & set(batch.custom_ids)]
        covered = {custom_id for batch in batches for custom_id in batch.custom_ids}
        fresh = {custom_id: body for custom_id, body in requests.items() if custom_id not in covered}
        if fresh:
            batches.append(await self._upload(fresh, number))
        for batch in batches:
            if batch.batch_id is None:
                await self._submit(batch)
        states = await self._poll(batches)
        if states is None:
            return None
        outcomes: dict[str, LineOutcome] = {}
        for batch, state in zip(batches, states, strict=True):
            if batch.results is None:
                await self._download(batch, state)
            lines = read_results(self.journal.results_of(batch), set(batch.custom_ids)).lines
            for custom_id in batch.custom_ids:
                if custom_id in ids:
                    outcomes[custom_id] = outcome_of(lines.get(custom_id), state.id, state.status)
        return outcomes

    async def _upload(self, requests: Mapping[str, bytes], number: int) -> JournalBatch:
        name, content = input_file(requests)
        file_id = (
            await _remote(self.api.find_upload(name), "list the uploaded files", self.api.where)
            if name in self.journal.uploading
            else None
        )
        if file_id is None:
            ids = list(requests)
            self.journal.write(
                {"event": "uploading", "name": name, "endpoint": self.endpoint, "round": number, "custom_ids": ids}
            )
            file_id = await _remote(self.api.upload(name, content), "upload a batch input file", self.api.where)
        self.journal.write(
            {"event": "uploaded", "name": name, "file_id": file_id, "endpoint": self.endpoint, "round": number,
             "custom_ids": list(requests)}
        )  # fmt: skip
        batch = self.journal.by_file(file_id)
        assert batch is not None
        self.say(f"round {number}: uploaded {len(requests)} requests ({file_id})")
        return batch

    async def _submit(self, batch: JournalBatch) -> None:
        found = (
            await _remote(self.api.find_batch(batch.file_id), "list the batches", self.api.where)
            if batch.submitting
            else None
        )
        if found is None:
            self.journal.write({"event": "submitting", "file_id": batch.file_id})
            found = await _remote(self.api.submit(batch.file_id), "submit a batch", self.api.where)
        self.journal.write(
            {"event": "submitted", "file_id": batch.file_id, "batch_id": found.id, "status": found.status}
        )
        self.say(f"round {batch.round}: submitted batch {found.id}")

    async def _poll(self, batches: Sequence[JournalBatch]) -> list[BatchState] | None:
        delay = self.options.poll_seconds
        while True:
            states = [await self._retrieve(batch) for batch in batches]
            done = sum(state.completed + state.failed for state in states)
            total = sum(state.total for state in states)
            words = ", ".join(f"{state.id} {state.status}" for state in states)
            self.say(f"round {batches[0].round}: {words} ({done}/{total} requests)")
            if all(state.status in FINAL_STATES for state in states):
                return states
            if not self.options.wait:
                return None
            await asyncio.sleep(delay)
            delay = min(delay * 2, self.options.max_poll_seconds)

    async def _retrieve(self, batch: JournalBatch) -> BatchState:
        assert batch.batch_id is not None
        if batch.results is not None:  # finished and cached by an earlier run: no call needed
            return BatchState(batch.batch_id, batch.status, 0, 0, 0, None, None)
        state: BatchState = await _remote(
            self.api.retrieve(batch.batch_id), f"poll batch {batch.batch_id}", self.api.where
        )
        if state.status != batch.status or state.counts != batch.counts:
            self.journal.write(
                {"event": "state", "file_id": batch.file_id, "status": state.status, "counts": state.counts}
            )
        return state

    async def _download(self, batch: JournalBatch, state: BatchState) -> None:
        parts = []
        for file_id in (state.output_file_id, state.error_file_id):
            if file_id:
                content = await _remote(
                    self.api.content(file_id), f"download the results of batch {state.id}", self.api.where
                )
                parts.append(content if content.endswith(b"\n") or not content else content + b"\n")
        self.journal.cache(batch, f"{state.id}.jsonl", b"".join(parts))


class RemoteStepError(LLMUnavailableError):
    """A remote step of batch mode failed (after the client's retries); `status` is its HTTP status."""

    def __init__(self, message: str, status: int | None, *, settings: tuple[str, ...] = ()) -> None:
        super().__init__(message, settings=settings)
        self.status = status


async def _remote(call: Any, what: str, where: str) -> Any:
    """A remote step whose failure (after the client's retries) stops the run in one sentence;
    everything done so far is journalled, so re-running continues from there."""
    import openai

    try:
        return await call
    except openai.APIConnectionError as exc:  # a timeout too: the cause tells which (a refused connection, ...)
        problem = connection_problem(exc)
        problem = "no reply within `timeout`" if problem == NO_REPLY else problem
        raise RemoteStepError(
            f"Could not {what}: cannot reach {where} ({problem});"
            " is the server running and is `base_url` right? The batches submitted so far are recorded in the "
            "output directory: re-run the same command once it answers.",
            None,
            settings=("base_url",),
        ) from None
    except openai.APIError as exc:
        status = getattr(exc, "status_code", None)
        if status in _NO_BATCH_API_STATUSES and what in _BATCH_API_STEPS:
            raise RemoteStepError(
                f"{where} has no Batch API (it answered {status} when asked to {what}); run without `batch`, "
                "or export the requests for an offline batch runner (`qagen batch export`).",
                status,
                settings=("batch",),
            ) from None
        raise RemoteStepError(
            f"Could not {what} ({redact(type(exc).__name__ + ': ' + ' '.join(str(exc).split()))[:200]}); the batches "
            "submitted so far are recorded in the output directory: re-run the same command to continue.",
            status,
        ) from None


_NO_BATCH_API_STATUSES = frozenset({404, 405, 501})
"""Statuses of a server with no `/v1/files` or `/v1/batches` (vLLM's and llama.cpp's online servers)."""
_BATCH_API_STEPS = frozenset(
    {"upload a batch input file", "list the uploaded files", "submit a batch", "list the batches"}
)
