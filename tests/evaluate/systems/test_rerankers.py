"""The rerank endpoint and the listwise reranker against the stand-in server, and their failures."""

from __future__ import annotations

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from fake_llm import FakeLLM

from qagen.errors import ConfigError, LLMUnavailableError
from qagen.evaluate.systems.rerank.base import RerankedContext, Reranker, RerankItem, rerank
from qagen.evaluate.systems.rerank.endpoint import EndpointReranker, parse_rerank_reply
from qagen.evaluate.systems.rerank.listwise import ListwiseReranker
from qagen.evaluate.systems.rerank.specs import RerankSpec, parse_rerank, reranker_for
from qagen.failures import Failure, FailureKind
from qagen.llm.client import ModelSettings
from qagen.llm.task import Outcome, Request
from qagen.records import RetrievedContext
from qagen.runs.executor import drive
from standins.llm.rerank import ranking
from standins.llm.server import StandInLLM

QUESTION = "Who kept the logbook of passing ships?"
TEXTS = [
    "The council later moved the archive to the museum.",
    "Ships passed the harbour every day.",
    "The lighthouse keeper kept a logbook of passing ships.",
    "A logbook was kept.",
]
CANDIDATES = [RetrievedContext(text=text, source=f"doc{i}.md") for i, text in enumerate(TEXTS)]
# The stand-in's order (word overlap with the question): what every reranker here must give back.
EXPECTED = [index for index, _ in ranking(QUESTION, TEXTS)]


async def _no_chat(request: Request) -> Outcome:
    raise AssertionError("this reranker makes no chat call")


def _rerank(reranker: Reranker, n: int = 3, call: Any = _no_chat) -> list[RerankedContext] | Failure:
    async def main() -> list[RerankedContext] | Failure:
        try:
            return await rerank(reranker, QUESTION, CANDIDATES, n, call)
        finally:
            await reranker.aclose()

    return asyncio.run(main())


def _rerank_calls(llm: StandInLLM) -> list[dict[str, Any]]:
    return [dict(entry) for entry in llm.log if entry["path"].endswith("/rerank")]


def test_the_expected_order_is_not_the_retrieval_order() -> None:
    assert EXPECTED[:2] == [2, 1] and sorted(EXPECTED) != EXPECTED


@pytest.mark.parametrize("shape", ["results", "list"])
def test_the_endpoint_reorders_by_the_servers_scores_in_either_reply_shape(llm: StandInLLM, shape: str) -> None:
    llm.configure(rerank_reply=shape)
    top = _rerank(EndpointReranker("BAAI/bge-reranker-base", llm.base_url))
    assert not isinstance(top, Failure)
    assert [context.text for context, _ in top] == [TEXTS[i] for i in EXPECTED[:3]]
    scores = dict(ranking(QUESTION, TEXTS))
    assert [score for _, score in top] == [scores[i] for i in EXPECTED[:3]]
    [call] = _rerank_calls(llm)
    assert call["path"] == "/v1/rerank" and call["kind"] == "rerank" and call["status_code"] == 200
    reply = json.loads(call["reply"])
    assert isinstance(reply, list) if shape == "list" else [r["index"] for r in reply["results"]] == EXPECTED


def test_the_endpoint_body_carries_both_families_fields(llm: StandInLLM) -> None:
    llm.configure(record_credentials=True)
    reranker = EndpointReranker("bge", llm.base_url)
    body: dict[str, Any] = {}
    original = reranker._score

    async def spy(item: RerankItem) -> Any:
        from qagen.evaluate.systems.rerank.endpoint import rerank_body

        body.update(rerank_body(reranker.model, item))
        return await original(item)

    reranker.task._score = spy  # type: ignore[attr-defined]
    _rerank(reranker)
    assert body == {"model": "bge", "query": QUESTION, "documents": TEXTS, "texts": TEXTS, "top_n": 4}
    [call] = _rerank_calls(llm)
    assert call["model"] == "bge" and call["authorization"] == "Bearer EMPTY"


@pytest.mark.parametrize(
    ("body", "read"),
    [
        (
            b'{"results": [{"index": 2, "relevance_score": 0.9}, {"index": 0, "relevance_score": 0.1}]}',
            [(2, 0.9), (0, 0.1)],
        ),
        (b'{"data": [{"index": 1, "relevance_score": 3}]}', [(1, 3.0)]),
        (b'[{"index": 0, "score": -1.5}, {"index": 2, "score": 0.25}]', [(0, -1.5), (2, 0.25)]),
    ],
)
def test_rerank_replies_of_both_shapes_are_read(body: bytes, read: list[tuple[int, float]]) -> None:
    parsed = parse_rerank_reply(body, 3)
    assert not isinstance(parsed, Failure)
    assert parsed.placed == read


@pytest.mark.parametrize(
    "body",
    [
        b"<html>Bad gateway</html>",
        b'{"results": []}',
        b'{"object": "error"}',
        b'[{"index": 3, "score": 0.5}]',  # no such candidate
        b'[{"index": 0, "score": 0.5}, {"index": 0, "score": 0.4}]',  # a candidate twice
        b'[{"index": 0, "score": "high"}]',
        b'[{"index": 0, "score": NaN}]',
        b'[{"index": true, "score": 1}]',
    ],
)
def test_an_unreadable_rerank_reply_is_a_parse_failure_with_the_body(body: bytes) -> None:
    parsed = parse_rerank_reply(body, 3)
    assert isinstance(parsed, Failure)
    assert parsed.kind is FailureKind.PARSE_FAILURE and not parsed.retryable


def test_a_failing_endpoint_call_is_a_failure_value_not_a_crash(llm: StandInLLM) -> None:
    llm.configure(fault_rate=1.0, fault_kinds=("500",), fault_attempts=5)
    failure = _rerank(EndpointReranker("bge", llm.base_url, max_retries=1))
    assert isinstance(failure, Failure)
    assert failure.kind is FailureKind.SERVER_ERROR and failure.retryable  # asked again on resume
    assert [c["fault"] for c in _rerank_calls(llm)] == ["500", "500"]  # the call and its one retry


def test_what_every_endpoint_call_would_meet_stops_the_run(llm: StandInLLM) -> None:
    llm.configure(api_key="right")
    with pytest.raises(LLMUnavailableError, match=r"rejected the rerank endpoint's API key \(401\)"):
        _rerank(EndpointReranker("bge", llm.base_url))
    down = f"http://127.0.0.1:{llm.port}/v1"
    llm.stop()
    with pytest.raises(LLMUnavailableError, match="Cannot reach the rerank endpoint"):
        _rerank(EndpointReranker("bge", down, max_retries=0))


def test_the_listwise_reranker_asks_the_reader_once_and_follows_its_order(fake_llm: FakeLLM) -> None:
    async def main() -> tuple[list[RerankedContext] | Failure, int]:
        reader = fake_llm.client()
        try:
            top = await rerank(ListwiseReranker(reader.settings.spec), QUESTION, CANDIDATES, 3, reader.complete)
            return top, reader.stats.calls
        finally:
            await reader.aclose()

    top, calls = asyncio.run(main())
    assert not isinstance(top, Failure)
    assert [context.text for context, _ in top] == [TEXTS[i] for i in EXPECTED[:3]]
    assert [score for _, score in top] == [None, None, None]  # an order, no scores
    assert calls == 1
    [entry] = [e for e in fake_llm.log if e["path"] == "/v1/chat/completions"]
    assert entry["kind"] == "rerank" and entry["reply"] == " > ".join(f"[{i + 1}]" for i in EXPECTED)


def test_a_listwise_reply_that_cannot_be_read_leaves_a_failure(fake_llm: FakeLLM) -> None:
    fake_llm.configure(malformed_rate=1.0)  # empty replies and refusals

    async def main() -> list[RerankedContext] | Failure:
        reader = fake_llm.client()
        try:
            return await rerank(ListwiseReranker("openai:stand-in"), QUESTION, CANDIDATES, 3, reader.complete)
        finally:
            await reader.aclose()

    failure = asyncio.run(main())
    assert isinstance(failure, Failure) and failure.kind in (FailureKind.EMPTY_REPLY, FailureKind.REFUSAL)


@pytest.mark.parametrize(
    ("spec", "parsed", "slug"),
    [
        ("none", RerankSpec("none"), "none"),
        ("reader", RerankSpec("reader"), "reader"),
        (" Reader ", RerankSpec("reader"), "reader"),
        (
            "cross-encoder:/models/ms-marco MiniLM/",
            RerankSpec("cross-encoder", "/models/ms-marco MiniLM/"),
            "ce-ms-marco-MiniLM",
        ),
        (
            "endpoint:BAAI/bge-reranker-v2-m3",
            RerankSpec("endpoint", "BAAI/bge-reranker-v2-m3"),
            "endpoint-bge-reranker-v2-m3",
        ),
    ],
)
def test_rerank_specs(spec: str, parsed: RerankSpec, slug: str) -> None:
    assert parse_rerank(spec) == parsed
    assert parsed.slug == slug


@pytest.mark.parametrize("spec", ["", "cross-encoder", "endpoint:", "listwise", "reader:gpt"])
def test_an_unknown_rerank_spec_names_the_forms(spec: str) -> None:
    with pytest.raises(ConfigError, match=r"name one as none, cross-encoder:PATH, endpoint:MODEL, reader"):
        parse_rerank(spec)


def test_the_endpoint_is_reached_at_its_own_url_else_the_readers() -> None:
    reader = ModelSettings(spec="openai:m", base_url="http://127.0.0.1:9/v1", timeout=7.0, max_retries=2)
    own = reranker_for(RerankSpec("endpoint", "bge"), reader, rerank_url="http://127.0.0.1:8/")
    assert isinstance(own, EndpointReranker) and own.settings.base_url == "http://127.0.0.1:8/"
    shared = reranker_for(RerankSpec("endpoint", "bge"), reader)
    assert isinstance(shared, EndpointReranker) and shared.settings.base_url == reader.base_url
    assert (shared.settings.timeout, shared.settings.max_retries) == (7.0, 2)
    listwise = reranker_for(RerankSpec("reader"), reader)
    assert isinstance(listwise, ListwiseReranker) and listwise.describe()["model"] == "openai:m"
    assert reranker_for(RerankSpec("none"), reader) is None


class _Garbled(BaseHTTPRequestHandler):
    """A server whose /rerank answers 200 with a page that is no rerank reply."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        body = b"<html>upstream busy</html>"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


def test_an_unreadable_endpoint_reply_is_kept_in_the_record_with_its_failure() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Garbled)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    reranker = EndpointReranker("bge", f"http://127.0.0.1:{server.server_address[1]}/v1")
    try:
        record = asyncio.run(drive(reranker.task, RerankItem(QUESTION, tuple(CANDIDATES)), _no_chat))
    finally:
        asyncio.run(reranker.aclose())
        server.shutdown()
    assert record.failure is not None and record.failure.kind is FailureKind.PARSE_FAILURE
    assert record.raw == "<html>upstream busy</html>" and record.order == []
