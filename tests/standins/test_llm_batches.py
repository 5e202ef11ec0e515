"""The stand-in's Batch API, through the real `openai` client: same replies as online, and its knobs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import openai

from standins.llm.offline import answer_requests
from standins.llm.server import StandInLLM

DRAFT = "Your task is to write a factoid question and an answer given a context.\nContext: {text}\nOutput:::"


def _bodies(n: int) -> list[dict[str, Any]]:
    prompts = [DRAFT.format(text=f"Fact {i}: the value is {i * 7}.") for i in range(n)]
    return [{"model": "stand-in", "max_tokens": 200, "messages": [{"role": "user", "content": p}]} for p in prompts]


def _input(bodies: list[dict[str, Any]]) -> bytes:
    lines = [
        {"custom_id": f"r{i}", "method": "POST", "url": "/v1/chat/completions", "body": b} for i, b in enumerate(bodies)
    ]
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def _run_batch(client: openai.OpenAI, content: bytes, polls: int = 20) -> tuple[Any, dict[str, Any]]:
    uploaded = client.files.create(file=("in.jsonl", content), purpose="batch")
    batch = client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h")
    for _ in range(polls):
        batch = client.batches.retrieve(batch.id)
        if batch.status in ("completed", "expired"):
            break
    results: dict[str, Any] = {}
    for file_id in (batch.output_file_id, batch.error_file_id):
        if file_id:
            for line in client.files.content(file_id).read().splitlines():
                row = json.loads(line)
                results[row["custom_id"]] = row
    return batch, results


def test_batch_lines_get_the_replies_the_online_endpoint_gives() -> None:
    bodies = _bodies(6)
    with StandInLLM() as online_llm:
        client = openai.OpenAI(base_url=online_llm.base_url, api_key="k")
        online = [client.post("/chat/completions", body=b, cast_to=httpx.Response).json() for b in bodies]
    with StandInLLM(batch_polls=2) as llm:
        client = openai.OpenAI(base_url=llm.base_url, api_key="k")
        batch, results = _run_batch(client, _input(bodies))
        polls = [e for e in llm.log if e["path"] == f"/v1/batches/{batch.id}"]
    assert batch.status == "completed" and len(polls) == 3  # in_progress twice, then completed
    assert batch.request_counts.completed == 6
    for i, reply in enumerate(online):
        body = results[f"r{i}"]["response"]["body"]
        assert body["choices"][0]["message"] == reply["choices"][0]["message"]
        assert body["usage"] == reply["usage"]


def test_failures_expiry_and_dropped_polls() -> None:
    bodies = _bodies(40)
    with StandInLLM(batch_failure_rate=0.3, batch_expire=1, batch_drop_polls=1) as llm:
        client = openai.OpenAI(base_url=llm.base_url, api_key="k", max_retries=2)
        expired, first = _run_batch(client, _input(bodies))
        assert expired.status == "expired" and len(first) == 40
        assert sum(1 for row in first.values() if row["error"] and row["error"]["code"] == "batch_expired") == 20
        failed = [cid for cid, row in first.items() if row["response"] and row["response"]["status_code"] == 500]
        assert 0 < len(failed) < 20
        assert any(e["fault"] == "drop" for e in llm.log)  # the client retried the dropped poll
        done, second = _run_batch(client, _input(bodies))
        _, third = _run_batch(client, _input(bodies))
    assert done.status == "completed"
    # A body that failed once is answered the next time; the expired half may fail once itself.
    assert all(second[cid]["response"]["status_code"] == 200 for cid in failed)
    assert all(row["response"]["status_code"] == 200 for row in third.values())


def test_offline_runner_answers_as_the_server_does(tmp_path: Path) -> None:
    bodies = _bodies(5)
    (tmp_path / "in.jsonl").write_bytes(_input(bodies))
    assert answer_requests(tmp_path / "in.jsonl", tmp_path / "out.jsonl") == 5
    offline = {
        json.loads(line)["custom_id"]: json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()
    }
    with StandInLLM() as llm:
        client = openai.OpenAI(base_url=llm.base_url, api_key="k")
        for i, body in enumerate(bodies):
            online = client.post("/chat/completions", body=body, cast_to=httpx.Response).json()
            assert offline[f"r{i}"]["response"]["body"]["choices"] == online["choices"]
