"""The RAG-system adapters: answers file, Python callable / LangChain Runnable, HTTP endpoint."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document as LCDocument
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableLambda

from qagen.call_policy import CallPolicy
from qagen.errors import ConfigError, QagenError
from qagen.evaluate.records import RagOutput
from qagen.evaluate.systems.answers_file import AnswersFileSystem
from qagen.evaluate.systems.callable import CallableSystem, load_callable
from qagen.evaluate.systems.endpoint import EndpointSystem
from qagen.evaluate.systems.protocol import RagSystem, close_system, normalize_question
from qagen.evaluate.systems.replies import BadReply, parse_reply
from qagen.records import RetrievedContext


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("\n".join(row if isinstance(row, str) else json.dumps(row) for row in rows) + "\n")
    return path


# --------------------------------------------------------------------------- reply shapes


def test_parse_reply_accepts_string_message_and_dict() -> None:
    assert parse_reply("Paris.") == RagOutput(answer="Paris.")
    assert parse_reply(AIMessage(content="Paris.")).answer == "Paris."
    output = parse_reply({"answer": "Paris.", "contexts": ["a", "b"], "sources": ["x.md", None]})
    assert output.contexts == [RetrievedContext(text="a", source="x.md"), RetrievedContext(text="b")]


def test_parse_reply_langchain_documents_and_offsets() -> None:
    docs = [LCDocument(page_content="abc", metadata={"source": "d.md", "start_index": 10})]
    output = parse_reply({"answer": AIMessage(content="x"), "context": docs})
    assert output.answer == "x"
    assert output.contexts == [RetrievedContext(text="abc", source="d.md", start_index=10, end_index=13)]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (42, "expected a string"),
        ({"contexts": []}, "no 'answer'"),
        ({"answer": 3}, "'answer' must be a string"),
        ({"answer": "a", "contexts": "one"}, "must be a list"),
        ({"answer": "a", "contexts": ["x"], "sources": ["s", "t"]}, "2 sources for 1 contexts"),
        ({"answer": "a", "sources": ["s"]}, "'sources' without 'contexts'"),
        ({"answer": "a", "contexts": [{"source": "s"}]}, "no string 'text'"),
        ({"answer": "a", "contexts": [{"text": "t", "start_index": True}]}, "non-negative integer"),
        ({"answer": "a", "contexts": [{"text": "t", "start_index": 5, "end_index": 2}]}, "before start_index"),
    ],
)
def test_parse_reply_rejects_wrong_shapes(value: object, message: str) -> None:
    with pytest.raises(BadReply, match=message):
        parse_reply(value)


@pytest.mark.parametrize(
    ("written", "key"),
    [
        ("  What is\n  BM25?\n", "what is bm25?"),  # the cookbook's trailing newline; runs of whitespace
        ("WHAT IS BM25?", "what is bm25?"),  # an upper-case copy
        ("What\u00a0is\tBM25?", "what is bm25?"),  # a non-breaking space (NFKC) and a tab
        ("Ｗhat is ＢＭ25?", "what is bm25?"),  # full-width letters (NFKC)
        ("Was heißt STRASSE?", "was heisst strasse?"),  # casefold, not lower(): ß is ss
        ("Qu'est-ce qu'une e\u0301toile ?", "qu'est-ce qu'une étoile ?"),  # a combining accent composed
    ],
)
def test_normalize_question(written: str, key: str) -> None:
    assert normalize_question(written) == key
    assert normalize_question(key) == key  # already normal: idempotent


# --------------------------------------------------------------------------- answers file


def test_answers_file_matches_questions_with_trailing_newline(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "answers.jsonl",
        [
            {"question": "What is X?", "answer": "X is a letter.", "contexts": ["X is a letter."], "sources": ["a.md"]},
            "",
            {"question": "Who wrote Y?", "answer": "Z."},
        ],
    )
    system = AnswersFileSystem(path)
    assert isinstance(system, RagSystem)
    assert len(system) == 2 and system.name == "answers:answers.jsonl"
    # The cookbook dataset's questions end with a newline.
    output = run(system.answer("What is X?\n"))
    assert output.answer == "X is a letter."
    assert output.contexts == [RetrievedContext(text="X is a letter.", source="a.md")]
    assert run(system.answer("Who  wrote Y?")).contexts == []


def test_answers_file_missing_question_is_recorded(tmp_path: Path) -> None:
    system = AnswersFileSystem(write_jsonl(tmp_path / "a.jsonl", [{"question": "Q1", "answer": "A1"}]))
    output = run(system.answer("Q2"))
    assert output.answer is None and output.error == "not_in_answers_file"


def test_answers_file_object_contexts(tmp_path: Path) -> None:
    context = {"text": "chunk text", "source": "doc.md", "start_index": 100, "end_index": 110}
    system = AnswersFileSystem(
        write_jsonl(tmp_path / "a.jsonl", [{"question": "Q", "answer": "A", "contexts": [context]}])
    )
    assert run(system.answer("Q")).contexts == [RetrievedContext(**context)]


def test_answers_file_duplicates(tmp_path: Path) -> None:
    same = {"question": "Q", "answer": "A"}
    assert len(AnswersFileSystem(write_jsonl(tmp_path / "same.jsonl", [same, {**same, "question": "Q\n"}]))) == 1
    path = write_jsonl(
        tmp_path / "dup.jsonl", [same, {"question": "Other", "answer": "B"}, {"question": " Q", "answer": "C"}]
    )
    with pytest.raises(ConfigError, match=r"line 3: the question of line 1 again, with a different answer"):
        AnswersFileSystem(path)


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (['{"question": "Q", "answer": "A"}', '{"question": "R", "answer": '], r"line 2: not valid JSON"),
        (['["Q", "A"]'], r"item 1: expected a JSON object"),
        (['{"answer": "A"}'], r"line 1: no 'question' string"),
        (['{"question": "Q", "answer": null}'], r"line 1: 'answer' must be a string, got null"),
        ([""], r"has no answers"),
    ],
)
def test_answers_file_errors_name_the_line(tmp_path: Path, lines: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        AnswersFileSystem(write_jsonl(tmp_path / "bad.jsonl", lines))


def test_answers_file_line_separator_inside_a_string(tmp_path: Path) -> None:
    # JSON allows a raw U+2028 in a string; it must not split the line.
    path = tmp_path / "a.jsonl"
    path.write_text(json.dumps({"question": "Q", "answer": "one\u2028two"}, ensure_ascii=False) + "\r\n")
    assert run(AnswersFileSystem(path).answer("Q")).answer == "one\u2028two"


def test_answers_file_missing(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        AnswersFileSystem(tmp_path / "nope.jsonl")


def test_answers_file_notebook_results_array(tmp_path: Path) -> None:
    # The cookbook notebook's `run_rag_tests` output: one JSON array, its own key names.
    rows = [{"question": "Q\n", "true_answer": "T", "generated_answer": "G", "retrieved_docs": ["d0", "d1"]}]
    (tmp_path / "results.json").write_text(json.dumps(rows))
    output = run(AnswersFileSystem(tmp_path / "results.json").answer("Q"))
    assert output.answer == "G" and [c.text for c in output.contexts] == ["d0", "d1"]


# --------------------------------------------------------------------------- callables


def sync_rag(question: str) -> str:
    return f"sync answer to {question}"


async def async_rag(question: str) -> dict[str, Any]:
    await asyncio.sleep(0)
    return {"answer": f"async answer to {question}", "contexts": ["c1"], "sources": ["s1"]}


def test_callable_sync_and_async() -> None:
    assert run(CallableSystem(sync_rag).answer("Q")).answer == "sync answer to Q"
    output = run(CallableSystem(async_rag).answer("Q"))
    assert output.answer == "async answer to Q"
    assert output.contexts == [RetrievedContext(text="c1", source="s1")]
    assert CallableSystem(sync_rag).name.endswith(":sync_rag")


def test_callable_sync_functions_run_off_the_event_loop() -> None:
    def slow(question: str) -> str:
        time.sleep(0.3)
        return question

    async def many() -> list[RagOutput]:
        system = CallableSystem(slow)
        return list(await asyncio.gather(*(system.answer(str(i)) for i in range(8))))

    started = time.monotonic()
    outputs = run(many())
    assert [o.answer for o in outputs] == [str(i) for i in range(8)]
    assert time.monotonic() - started < 1.5  # 8 x 0.3 s one after another would take 2.4 s


def test_callable_async_callable_object() -> None:
    class Rag:
        async def __call__(self, question: str) -> str:
            return question.upper()

    assert run(CallableSystem(Rag()).answer("q")).answer == "Q"


def test_callable_exception_is_recorded_with_its_type() -> None:
    def broken(question: str) -> str:
        raise KeyError("index missing")

    output = run(CallableSystem(broken).answer("Q"))
    assert output.answer is None
    assert output.error == "system_error: KeyError: 'index missing'"


def test_callable_wrong_shape_is_recorded() -> None:
    output = run(CallableSystem(lambda q: {"text": q}).answer("Q"))
    assert output.answer is None and output.error.startswith("bad_response: no 'answer'")


def test_callable_runnable_lambda() -> None:
    chain = RunnableLambda(lambda q: AIMessage(content=f"chain says {q}"))
    assert run(CallableSystem(chain).answer("hi")).answer == "chain says hi"
    keyed = RunnableLambda(lambda d: {"answer": d["input"], "context": [LCDocument(page_content="p")]})
    output = run(CallableSystem(keyed, input_key="input").answer("hi"))
    assert output.answer == "hi" and output.contexts == [RetrievedContext(text="p")]
    failing = RunnableLambda(lambda q: 1 / 0)
    assert run(CallableSystem(failing).answer("x")).error.startswith("system_error: ZeroDivisionError")


def test_load_callable_from_a_module_in_the_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "my_rag_module_1.py").write_text(
        "def answer(question):\n    return {'answer': 'from module', 'contexts': ['c']}\n"
        "class Holder:\n    @staticmethod\n    def answer(question):\n        return 'nested'\n"
        "NOT_CALLABLE = 3\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    system = CallableSystem.from_spec("my_rag_module_1:answer")
    assert system.name == "my_rag_module_1:answer"
    assert run(system.answer("Q")).answer == "from module"
    assert load_callable("my_rag_module_1:Holder.answer")("Q") == "nested"
    with pytest.raises(ConfigError, match="has no attribute 'missing'"):
        load_callable("my_rag_module_1:missing")
    with pytest.raises(ConfigError, match="not a function"):
        load_callable("my_rag_module_1:NOT_CALLABLE")
    with pytest.raises(ConfigError, match="Cannot import 'no_such_rag_module': no such module"):
        load_callable("no_such_rag_module:answer")
    with pytest.raises(ConfigError, match="Expected 'module:function'"):
        load_callable("my_rag_module_1")


def test_load_callable_module_with_a_broken_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "my_rag_module_2.py").write_text("import not_installed_dependency_xyz\n")
    (tmp_path / "my_rag_module_3.py").write_text("raise RuntimeError('no index on disk')\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    with pytest.raises(ConfigError, match="Importing 'my_rag_module_2' failed: No module named 'not_installed"):
        load_callable("my_rag_module_2:answer")
    with pytest.raises(ConfigError, match="RuntimeError: no index on disk"):
        load_callable("my_rag_module_3:answer")


# --------------------------------------------------------------------------- HTTP endpoint


class _Server:
    """A tiny HTTP server on 127.0.0.1 that replies from a script: (status, body, headers) per request."""

    def __init__(self) -> None:
        self.script: list[tuple[int, str, dict[str, str]]] = []
        self.default: tuple[int, str, dict[str, str]] | None = None
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                server.requests.append(json.loads(body))
                if server.script:
                    status, text, headers = server.script.pop(0)
                elif server.default is not None:
                    status, text, headers = server.default
                else:
                    question = json.loads(body)["question"]
                    status, text, headers = (
                        200,
                        json.dumps({"answer": f"echo {question}", "contexts": ["ctx"], "sources": ["src.md"]}),
                        {},
                    )
                payload = text.encode()
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/rag"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture()
def endpoint() -> Iterator[_Server]:
    server = _Server()
    yield server
    server.close()


async def ask(system: EndpointSystem, question: str) -> RagOutput:
    try:
        return await system.answer(question)
    finally:
        await close_system(system)


def test_endpoint_good_reply(endpoint: _Server) -> None:
    output = run(ask(EndpointSystem(endpoint.url), "What?"))
    assert output.answer == "echo What?"
    assert output.contexts == [RetrievedContext(text="ctx", source="src.md")]
    assert endpoint.requests == [{"question": "What?"}]


def test_endpoint_retries_500_then_succeeds(endpoint: _Server) -> None:
    endpoint.script = [(500, "overloaded", {}), (429, "slow down", {"Retry-After": "0"})]
    output = run(ask(EndpointSystem(endpoint.url, policy=CallPolicy(backoff=0.01)), "Q"))
    assert output.answer == "echo Q" and output.error == ""
    assert len(endpoint.requests) == 3


def test_endpoint_gives_up_after_max_retries(endpoint: _Server) -> None:
    endpoint.default = (503, "down for maintenance", {})
    output = run(ask(EndpointSystem(endpoint.url, policy=CallPolicy(max_retries=2, backoff=0.01)), "Q"))
    assert output.answer is None and output.error == "server_error: 503 down for maintenance"
    assert len(endpoint.requests) == 3


def test_endpoint_bad_json_and_wrong_shape(endpoint: _Server) -> None:
    endpoint.script = [(200, "<html>oops</html>", {}), (200, json.dumps({"result": "x"}), {})]

    async def both() -> tuple[RagOutput, RagOutput]:
        system = EndpointSystem(endpoint.url)
        try:
            return await system.answer("a"), await system.answer("b")
        finally:
            await system.aclose()

    not_json, wrong_shape = run(both())
    assert not_json.answer is None and not_json.error == "bad_response: not JSON: <html>oops</html>"
    assert wrong_shape.error.startswith("bad_response: no 'answer'")


def test_endpoint_not_found_before_any_answer_stops_the_run(endpoint: _Server) -> None:
    endpoint.default = (404, "no such route", {})
    with pytest.raises(QagenError, match="answered 404"):
        run(ask(EndpointSystem(endpoint.url), "Q"))


def test_endpoint_client_error_after_good_replies_is_recorded(endpoint: _Server) -> None:
    async def two() -> RagOutput:
        system = EndpointSystem(endpoint.url)
        try:
            await system.answer("first")
            endpoint.default = (422, '{"detail": "question too long"}', {})
            return await system.answer("second")
        finally:
            await system.aclose()

    assert run(two()).error == 'http_error: 422 {"detail": "question too long"}'


def test_endpoint_dead_port_raises_quickly() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(QagenError, match=rf"Cannot reach the RAG endpoint at http://127.0.0.1:{port}/rag"):
        run(ask(EndpointSystem(f"http://127.0.0.1:{port}/rag", policy=CallPolicy(max_retries=0)), "Q"))
    assert time.monotonic() - started < 5
    # With retries, every attempt is refused before the run stops.
    with pytest.raises(QagenError, match=r"connection refused after 3 attempts"):
        run(ask(EndpointSystem(f"http://127.0.0.1:{port}/rag", policy=CallPolicy(max_retries=2, backoff=0.01)), "Q"))


def test_endpoint_rejects_non_http_url() -> None:
    with pytest.raises(ConfigError, match="http:// or https://"):
        EndpointSystem("ftp://127.0.0.1/rag")
