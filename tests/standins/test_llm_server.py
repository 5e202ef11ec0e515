"""The stand-in LLM server, exercised through the real `langchain-openai` / `openai` clients."""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import os
import re
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import openai
import pytest
from langchain_openai import ChatOpenAI

import qagen
from standins.llm.outcomes import (
    DUPLICATE_QUESTION,
    MULTI_HOP_MARK,
    composed_for,
    factoid_for,
    first_sentence,
    lone_reader_answer,
)
from standins.llm.prompt_recognition import classify_prompt, extract_context, extract_question
from standins.llm.replies import (
    FALLBACK_ANSWER,
    GENERATION_FORMATS,
    MALFORMED_KINDS,
    RATING_FORMATS,
    REFUSAL,
    rating_reply,
)
from standins.llm.server import FAULT_KINDS, StandInLLM, judge_score, score_for

REPO = Path(qagen.__file__).resolve().parent.parent
PROMPTS = REPO / "prompts"
CRITERIA = ("groundedness", "relevance", "standalone")
QA_REPLY = re.compile(r"\AFactoid question: (?P<q>[^\n]+)\nAnswer: (?P<a>[^\n]+)(?:\nEvidence: (?P<e>[^\n]+))?\Z")
# Tolerant on purpose: reads every format of RATING_FORMATS (first rating only).
RATING = re.compile(r"Total rating:\**\s*(\d+)")

CONTEXTS = [
    "Tokenizers are loaded with AutoTokenizer.from_pretrained. The call downloads the vocabulary.",
    "The Hub stores datasets as parquet shards. Each shard is at most five hundred megabytes.",
    "Gradio builds web demos for machine learning models in a few lines of Python.",
    "PEFT adapters train a small number of extra weights instead of the whole model.",
]


def render(name: str, **values: str) -> str:
    """A default prompt with its placeholders filled (verbatim, like `qagen.llm.prompts`)."""
    text = (PROMPTS / f"{name}.txt").read_text(encoding="utf-8")
    # The document's name is optional in a prompt (`qagen.llm.prompts.OPTIONAL_PLACEHOLDERS`).
    values = {
        **dict.fromkeys({"document", "second_document"} & set(re.findall(r"\{([a-z_]+)\}", text)), "manual"),
        **values,
    }
    assert set(re.findall(r"\{([a-z_]+)\}", text)) == set(values), f"placeholders of {name}"
    return re.sub(r"\{([a-z_]+)\}", lambda m: values[m.group(1)], text)


def generation_prompt(context: str) -> str:
    return render("qa_generation", context=context)


def critique_prompt(criterion: str, question: str, context: str = "Some context.") -> str:
    if criterion == "groundedness":
        return render("critique_groundedness", question=question, context=context)
    if criterion == "relevance":
        return render("critique_relevance", question=question, audience="machine learning developers")
    return render("critique_standalone", question=question)


def judge_prompt(instruction: str, response: str, reference: str) -> str:
    return (
        "###Task Description:\nAn instruction, a response to evaluate, a reference answer ...\n"
        '3. The output format should look as follows: "Feedback: {{feedback}} [RESULT] {{1-5}}"\n'
        f"###The instruction to evaluate:\n{instruction}\n"
        f"###Response to evaluate:\n{response}\n"
        f"###Reference Answer (Score 5):\n{reference}\n"
        "###Score Rubrics:\n[Is the response correct?]\nScore 1: wrong.\nScore 5: right.\n"
        "###Feedback:"
    )


def chat(llm: StandInLLM, **kwargs: Any) -> ChatOpenAI:
    settings: dict[str, Any] = {
        "model": "stand-in",
        "base_url": llm.base_url,
        "api_key": "test-key",
        "max_retries": 3,
        "timeout": 1,
    }
    settings.update(kwargs)
    return ChatOpenAI(**settings)


def ask(model: ChatOpenAI, prompt: str) -> str:
    content = model.invoke(prompt).content
    assert isinstance(content, str)
    return content


@pytest.fixture
def llm() -> Iterator[StandInLLM]:
    with StandInLLM() as server:
        yield server


# ---------------------------------------------------------------- reply logic (no server)


def test_score_for_is_deterministic_in_range_and_honours_pass_rate() -> None:
    questions = [f"What is the default value of option number {i}?" for i in range(3000)]
    scores = [score_for("relevance", q) for q in questions]
    assert scores == [score_for("relevance", q) for q in questions]
    assert set(scores) == {1, 2, 3, 4, 5}
    assert 0.77 < sum(s >= 4 for s in scores) / len(scores) < 0.83  # default pass_rate 0.8
    assert all(score_for("relevance", q, pass_rate=1.0) >= 4 for q in questions)
    assert all(score_for("relevance", q, pass_rate=0.0) <= 3 for q in questions)
    # Raising the pass rate only turns failures into passes.
    assert {q for q in questions if score_for("standalone", q, 0.5) >= 4} <= {
        q for q in questions if score_for("standalone", q, 0.8) >= 4
    }
    # The criterion is part of the hash, and surrounding whitespace is not.
    assert [score_for("groundedness", q) for q in questions[:50]] != scores[:50]
    assert score_for("relevance", "  What is X?\n") == score_for("relevance", "What is X?")


def test_factoid_questions_are_distinct_standalone_and_answers_are_spans() -> None:
    contexts = [f"Library {i} exposes the function load_{i} for reading records. More text." for i in range(500)]
    pairs = [factoid_for(c) for c in contexts]
    assert len({q for q, _ in pairs}) == len(contexts)
    for context, (question, answer) in zip(contexts, pairs, strict=True):
        assert answer in context and len(answer) <= 200
        assert not re.search(r"passage|context|document", question, re.IGNORECASE)
    assert factoid_for(contexts[0]) == pairs[0]
    # duplicate_rate: that share of contexts (by hash) get the one fixed question.
    duplicated = [factoid_for(c, duplicate_rate=0.3)[0] == DUPLICATE_QUESTION for c in contexts]
    assert 0.22 < sum(duplicated) / len(contexts) < 0.38
    assert all(factoid_for(c, duplicate_rate=1.0)[0] == DUPLICATE_QUESTION for c in contexts[:20])


def test_first_sentence_is_a_bounded_single_line_span() -> None:
    assert first_sentence("\n  Hello there. Second one.") == "Hello there."
    assert first_sentence("Version 1.2 is out! Then more.") == "Version 1.2 is out!"
    long = "word " * 100
    assert len(first_sentence(long)) <= 200 and first_sentence(long) in long
    assert first_sentence("line one\nline two.") == "line one"


def test_prompt_recognition_and_extraction_resist_look_alike_content() -> None:
    # A chunk with its own "Context:" and "Output:::" lines is still extracted whole.
    chunk = "Intro line.\nContext: nested label\nOutput::: inside chunk\nLast line."
    info = classify_prompt(generation_prompt(chunk))
    assert info.kind == "generation" and info.context == chunk
    # An FAQ-style groundedness context holding "Question:" lines is not mistaken for the question.
    faq = "Question: decoy one?\nAnswer: no.\n\nQuestion: decoy two?"
    info = classify_prompt(critique_prompt("groundedness", "What is the real question?", faq))
    assert (info.kind, info.criterion, info.question) == ("critique", "groundedness", "What is the real question?")
    for criterion in ("relevance", "standalone"):
        info = classify_prompt(critique_prompt(criterion, "Which port is used?"))
        assert (info.kind, info.criterion, info.question) == ("critique", criterion, "Which port is used?")
    info = classify_prompt(judge_prompt("What is X?", "X is Y.", "X is Y."))
    assert (info.kind, info.question, info.response) == ("judge", "What is X?", "X is Y.")
    assert classify_prompt("Context:\nExtracted documents:\nDocument 0:::\nA.\nQuestion: B?").kind == "answer"
    assert extract_context("no label here") == "" and extract_question("no label") == ""


def test_prompts_quoted_inside_embedded_material_do_not_change_the_kind() -> None:
    """A corpus may hold the templates themselves (the cookbook prints them all)."""
    relevance = critique_prompt("relevance", "Which port is used?")
    info = classify_prompt(generation_prompt("The relevance critic reads:\n" + relevance))
    assert info.kind == "generation" and info.context is not None and info.context.endswith("Answer:::")
    info = classify_prompt(critique_prompt("standalone", "Where is 'Factoid question:' parsed?"))
    assert (info.kind, info.criterion) == ("critique", "standalone")
    quoting = critique_prompt("groundedness", "What does the relevance critic ask?", relevance)
    assert classify_prompt(quoting).criterion == "groundedness"
    rag = "Answer from the context.\nContext:\nExtracted documents:\nDocument 0:::\n" + relevance
    assert classify_prompt(rag + "\nQuestion: What is rated?").kind == "answer"
    judged = judge_prompt("What is rated?", "Total rating: 4", "Factoid question: x\nContext: y")
    assert classify_prompt(judged).kind == "judge"


def test_every_rating_format_carries_the_score() -> None:
    for fmt in RATING_FORMATS:
        for score in range(1, 6):
            reply = rating_reply("relevance", score, fmt)
            first = RATING.search(reply)
            assert first is not None and int(first.group(1)) == score, (fmt, reply)


def test_rating_formats_are_read_by_the_product_parser() -> None:
    parsing = pytest.importorskip("qagen.generation.replies")
    for fmt in RATING_FORMATS:
        for score in range(1, 6):
            parsed = parsing.parse_rating(rating_reply("groundedness", score, fmt))
            assert parsed.score == score, (fmt, parsed)


# ---------------------------------------------------------------- through the real client


def test_generation_reply_parses_and_is_deterministic(llm: StandInLLM) -> None:
    model = chat(llm)
    replies = [ask(model, generation_prompt(c)) for c in CONTEXTS]
    questions = []
    for context, reply in zip(CONTEXTS, replies, strict=True):
        match = QA_REPLY.match(reply)
        assert match is not None, reply
        assert (match["q"], match["a"]) == factoid_for(context)
        assert match["a"] in context
        assert match["e"] == match["a"]  # the prompt asks for the evidence: the answer's sentence, quoted
        questions.append(match["q"])
    assert len(set(questions)) == len(CONTEXTS)
    assert [ask(model, generation_prompt(c)) for c in CONTEXTS] == replies
    assert [e["kind"] for e in llm.log] == ["generation"] * 2 * len(CONTEXTS)


def test_the_composing_prompt_is_answered_from_its_parts_questions_and_answers(llm: StandInLLM) -> None:
    parts = [factoid_for(context) for context in CONTEXTS[:2]]
    # A part's question may hold the labels the stand-in reads: qagen neutralises them (`Answer -`).
    parts[0] = (parts[0][0] + " (Answer - none)", parts[0][1])
    prompt = render(
        "qa_multi_hop_compose",
        documents='the documents "tokenizers" and "hub"',
        first_question=parts[0][0],
        first_answer=parts[0][1],
        second_question=parts[1][0],
        second_answer=parts[1][1],
    )
    info = classify_prompt(prompt)
    assert (info.kind, info.label, info.parts) == ("generation", "Multi-hop question", tuple(parts))
    reply = ask(chat(llm), prompt)
    question, answer = composed_for(tuple(parts))
    assert reply == f"Multi-hop question: {question}\nAnswer: {answer}"
    assert MULTI_HOP_MARK in question and answer == f"{parts[0][1]} {parts[1][1]}"
    # A share of them one passage alone answers: the question carries every part's answer, encoded, which a
    # reader of either passage gives; a reader of one passage of the others gives none.
    composed = [composed_for(((f"Q{n}?", "First."), ("Other?", "Second.")), single_hop_rate=0.5) for n in range(40)]
    assert {answer for _, answer in composed} == {"First. Second."}
    lone = [lone_reader_answer(question) for question, _ in composed]
    assert {"First. Second.", None} == set(lone)
    assert all("First" not in question and "Second" not in question for question, _ in composed)


@pytest.mark.parametrize("criterion", CRITERIA)
def test_critique_rating_matches_score_for(llm: StandInLLM, criterion: str) -> None:
    model = chat(llm)
    for i in range(8):
        question = f"Which flag enables feature number {i} in the tool?"
        reply = ask(model, critique_prompt(criterion, question))
        assert reply.startswith("Evaluation: ")
        match = re.fullmatch(r"Evaluation: [^\n]+\nTotal rating: ([1-5])", reply)
        assert match is not None, reply
        assert int(match.group(1)) == score_for(criterion, question)
        entry = llm.log[-1]
        assert (entry["kind"], entry["criterion"], entry["format"]) == ("critique", criterion, "canonical")
        assert entry["score"] == score_for(criterion, question)


def test_pass_rate_per_criterion_and_score_policy_override() -> None:
    with StandInLLM(pass_rate={"relevance": 1.0, "standalone": 0.0}) as server:
        model = chat(server)
        for i in range(6):
            question = f"How are shards of size {i} named?"
            assert int(RATING.findall(ask(model, critique_prompt("relevance", question)))[0]) >= 4
            assert int(RATING.findall(ask(model, critique_prompt("standalone", question)))[0]) <= 3
    calls: list[tuple[str, str]] = []

    def policy(criterion: str, question: str) -> int:
        calls.append((criterion, question))
        return 5 if criterion == "groundedness" else 2

    with StandInLLM(score_policy=policy) as server:
        model = chat(server)
        assert ask(model, critique_prompt("groundedness", "Q one?")).endswith("Total rating: 5")
        assert ask(model, critique_prompt("relevance", "Q two?")).endswith("Total rating: 2")
    assert calls == [("groundedness", "Q one?"), ("relevance", "Q two?")]


def test_format_variety_yields_non_canonical_formats() -> None:
    with StandInLLM(format_variety=1.0) as server:
        model = chat(server)
        questions = [f"What does setting number {i} control?" for i in range(40)]
        replies = [ask(model, critique_prompt("relevance", q)) for q in questions]
        log = server.log
    formats = [e["format"] for e in log]
    assert "canonical" not in formats
    assert set(formats) == set(RATING_FORMATS) - {"canonical"}
    for question, reply, entry in zip(questions, replies, log, strict=True):
        assert entry["score"] == score_for("relevance", question)
        assert int(RATING.findall(reply)[0]) == entry["score"], reply


def test_format_variety_is_a_deterministic_share() -> None:
    with StandInLLM(format_variety=0.3) as server:
        model = chat(server)
        for i in range(100):
            ask(model, critique_prompt("standalone", f"Which default does option {i} have?"))
        first = [e["format"] for e in server.log]
        server.reset()
        for i in range(100):
            ask(model, critique_prompt("standalone", f"Which default does option {i} have?"))
        assert [e["format"] for e in server.log] == first
    assert 15 <= sum(f != "canonical" for f in first) <= 45


def test_generation_format_variety_and_duplicates() -> None:
    with StandInLLM(generation_format_variety=1.0, duplicate_rate=1.0) as server:
        model = chat(server)
        replies = [ask(model, generation_prompt(c)) for c in CONTEXTS]
        formats = {e["format"] for e in server.log}
    assert formats <= set(GENERATION_FORMATS) - {"canonical"} and formats
    assert all(DUPLICATE_QUESTION in r for r in replies)


@pytest.mark.parametrize("fault", FAULT_KINDS)
def test_faults_on_first_attempts_are_retried_to_the_same_answers(fault: str) -> None:
    prompts = [generation_prompt(CONTEXTS[0]), critique_prompt("relevance", "Which port is used?")]
    with StandInLLM() as clean:
        expected = [ask(chat(clean), p) for p in prompts]
    with StandInLLM(fault_rate=1.0, fault_kinds=[fault], timeout_sleep=3.0) as server:
        model = chat(server, max_retries=2, timeout=1)
        # Both prompts at once: a timed-out first attempt costs the client's whole timeout.
        assert [reply.content for reply in model.batch(prompts, config={"max_concurrency": 2})] == expected
        log = server.log
        by_body = server.requests_by_body()
    assert len(by_body) == 2 and set(by_body.values()) == {2}
    for body in by_body:
        attempts = [e for e in log if e["body_sha256"] == body]
        assert [e["attempt"] for e in attempts] == [1, 2]
        assert (attempts[0]["kind"], attempts[0]["fault"]) == ("fault", fault)
        assert attempts[1]["kind"] in ("generation", "critique") and attempts[1]["status_code"] == 200
    expected_status = {"429": 429, "500": 500, "drop": None, "timeout": None}[fault]
    assert all(e["status_code"] == expected_status for e in log if e["kind"] == "fault")


def test_without_retries_a_fault_reaches_the_caller() -> None:
    with StandInLLM(fault_rate=1.0, fault_kinds=["429"]) as server:
        with pytest.raises(openai.RateLimitError):
            chat(server, max_retries=0).invoke(generation_prompt(CONTEXTS[1]))
        # The second attempt of the same body is answered.
        assert QA_REPLY.match(ask(chat(server, max_retries=0), generation_prompt(CONTEXTS[1])))


def raw_post(port: int, body: str | bytes) -> tuple[int, http.client.HTTPMessage, Any]:
    """POST to /v1/chat/completions without any client library: (status, headers, JSON)."""
    with contextlib.closing(http.client.HTTPConnection("127.0.0.1", port, timeout=5)) as conn:
        conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
        response = conn.getresponse()
        return response.status, response.headers, json.loads(response.read())


def test_429_sends_retry_after() -> None:
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    with StandInLLM(fault_rate=1.0, fault_kinds=["429"], retry_after=0.25) as server:
        status, headers, error = raw_post(server.port, body)
        assert status == 429 and headers["Retry-After"] == "0.25"
        assert error["error"]["code"] == "rate_limit_exceeded"
    with StandInLLM(fault_rate=1.0, fault_kinds=["429"]) as server:
        assert raw_post(server.port, body)[1]["Retry-After"] == "0"


def test_fault_rate_is_a_deterministic_share_of_bodies() -> None:
    prompts = [critique_prompt("standalone", f"What is limit number {i}?") for i in range(60)]
    with StandInLLM(fault_rate=0.25, fault_kinds=["500"]) as server:
        model = chat(server, max_retries=0)
        outcomes = []
        for prompt in prompts:
            try:
                model.invoke(prompt)
                outcomes.append(True)
            except openai.InternalServerError:
                outcomes.append(False)
    assert 5 <= outcomes.count(False) <= 25
    with StandInLLM(fault_rate=0.25, fault_kinds=["500"]) as server:
        again = []
        for prompt in prompts:
            try:
                chat(server, max_retries=0).invoke(prompt)
                again.append(True)
            except openai.InternalServerError:
                again.append(False)
    assert again == outcomes


def test_malformed_replies_are_logged_with_their_kind() -> None:
    with StandInLLM(malformed_rate=1.0) as server:
        model = chat(server)
        replies = [ask(model, critique_prompt("groundedness", f"How big is chunk {i}?")) for i in range(30)]
        log = server.log
    kinds = {e["malformed"] for e in log}
    assert all(e["kind"] == "malformed" and e["prompt"] == "critique" for e in log)
    assert kinds == set(MALFORMED_KINDS["critique"])
    for reply, entry in zip(replies, log, strict=True):
        valid = re.search(r"Total rating:\s*[1-5]\b", reply)
        assert valid is None, reply
        if entry["malformed"] == "empty":
            assert reply == ""
        if entry["malformed"] == "refusal":
            assert reply == REFUSAL
        if entry["malformed"] == "out_of_range":
            assert entry["score"] in (0, 7) and reply.endswith(f"Total rating: {entry['score']}")


def test_truncated_reply_has_finish_reason_length() -> None:
    with StandInLLM(malformed_rate=1.0) as server:
        model = chat(server)
        for i in range(40):
            message = model.invoke(generation_prompt(f"Topic {i}: shards are compressed with zstd."))
            if server.log[-1]["malformed"] == "truncated":
                assert message.response_metadata["finish_reason"] == "length"
                assert "Answer:" not in message.content
                break
        else:
            pytest.fail("no truncated reply in 40 tries")


def test_malformed_then_faults_keep_answers_identical() -> None:
    """Faulted attempts are not answers: the n-th answer to a body is the same with faults."""
    prompts = [critique_prompt("relevance", f"Which encoder is used in release {i}?") for i in range(12)]
    with StandInLLM(malformed_rate=0.5) as clean:
        expected = [ask(chat(clean), p) for p in prompts]
    # A tiny Retry-After, which the client honours, keeps the twelve retries fast.
    with StandInLLM(malformed_rate=0.5, fault_rate=1.0, fault_kinds=["429"], retry_after=0.01) as faulty:
        got = [ask(chat(faulty, max_retries=2), p) for p in prompts]
    assert got == expected
    # Re-asking a prompt whose answer was malformed can get a well-formed answer.
    with StandInLLM(malformed_rate=0.5) as server:
        model = chat(server)
        for prompt in prompts:
            replies = [ask(model, prompt) for _ in range(8)]
            assert any(re.search(r"Total rating: [1-5]$", r) for r in replies)


def test_judge_and_rag_answer(llm: StandInLLM) -> None:
    model = chat(llm)
    for i in range(5):
        instruction, response = f"What is item {i}?", f"Item {i} is a thing."
        reply = ask(model, judge_prompt(instruction, response, "A reference."))
        assert reply.startswith("Feedback: ")
        assert reply.endswith(f"[RESULT] {judge_score(instruction, response)}")
    rag = "Context:\nExtracted documents:\nDocument 0:::\nShards are parquet files. They are small.\n"
    rag += "Document 1:::\nOther."
    assert ask(model, rag + "\n---\nQuestion: What are shards?") == "Shards are parquet files."
    assert ask(model, "Say hello.") == FALLBACK_ANSWER
    assert [e["kind"] for e in llm.log][-2:] == ["answer", "answer"]


def test_judge_policy_override() -> None:
    with StandInLLM(judge_policy=lambda q, r: 3) as server:
        assert ask(chat(server), judge_prompt("Q?", "R.", "Ref.")).endswith("[RESULT] 3")


def test_api_key_is_required_when_set() -> None:
    with StandInLLM(api_key="secret") as server:
        with pytest.raises(openai.AuthenticationError) as info:
            chat(server, api_key="wrong", max_retries=3).invoke("hello")
        assert info.value.code == "invalid_api_key"
        assert ask(chat(server, api_key="secret"), "hello") == FALLBACK_ANSWER
        status, _, payload = raw_post(server.port, b"{}")
        error = payload["error"]
        assert status == 401
        assert (error["type"], error["code"]) == ("invalid_request_error", "invalid_api_key")
        # A 401 is final: the client did not retry it.
        assert [e["status_code"] for e in server.log] == [401, 200, 401]


def test_unknown_model_is_404() -> None:
    with StandInLLM(models=["stand-in", "critic"]) as server:
        with pytest.raises(openai.NotFoundError) as info:
            chat(server, model="gpt-nonexistent").invoke("hello")
        assert info.value.code == "model_not_found"
        assert "The model `gpt-nonexistent` does not exist" in str(info.value)
        assert ask(chat(server, model="critic"), "hello") == FALLBACK_ANSWER
        client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        assert [m.id for m in client.models.list()] == ["stand-in", "critic"]
        assert client.models.retrieve("critic").id == "critic"
        with pytest.raises(openai.NotFoundError):
            client.models.retrieve("other")


def test_streaming_is_refused_with_400(llm: StandInLLM) -> None:
    client = openai.OpenAI(base_url=llm.base_url, api_key="k", max_retries=0)
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model="stand-in", messages=[{"role": "user", "content": "hi"}], stream=True)
    assert "stream" in str(info.value) and "not supported" in str(info.value)


def test_response_shape_and_usage(llm: StandInLLM) -> None:
    client = openai.OpenAI(base_url=llm.base_url, api_key="k", max_retries=0)
    prompt = generation_prompt(CONTEXTS[2])
    completion = client.chat.completions.create(
        model="stand-in", messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": prompt}]
    )
    assert completion.object == "chat.completion" and completion.model == "stand-in"
    assert completion.choices[0].finish_reason == "stop"
    content = completion.choices[0].message.content
    assert content is not None and QA_REPLY.match(content)
    usage = completion.usage
    assert usage is not None
    assert usage.prompt_tokens == -(-(len(prompt) + len("Be brief.")) // 4)
    assert usage.completion_tokens == -(-len(content) // 4)
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    short = chat(llm, max_tokens=3).invoke(prompt)
    assert len(short.content) == 12 and short.response_metadata["finish_reason"] == "length"


def test_bad_requests_get_json_errors_and_connections_are_kept_alive(llm: StandInLLM) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", llm.port, timeout=5)
    headers = {"Content-Type": "application/json"}
    statuses = []
    sockets = []
    for method, path, body in [
        ("POST", "/v1/chat/completions", json.dumps({"model": "m", "messages": [{"role": "user", "content": "a"}]})),
        ("POST", "/v1/chat/completions", "not json"),
        ("POST", "/v1/chat/completions", json.dumps({"model": "m"})),
        ("POST", "/v1/audio/speech", "{}"),
        ("GET", "/v1/unknown", None),
        ("POST", "/v1/chat/completions", json.dumps({"model": "m", "messages": [{"role": "user", "content": "b"}]})),
    ]:
        conn.request(method, path, body, headers)
        response = conn.getresponse()
        payload = json.loads(response.read())
        assert response.getheader("Content-Length") is not None
        statuses.append(response.status)
        sockets.append(conn.sock)
        if response.status != 200:
            assert set(payload["error"]) >= {"message", "type", "code"}
    assert statuses == [200, 400, 400, 404, 404, 200]
    assert len({id(s) for s in sockets}) == 1  # one connection served all six requests
    conn.close()


def test_concurrent_requests_overlap() -> None:
    prompts = [critique_prompt("relevance", f"Which option sets limit {i}?") for i in range(32)]
    with StandInLLM(latency=0.2) as server:
        model = chat(server, timeout=10)
        ask(model, generation_prompt(CONTEXTS[0]))  # build the client outside the timing
        with ThreadPoolExecutor(max_workers=32) as pool:
            started = time.perf_counter()
            replies = list(pool.map(lambda p: ask(model, p), prompts))
            elapsed = time.perf_counter() - started
    assert len(replies) == 32 and all(RATING.search(r) for r in replies)
    assert elapsed < 1.5, f"32 concurrent requests at 0.2 s took {elapsed:.2f} s"


def test_async_burst_of_64() -> None:
    prompts = [critique_prompt("standalone", f"What does flag {i} do?") for i in range(64)]

    async def run(model: ChatOpenAI) -> tuple[list[Any], float]:
        await model.ainvoke("warm up")
        started = time.perf_counter()
        messages = await asyncio.gather(*(model.ainvoke(p) for p in prompts))
        return messages, time.perf_counter() - started

    with StandInLLM(latency=0.2) as server:
        messages, elapsed = asyncio.run(run(chat(server, timeout=10)))
        assert len(server.requests_by_body()) == 65
        # Overlap is counted by the server, not timed: a timing bound fails on a loaded machine.
        assert server.max_in_flight >= 32, f"at most {server.max_in_flight} requests overlapped ({elapsed:.2f} s)"
    assert [int(RATING.findall(str(m.content))[0]) for m in messages] == [
        score_for("standalone", f"What does flag {i} do?") for i in range(64)
    ]


def test_log_file_is_jsonl_and_flushed_per_request(tmp_path: Path) -> None:
    log_path = tmp_path / "requests.jsonl"
    with StandInLLM(log_path=log_path, fault_rate=1.0, fault_kinds=["500"]) as server:
        model = chat(server)
        ask(model, critique_prompt("groundedness", "What is the chunk size?"))
        # Readable while the server still runs: every line is flushed as it is written.
        lines = [json.loads(line) for line in log_path.read_text(encoding="utf-8").splitlines()]
        assert lines == [dict(e) for e in server.log]
    assert [(x["attempt"], x["kind"], x["status_code"]) for x in lines] == [(1, "fault", 500), (2, "critique", 200)]
    required = {"time", "body_sha256", "attempt", "kind", "criterion", "model", "status_code", "score", "format"}
    required |= {"reply", "prompt", "malformed", "fault"}
    assert required <= set(lines[1])
    assert lines[1]["score"] == score_for("groundedness", "What is the chunk size?")
    assert lines[1]["reply"].endswith(f"Total rating: {lines[1]['score']}")
    assert lines[0]["body_sha256"] == lines[1]["body_sha256"]


def test_configure_changes_knobs_of_a_running_server(llm: StandInLLM) -> None:
    model = chat(llm)
    assert "Total rating" in ask(model, critique_prompt("relevance", "Q?"))
    llm.configure(malformed_rate=1.0, fault_kinds=["500"])
    assert llm.knobs.fault_kinds == ("500",) and llm.knobs.replies.malformed_rate == 1.0
    ask(model, critique_prompt("relevance", "Another Q?"))
    assert llm.log[-1]["kind"] == "malformed"
    with pytest.raises(TypeError):
        llm.configure(no_such_knob=1)
    with pytest.raises(ValueError):
        llm.configure(fault_rate=1.5)
    with pytest.raises(ValueError):
        StandInLLM(fault_kinds=["teapot"])


def test_stop_is_prompt_with_idle_and_sleeping_connections() -> None:
    server = StandInLLM(fault_rate=1.0, fault_kinds=["timeout"], timeout_sleep=30).start()
    idle = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    idle.request("GET", "/v1/models")
    idle.getresponse().read()  # leaves an idle keep-alive connection open
    caller = threading.Thread(target=lambda: _swallow(lambda: ask(chat(server, timeout=60, max_retries=0), "x")))
    caller.start()
    deadline = time.monotonic() + 5
    while not any(e["fault"] == "timeout" for e in server.log) and time.monotonic() < deadline:
        time.sleep(0.01)
    started = time.perf_counter()
    server.stop()
    assert time.perf_counter() - started < 1.0
    idle.close()
    caller.join(timeout=5)
    assert not caller.is_alive()
    server.stop()  # idempotent
    with pytest.raises(RuntimeError):
        _ = server.base_url


def _swallow(call: Any) -> None:
    with contextlib.suppress(openai.APIError):
        call()


@pytest.mark.slow
@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT])
def test_cli_serves_until_signalled(tmp_path: Path, stop_signal: signal.Signals) -> None:
    log_path = tmp_path / "cli.jsonl"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    command = [sys.executable, "-m", "standins.llm.server", "--port", "0", "--format-variety", "0"]
    command += ["--latency", "0.01", "--pass-rate", "relevance=1.0", "--api-key", "test-key", "--log", str(log_path)]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) as process:
        _serve_one_critique(process, stop_signal)
        assert process.stderr is not None and process.stderr.read() == ""
    entries = [json.loads(x) for x in log_path.read_text(encoding="utf-8").splitlines()]
    assert [e["kind"] for e in entries] == ["critique"]


def _serve_one_critique(process: subprocess.Popen[str], stop_signal: signal.Signals) -> None:
    try:
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], 20)
        assert ready, "the CLI printed nothing within 20 s"
        line = process.stdout.readline()
        match = re.fullmatch(r"stand-in LLM listening on (http://127\.0\.0\.1:\d+/v1)\n", line)
        assert match is not None, line
        settings: dict[str, Any] = {"api_key": "test-key", "max_retries": 3, "timeout": 5}
        model = ChatOpenAI(model="stand-in", base_url=match.group(1), **settings)
        reply = ask(model, critique_prompt("relevance", "Which chunk size is the default?"))
        assert int(RATING.findall(reply)[0]) >= 4
        process.send_signal(stop_signal)
        assert process.wait(timeout=10) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_cli_rejects_bad_knobs() -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    result = subprocess.run(
        [sys.executable, "-m", "standins.llm.server", "--fault-rate", "2"],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )
    assert result.returncode == 2 and "between 0 and 1" in result.stderr


def test_a_crash_of_the_stand_in_is_a_loud_final_500() -> None:
    def broken(criterion: str, question: str) -> int:
        raise RuntimeError("policy bug")

    with StandInLLM(score_policy=broken) as server:
        with pytest.raises(openai.InternalServerError) as info:
            chat(server, max_retries=3).invoke(critique_prompt("relevance", "Q?"))
        assert "crashed" in str(info.value)
        assert [(e["kind"], e["status_code"]) for e in server.log] == [("crash", 500)]  # not retried
        assert ask(chat(server), "hello") == FALLBACK_ANSWER  # the server still serves


def test_chat_model_helper_and_busy_port(tmp_path: Path) -> None:
    with StandInLLM(api_key="secret") as server:
        model = server.chat_model(max_retries=0, timeout=5)
        assert QA_REPLY.match(ask(model, generation_prompt(CONTEXTS[3])))
        with pytest.raises(OSError):
            StandInLLM(port=server.port, log_path=tmp_path / "never.jsonl").start()
    assert not (tmp_path / "never.jsonl").exists()
