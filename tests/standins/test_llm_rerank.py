"""The stand-in's `/rerank` endpoint: vLLM's and TEI's request and reply shapes, counting, errors."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from standins.llm.rerank import listwise_reply, overlap, ranking
from standins.llm.server import StandInLLM

QUERY = "Who kept the logbook?"
DOCS = ["The museum.", "The keeper kept a logbook.", "A logbook was kept."]


def post(url: str, body: Any, key: str | None = None) -> tuple[int, Any]:
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_overlap_is_the_share_of_the_query_words_found() -> None:
    assert overlap(QUERY, DOCS[1]) == pytest.approx(3 / 4)  # the, kept, logbook of who, kept, the, logbook
    assert overlap(QUERY, DOCS[0]) == pytest.approx(1 / 4)
    assert overlap("", "anything") == 0.0
    assert ranking(QUERY, DOCS) == [(1, 0.75), (2, 0.5), (0, 0.25)]


@pytest.mark.parametrize("path", ["/rerank", "/v1/rerank"])
def test_vllm_requests_get_results_best_first_cut_to_top_n(llm: StandInLLM, path: str) -> None:
    url = f"http://127.0.0.1:{llm.port}{path}"
    status, reply = post(url, {"model": "bge", "query": QUERY, "documents": DOCS, "top_n": 2})
    assert status == 200
    assert [(r["index"], r["relevance_score"]) for r in reply["results"]] == [(1, 0.75), (2, 0.5)]
    assert reply["model"] == "bge" and reply["usage"]["total_tokens"] > 0
    [entry] = llm.log
    assert (entry["path"], entry["kind"], entry["model"], entry["attempt"]) == (path, "rerank", "bge", 1)


def test_tei_requests_and_replies(llm: StandInLLM) -> None:
    llm.configure(rerank_reply="list")
    status, reply = post(f"http://127.0.0.1:{llm.port}/rerank", {"query": QUERY, "texts": DOCS})
    assert status == 200
    assert reply == [{"index": 1, "score": 0.75}, {"index": 2, "score": 0.5}, {"index": 0, "score": 0.25}]


def test_rerank_requests_are_counted_by_body_and_checked(llm: StandInLLM) -> None:
    url = f"{llm.base_url}/rerank"
    body = {"model": "bge", "query": QUERY, "documents": DOCS}
    post(url, body)
    post(url, body)
    assert [entry["attempt"] for entry in llm.log] == [1, 2]
    assert list(llm.requests_by_body().values()) == [2]
    status, error = post(url, {"model": "bge", "query": QUERY})
    assert status == 400 and "documents" in error["error"]["message"]
    llm.configure(api_key="right")
    assert post(url, body)[0] == 401
    assert post(url, body, key="right")[0] == 200


def test_rerank_faults_follow_the_knobs(llm: StandInLLM) -> None:
    llm.configure(fault_rate=1.0, fault_kinds=("429",), fault_attempts=1)
    url = f"{llm.base_url}/rerank"
    body = {"model": "bge", "query": QUERY, "documents": DOCS}
    assert post(url, body)[0] == 429
    assert post(url, body)[0] == 200  # a retry of the same body is answered
    assert [entry["kind"] for entry in llm.log] == ["fault", "rerank"]


def test_the_listwise_reply_ranks_the_passages_of_the_prompt() -> None:
    prompt = (
        "Rank the 3 passages below by how relevant each one is to the question: the best first.\n\n"
        f"Question:\n<question>\n{QUERY}\n</question>\n\n"
        + "\n\n".join(f"[{i}]\n<context>\n{doc}\n</context>" for i, doc in enumerate(DOCS, 1))
    )
    assert listwise_reply(prompt) == "[2] > [3] > [1]"
    assert listwise_reply("Some other prompt") is None
