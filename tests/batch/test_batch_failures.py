"""Batch mode draws the line between a failed call and a failed run where online mode does: a model
whose every batch line is a 401, 403 or 404 (or whose upload is refused with a 401) stops the run
with the online sentence; past the error budget the run stops after storing the round; and the
end-of-run failure-rate check holds as online."""

from __future__ import annotations

import http.server
import json
import re
import socket
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from qagen.cli.app import main
from standins.llm.server import StandInLLM
from tests.batch.test_batch_build import build_args

BATCH = ("--batch", "--batch-poll", "0.01")


def invoke(args: list[str]) -> Result:
    return CliRunner().invoke(main, args, catch_exceptions=False)


def error_line(result: Result) -> str:
    assert result.exit_code == 1, result.output
    (line,) = [line for line in result.output.splitlines() if line.startswith("error: ")]
    return line


def drafts(run: Path) -> list[dict[str, object]]:
    path = run / "drafts.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.parametrize(
    ("knob", "expected"),
    [
        ("models", r"does not know the model 'stand-in' \(404\); check --generator-model\."),
        ("api_key", r"rejected the API key of 'openai:stand-in' \(401\); check OPENAI_API_KEY\."),
    ],
)
def test_a_rejected_key_or_an_unknown_model_stops_the_run_with_the_online_sentence(
    corpus: Path, tmp_path: Path, knob: str, expected: str
) -> None:
    refusal = {"models": {"models": ["another-model"]}, "api_key": {"api_key": "the-right-key"}}[knob]
    with StandInLLM(**refusal) as llm:  # type: ignore[arg-type]
        online = error_line(invoke(build_args(llm, corpus, tmp_path / "online")))
        # The upload itself is refused (401), or every line of the drafts' batch is a 404.
        batched = error_line(invoke(build_args(llm, corpus, tmp_path / "batch", *BATCH)))
        kinds = [entry["kind"] for entry in llm.log]
    assert re.search(expected, online), online
    assert batched == online
    assert kinds.count("batch_create") == (knob == "models")
    assert drafts(tmp_path / "batch") == []  # nothing recorded: the run, not each chunk, failed


@pytest.mark.parametrize("status", [401, 404])
def test_batch_lines_that_are_all_401_or_404_stop_the_run_as_online(corpus: Path, tmp_path: Path, status: int) -> None:
    with StandInLLM(batch_line_status=status) as llm:
        batched = error_line(invoke(build_args(llm, corpus, tmp_path / "batch", *BATCH)))
        # The same server refusing online calls the same way: the same sentence.
        refusal = {"api_key": "the-right-key"} if status == 401 else {"models": ["another-model"]}
        llm.configure(batch_line_status=0, **refusal)
        online = error_line(invoke(build_args(llm, corpus, tmp_path / "online")))
    assert batched == online
    assert f"({status})" in batched
    assert drafts(tmp_path / "batch") == []


def test_batch_lines_that_are_all_403_stop_the_run_in_the_online_sentence(corpus: Path, tmp_path: Path) -> None:
    with StandInLLM(batch_line_status=403) as llm:
        batched = error_line(invoke(build_args(llm, corpus, tmp_path / "batch", *BATCH)))
        assert batched == f"error: {llm.base_url} refused access to 'openai:stand-in' (403)."


def test_past_the_error_budget_the_run_stops_after_storing_the_round(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "batch"
    with StandInLLM(batch_failure_rate=0.8) as llm:
        stopped = error_line(invoke(build_args(llm, corpus, out, *BATCH)))
        failed = len([entry for entry in llm.log if entry.get("fault") == "batch_line"])
        assert re.search(
            rf"{failed} of 40 calls to .* failed even after retries, more than --max-failure-rate 50% "
            r"\(mostly server_error: batch batch_\d+: 500: The server had an error", stopped,
        ), stopped  # fmt: skip
        assert "re-run the same command to continue" in stopped
        # Only the drafts' round was sent, and all of it is recorded: the failures as retryable ones.
        assert [entry["kind"] for entry in llm.log].count("batch_create") == 1
        records = drafts(out)
        assert len(records) == 40
        assert sum(record["failure"] is not None for record in records) == failed > 20

        llm.configure(batch_failure_rate=0.0)
        again = invoke(build_args(llm, corpus, out, *BATCH))
        assert again.exit_code == 0, again.output
        assert all(record["failure"] is None for record in drafts(out)[-failed:])


def test_the_failure_rate_is_checked_at_the_end_as_online(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "batch"
    with StandInLLM(batch_failure_rate=0.3) as llm:
        # Rounds of fewer than 20 calls, some of them answered: only the end-of-run check applies.
        args = build_args(llm, corpus, out, *BATCH, "--max-failure-rate", "0.05", n=10)
        stopped = error_line(invoke(args))
        log = list(llm.log)
    failed = len([entry for entry in log if entry.get("fault") == "batch_line"])
    calls = len([entry for entry in log if entry["method"] == "BATCH"])
    assert 0 < failed < calls < 40
    # The model whose calls failed too often is named with its own counts (the critics ask for token
    # probabilities, so the generator and the critics are two clients of the one server).
    match = re.search(r"(\d+) of (\d+) calls to ", stopped)
    assert match is not None and "more than --max-failure-rate 5%" in stopped, stopped
    named_failed, named_calls = int(match.group(1)), int(match.group(2))
    assert 0 < named_failed <= failed and named_calls <= calls and named_failed / named_calls > 0.05
    assert len(drafts(out)) == 10  # every round's records are kept


def test_expired_requests_are_told_to_be_asked_again_by_a_rerun(corpus: Path, tmp_path: Path) -> None:
    with StandInLLM(batch_expire=1) as llm:
        result = invoke(build_args(llm, corpus, tmp_path / "batch", *BATCH, n=8))
    assert result.exit_code == 0, result.output
    (failed,) = re.findall(r"generation failed +(\d+) \(api_error:batch_expired \d+\)", result.output)
    assert int(failed) > 0
    assert f"  {failed} generation calls got no reply: re-run the same command to ask them again" in result.output


def build_args_for(corpus: Path, out: Path, *extra: str) -> list[str]:
    with StandInLLM() as llm:
        return build_args(llm, corpus, out, *extra)


def _pointed_at(url: str, args: list[str]) -> list[str]:
    args[args.index("--base-url") + 1] = url
    return args


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_refused_connection_is_told_as_one_not_as_a_timeout(corpus: Path, tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    args = _pointed_at(url, build_args_for(corpus, tmp_path / "batch", *BATCH, "--max-retries", "0"))
    line = error_line(invoke(args))
    assert f"cannot reach {url} (connection refused); is the server running" in line, line
    assert "timed out" not in line.lower()


class _NoBatchAPI(http.server.BaseHTTPRequestHandler):
    """An OpenAI-compatible server with chat completions only (vLLM's or llama.cpp's online server)."""

    def _not_found(self) -> None:
        body = json.dumps({"error": {"message": "Not Found", "type": "not_found"}}).encode()
        self.send_response(404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _not_found

    def log_message(self, *_: object) -> None:
        """Quiet."""


def test_a_server_without_a_batch_api_is_told_so_not_to_rerun(corpus: Path, tmp_path: Path) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NoBatchAPI)
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        args = _pointed_at(url, build_args_for(corpus, tmp_path / "batch", *BATCH))
        line = error_line(invoke(args))
    finally:
        server.shutdown()
        server.server_close()
    assert "has no Batch API (it answered 404 when asked to upload a batch input file)" in line, line
    assert "run without --batch" in line and "re-run" not in line
