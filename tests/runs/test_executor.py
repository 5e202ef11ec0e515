"""The executor: skip finished keys, redo only retryable failures, and a progress line that says
what the calls are waiting on."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from qagen.failures import Failure, FailureKind
from qagen.generation.draft import DraftTask
from qagen.llm.backends import ModelSettings
from qagen.llm.client import LLMClient
from qagen.llm.clients import CallLimits, Clients
from qagen.llm.retries import retry_count
from qagen.llm.task import Reply, Request, user_request
from qagen.records import Chunk, Draft, Usage
from qagen.runs import executor as executor_module
from qagen.runs.executor import Executor
from qagen.runs.store import RecordLog
from qagen.testing.llm.server import StandInLLM

CHUNK = Chunk(id="c1", source="a.txt", text="The sky is blue.", start_index=0, end_index=16)


class SlowBackend:
    """Answers every request with a factoid pair after `delay` seconds, counting the calls."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.calls = 0

    async def reply(self, request: Request) -> Reply:
        self.calls += 1
        await asyncio.sleep(self.delay)
        return Reply("Factoid question: What colour is the sky?\nAnswer: Blue.", Usage(input_tokens=5, output_tokens=4))

    async def aclose(self) -> None:
        """Nothing to close."""


def _clients(backend: SlowBackend) -> Clients:
    client = LLMClient(backend, ModelSettings(spec="scripted:generator"))
    return Clients.connect({"generator": client}, CallLimits(concurrency=2, max_failure_rate=1.0))


def test_finished_keys_are_skipped_and_only_retryable_failures_redone(tmp_path: Path) -> None:
    log = RecordLog(tmp_path / "drafts.jsonl", Draft)
    task = DraftTask("scripted:generator")
    unreadable = Chunk(id="c2", source="a.txt", text="Other.", start_index=20, end_index=26)
    with log.writer() as out:  # an earlier run: one call failed, one reply was unreadable
        out.append(task.failed(CHUNK, Failure.of(FailureKind.RATE_LIMITED, "429")))
        out.append(task.failed(unreadable, Failure.of(FailureKind.REFUSAL), Reply("I cannot.", Usage())))
    backend = SlowBackend()

    async def run() -> None:
        with log.open() as drafts:
            executor = Executor(_clients(backend), workers=2)
            for chunk in (CHUNK, unreadable, CHUNK):
                await executor.run(task, chunk, drafts)

    asyncio.run(run())
    records = log.load()
    assert backend.calls == 1  # the failed call redone once; the refusal and the finished draft not again
    assert records[task.key(CHUNK)].ok and records[task.key(unreadable)].reason == "refusal"


def test_the_progress_line_says_when_a_reply_is_long_in_coming(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(executor_module, "_LONG_WAIT_SECONDS", 0.2)
    backend = SlowBackend(delay=0.6)
    seen: list[str] = []

    async def run() -> None:
        clients = _clients(backend)
        executor = Executor(clients, workers=1)
        call = asyncio.ensure_future(clients["generator"].complete(user_request("hello")))
        await asyncio.sleep(0.05)
        seen.append(executor.status())
        await asyncio.sleep(0.3)
        seen.append(executor.status())
        await call
        seen.append(executor.status())

    asyncio.run(run())
    assert "waiting" not in seen[0]
    assert "waiting 0 s for a reply" in seen[1] or "waiting 1 s for a reply" in seen[1]
    assert "waiting" not in seen[2] and seen[2].startswith("calls=1")


def test_the_progress_line_says_when_calls_are_being_retried() -> None:
    before = retry_count().retries

    async def run(server: StandInLLM) -> None:
        settings = ModelSettings(spec="openai:stand-in", base_url=server.base_url, max_retries=2)
        clients = Clients.connect({"generator": settings}, CallLimits(concurrency=1))
        executor = Executor(clients, workers=1)
        try:
            outcome = await clients["generator"].complete(user_request("hello"))
            assert isinstance(outcome, Reply)
            assert "retrying (1 retries so far" in executor.status(before)
        finally:
            await clients.aclose()

    with StandInLLM(fault_rate=1.0, fault_kinds=["429"], fault_attempts=1, retry_after=0.0) as server:
        asyncio.run(run(server))
    assert retry_count().retries == before + 1
