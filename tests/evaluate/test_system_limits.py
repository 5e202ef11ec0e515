"""What the evaluation takes from the system under test, and how long it waits for it.

- A RAG system's answer (or context) over `MAX_REPLY_CHARS` is cut to it, as a model's reply is,
  before any judge reads it; the row says what was cut and from how long.
- `--timeout` and `--max-retries` reach `--endpoint` and `--rag` as they reach the models.
- A `--rag` function calling `sys.exit` fails its questions; it does not end the evaluation.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import qagen.llm.backends as backends
from qagen.cli.app import main
from qagen.output_cap import MAX_REPLY_CHARS
from standins.llm.server import StandInLLM

QUESTIONS = ["When was the lighthouse built?", "Who keeps the glacier records?"]
HUGE = 2_000_000


@pytest.fixture()
def testset(tmp_path: Path) -> Path:
    path = tmp_path / "testset.jsonl"
    path.write_text("".join(json.dumps({"question": q, "answer": f"Reference for {q}"}) + "\n" for q in QUESTIONS))
    return path


def rag_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str) -> str:
    """A `--rag` spec for `def answer(question): <body>` in a module of its own, found from the cwd."""
    name = f"qagen_test_rag_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(f"import sys, time\n\n\ndef answer(question):\n    {body}\n")
    monkeypatch.chdir(tmp_path)
    return f"{name}:answer"


def evaluate(testset: Path, out: Path, *args: object) -> Result:
    command = ["evaluate", str(testset), "--out", str(out), "-q", *map(str, args)]
    return CliRunner().invoke(main, command, catch_exceptions=False)


def rows(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def test_a_2mb_answer_reaches_the_judges_capped_and_the_row_says_so(
    testset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, llm: StandInLLM
) -> None:
    sent: list[int] = []  # the size of every request body a model was sent
    real_chat_body = backends.chat_body

    def recording_chat_body(*args: Any, **kwargs: Any) -> dict[str, Any]:
        body = real_chat_body(*args, **kwargs)
        sent.append(len(json.dumps(body)))
        return body

    monkeypatch.setattr(backends, "chat_body", recording_chat_body)
    spec = rag_module(
        tmp_path, monkeypatch, f"return {{'answer': 'x' * {HUGE}, 'contexts': ['y' * {HUGE}, 'a short passage']}}"
    )
    out = tmp_path / "eval"
    result = evaluate(
        testset, out, "--rag", spec, "--metrics", "correctness",
        "--reader-model", "openai:stand-in", "--base-url", llm.base_url,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert sent, "the judges were never asked"
    # Each judge prompt holds the capped answer, never 2 MB of it.
    assert max(sent) < MAX_REPLY_CHARS + 20_000
    for row in rows(out):
        assert row["output_cut"] == {"answer": HUGE, "context 0": HUGE}
        assert len(row["generated_answer"]) < MAX_REPLY_CHARS + 200
        assert row["generated_answer"].endswith(f"after {MAX_REPLY_CHARS:,} of its {HUGE:,} characters]")
        assert row["retrieved_docs"][1] == "a short passage"  # what fits is untouched
        assert row["correctness"] is not None
    stored = [json.loads(line) for line in (out / "answers.jsonl").read_text().splitlines()]
    assert all(record["output"]["cut"] == {"answer": HUGE, "context 0": HUGE} for record in stored)
    assert (out / "answers.jsonl").stat().st_size < 10 * MAX_REPLY_CHARS  # 2 MB never reached the disk either


class _SilentServer:
    """Accepts connections on 127.0.0.1 and reads requests, but never answers one."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.requests = 0
        self._open: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self._listener.accept()
            except OSError:
                return
            connection.recv(65536)
            self.requests += 1
            self._open.append(connection)  # held open, never answered

    def close(self) -> None:
        self._listener.close()
        for connection in self._open:
            connection.close()


@pytest.fixture()
def silent() -> Iterator[_SilentServer]:
    server = _SilentServer()
    yield server
    server.close()


@pytest.mark.parametrize("retries", [0, pytest.param(2, marks=pytest.mark.slow)])
def test_an_endpoint_that_never_answers_gets_the_timeout_and_retries_asked_for(
    testset: Path, tmp_path: Path, silent: _SilentServer, retries: int
) -> None:
    started = time.monotonic()
    result = evaluate(
        testset, tmp_path / "eval", "--endpoint", f"http://127.0.0.1:{silent.port}/ask", "--metrics", "text",
        "--timeout", "0.5", "--max-retries", retries, "--concurrency", "1",
    )  # fmt: skip
    took = time.monotonic() - started
    assert result.exit_code == 1 and "None of the 2 questions was answered (mostly timeout)" in result.output
    assert [row["answer_error"] for row in rows(tmp_path / "eval")] == ["timeout"] * len(QUESTIONS)
    assert silent.requests == len(QUESTIONS) * (retries + 1)
    # 0.5 s per attempt and short pauses between them, not the endpoint client's own 60 s and 3 retries.
    assert took < 30, took


@pytest.mark.parametrize("retries", [0, 1])
def test_a_rag_function_gets_the_timeout_and_retries_asked_for(
    testset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, retries: int
) -> None:
    calls = tmp_path / "calls.log"
    spec = rag_module(tmp_path, monkeypatch, f"open({str(calls)!r}, 'a').write(question + '\\n'); time.sleep(30)")
    started = time.monotonic()
    result = evaluate(
        testset, tmp_path / "eval", "--rag", spec, "--metrics", "text", "--timeout", "0.5",
        "--max-retries", retries, "--interrupt-grace", "0",
    )  # fmt: skip
    took = time.monotonic() - started
    assert result.exit_code == 1 and "None of the 2 questions was answered (mostly timeout)" in result.output
    assert [row["answer_error"] for row in rows(tmp_path / "eval")] == ["timeout"] * 2
    assert sorted(calls.read_text().splitlines()) == sorted(QUESTIONS * (retries + 1))
    assert took < 20, took


def test_a_rag_function_that_raises_is_not_retried(
    testset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = tmp_path / "calls.log"
    spec = rag_module(
        tmp_path, monkeypatch, f"open({str(calls)!r}, 'a').write(question + '\\n'); raise ValueError('no')"
    )
    result = evaluate(testset, tmp_path / "eval", "--rag", spec, "--metrics", "text", "--max-retries", "3")
    assert result.exit_code == 1 and "(mostly system_error: ValueError: no)" in result.output
    assert [row["answer_error"] for row in rows(tmp_path / "eval")] == ["system_error: ValueError: no"] * 2
    assert len(calls.read_text().splitlines()) == len(QUESTIONS)  # a bug does not pass on another try


def test_a_rag_function_calling_sys_exit_fails_its_questions_not_the_run(
    testset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = rag_module(tmp_path, monkeypatch, "return 'ok' if 'glacier' in question else sys.exit(3)")
    result = evaluate(testset, tmp_path / "eval", "--rag", spec, "--metrics", "text")
    assert result.exit_code == 0, result.output  # not 3, the exit code of a spending cap
    errors = [row["answer_error"] for row in rows(tmp_path / "eval")]
    assert errors == ["system_error: SystemExit: sys.exit(3) was called", ""]
    assert (
        "not answered: 1 system_error: SystemExit\n    system_error: SystemExit: sys.exit(3) was called"
        in result.output
    )


def test_the_outcome_shows_a_failed_answer_s_whole_reason(
    testset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reason with colons of its own is grouped by its kind, never cut at its colon ("its keys are")."""
    spec = rag_module(tmp_path, monkeypatch, "return 'ok' if 'glacier' in question else {'text': 'no answer key'}")
    result = evaluate(testset, tmp_path / "eval", "--rag", spec, "--metrics", "text")
    assert result.exit_code == 0, result.output
    whole = "bad_response: no 'answer' in the reply (its keys are: text)"
    assert [row["answer_error"] for row in rows(tmp_path / "eval")] == [whole, ""]
    assert f"not answered: 1 bad_response\n    {whole}\n" in result.output
    summary = json.loads((tmp_path / "eval" / "summary.json").read_text())
    assert (summary["failed_by_reason"], summary["failed_examples"]) == ({"bad_response": 1}, {"bad_response": whole})
