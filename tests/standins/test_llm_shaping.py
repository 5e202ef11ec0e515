"""How the stand-in LLM sends its replies (`standins.llm.shaping`), through real HTTP: reasoning
inline or in `reasoning_content` (with decoys), replies cut short, unclosed reasoning, huge replies,
and the request's token limit; each checked in the JSON sent and in the request log."""

from __future__ import annotations

import contextlib
import http.client
import json
import math
import os
import re
import select
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

import qagen
from standins.llm.decoys import DECOY_ANSWER, reasoning_for
from standins.llm.log import LogEntry
from standins.llm.outcomes import factoid_for, judge_score, score_for
from standins.llm.replies import MALFORMED_KINDS, Reply
from standins.llm.server import StandInLLM
from standins.llm.server_args import build_parser

REPO = Path(qagen.__file__).resolve().parent.parent
PROMPTS = REPO / "prompts"
SHAPE_FIELDS = ("thinking", "reasoning_content", "decoy_score", "decoy_question", "decoy_answer", "cut", "huge_bytes")
THINK = re.compile(r"\A<(?P<tag>think|thinking)>\n(?P<reasoning>.*)\n</(?P=tag)>\n(?P<reply>.*)\Z", re.S)
RATING_LINE = re.compile(r"^Total rating: ([1-5])$", re.M)

CONTEXTS = [
    "Tokenizers are loaded with AutoTokenizer.from_pretrained. The call downloads the vocabulary.",
    "The Hub stores datasets as parquet shards. Each shard is at most five hundred megabytes.",
    "Gradio builds web demos for machine learning models in a few lines of Python.",
    "PEFT adapters train a small number of extra weights instead of the whole model.",
]
RAG = "Context:\nExtracted documents:\nDocument 0:::\nShards are parquet files. They are small.\n---\nQuestion: What?"
RAG_UNICODE = "Context:\nExtracted documents:\nDocument 0:::\nÜber die Straße geht es zum Bahnhof 🚉. Mehr.\n"


def render(name: str, **values: str) -> str:
    """A default prompt with its placeholders filled."""
    text = (PROMPTS / f"{name}.txt").read_text(encoding="utf-8")
    # The document's name is optional in a prompt (`qagen.llm.prompts.OPTIONAL_PLACEHOLDERS`).
    values = {
        **dict.fromkeys({"document", "second_document"} & set(re.findall(r"\{([a-z_]+)\}", text)), "manual"),
        **values,
    }
    assert set(re.findall(r"\{([a-z_]+)\}", text)) == set(values), f"placeholders of {name}"
    return re.sub(r"\{([a-z_]+)\}", lambda m: values[m.group(1)], text)


def critique(criterion: str, question: str) -> str:
    if criterion == "groundedness":
        return render("critique_groundedness", question=question, context="Some context.")
    if criterion == "relevance":
        return render("critique_relevance", question=question, audience="machine learning developers")
    return render("critique_standalone", question=question)


def generation(context: str) -> str:
    return render("qa_generation", context=context)


def judge(question: str, response: str) -> str:
    return render("judge_correctness", question=question, response=response, reference_answer="A reference.")


def grader(question: str, answer: str) -> str:
    return render("grader_correct", question=question, reference_answer="Port 8000.", answer=answer)


def precision(question: str, context: str) -> str:
    return render("ragas_context_precision", question=question, reference_answer="Port 8000.", context=context)


# One prompt of every kind that gets a decoy, plus a RAG answer.
MIXED = [
    critique("groundedness", "Which port does the server use?"),
    critique("relevance", "How are shards named?"),
    critique("standalone", "What does the flag do?"),
    *(generation(c) for c in CONTEXTS),
    judge("What is X?", "X is Y."),
    judge("Which port?", "Port 8000."),
    grader("Which port?", "Port 8000."),
    precision("Which port?", "The server listens on port 8000."),
    RAG,
]


def post(server: StandInLLM, prompt: str, **fields: Any) -> tuple[dict[str, Any], LogEntry]:
    """POST one chat request without a client library: (the JSON answer, its log entry)."""
    body = json.dumps({"model": "stand-in", "messages": [{"role": "user", "content": prompt}], **fields})
    with contextlib.closing(http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)) as conn:
        conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
        response = conn.getresponse()
        payload = json.loads(response.read())
    assert response.status == 200, payload
    return payload, server.log[-1]


def message(payload: dict[str, Any]) -> dict[str, Any]:
    choice = payload["choices"][0]
    assert isinstance(choice["message"], dict)
    return choice["message"]


def sent(payload: dict[str, Any]) -> dict[str, Any]:
    """The payload without what changes per call (its id and time)."""
    return {k: v for k, v in payload.items() if k not in ("id", "created")}


def logged(entry: LogEntry) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if k != "time"}


@pytest.fixture(scope="module")
def plain() -> Iterator[StandInLLM]:
    """A stand-in with every shaping knob off: the replies the others are compared against."""
    with StandInLLM() as server:
        yield server


def plain_content(plain: StandInLLM, prompt: str) -> str:
    content = message(post(plain, prompt)[0])["content"]
    assert isinstance(content, str)
    return content


# ---------------------------------------------------------------- off by default


def test_default_and_zero_rates_change_nothing(plain: StandInLLM) -> None:
    zero: dict[str, Any] = {
        "think_rate": 0.0,
        "think_tag": "thinking",
        "reasoning_content_rate": 0.0,
        "truncate_rate": 0.0,
        "unterminated_think_rate": 0.0,
        "huge_reply_bytes": 100_000,
        "huge_rate": 0.0,
    }
    with StandInLLM(**zero) as server:
        for prompt in MIXED:
            expected, plain_entry = post(plain, prompt)
            got, entry = post(server, prompt)
            assert sent(got) == sent(expected)
            assert set(message(got)) == {"role", "content"}
            assert set(got["usage"]) == {"prompt_tokens", "completion_tokens", "total_tokens"}
            assert got["choices"][0]["finish_reason"] == "stop"
            for e in (entry, plain_entry):
                assert e["finish_reason"] == "stop" and e["reply"] == message(got)["content"]
                assert all(dict(e)[field] is None for field in SHAPE_FIELDS), e
    assert server.knobs.shaping.think_tag == "thinking"


# ---------------------------------------------------------------- think_rate


@pytest.mark.parametrize("tag", ["think", "thinking"])
def test_think_rate_prefixes_reasoning_with_decoys(plain: StandInLLM, tag: str) -> None:
    with StandInLLM(think_rate=1.0, think_tag=tag) as server:
        for prompt in MIXED:
            payload, entry = post(server, prompt)
            content = message(payload)["content"]
            match = THINK.match(content)
            assert match is not None and match["tag"] == tag, content
            assert match["reply"] == plain_content(plain, prompt)
            assert "reasoning_content" not in message(payload)
            assert payload["choices"][0]["finish_reason"] == "stop"
            assert payload["usage"]["completion_tokens"] == math.ceil(len(content) / 4)
            assert (entry["thinking"], entry["reply"], entry["finish_reason"]) == ("inline", content, "stop")
            assert entry["reasoning_content"] is None and entry["cut"] is None
            _assert_decoys(entry, match["reasoning"], match["reply"])


def _assert_decoys(entry: LogEntry, reasoning: str, reply: str) -> None:
    """The reasoning holds the logged decoy values, and they differ from the real reply's."""
    assert "<think" not in reasoning and "</" not in reasoning
    kind = entry["prompt"]
    decoy = entry["decoy_score"]
    if kind == "critique":
        assert decoy in range(1, 6) and decoy != entry["score"]
        assert RATING_LINE.findall(reasoning) == [str(decoy)] and "Evaluation: " in reasoning
        assert RATING_LINE.findall(reply) == [str(entry["score"])]
    elif kind == "judge":
        assert decoy in range(1, 6) and decoy != entry["score"]
        assert re.findall(r"\[RESULT\] (\d)", reasoning) == [str(decoy)]
        assert reply.endswith(f"[RESULT] {entry['score']}")
    elif kind == "generation":
        question, answer = entry["decoy_question"], entry["decoy_answer"]
        assert question is not None and answer is not None
        assert f"Factoid question: {question}\nAnswer: {answer}" in reasoning
        assert question not in reply and answer not in reply
    elif kind == "grader":
        assert decoy == 1 - (entry["score"] or 0)
        assert f"Grade: {'true' if decoy else 'false'}" in reasoning
    elif kind == "ragas_context_precision":
        assert decoy == 1 - (entry["score"] or 0)
        assert f"Verdict: {'Yes' if decoy else 'No'}" in reasoning
    else:
        assert kind == "answer"
        assert entry["decoy_answer"] == DECOY_ANSWER and DECOY_ANSWER in reasoning and DECOY_ANSWER not in reply
    if kind != "generation":
        assert entry["decoy_question"] is None
    if kind in ("critique", "judge", "grader", "ragas_context_precision"):
        assert entry["decoy_answer"] is None
    else:
        assert decoy is None


def test_think_rate_is_a_deterministic_share(plain: StandInLLM) -> None:
    prompts = [critique("relevance", f"Which default does option {i} have?") for i in range(40)]
    runs = []
    for _ in range(2):
        with StandInLLM(think_rate=0.5) as server:
            runs.append([post(server, p) for p in prompts])
    assert [sent(p) for p, _ in runs[0]] == [sent(p) for p, _ in runs[1]]
    thinking = [e["thinking"] for _, e in runs[0]]
    assert 12 <= thinking.count("inline") <= 28 and set(thinking) == {"inline", None}
    for prompt, (payload, entry) in zip(prompts, runs[0], strict=True):
        if entry["thinking"] is None:
            assert message(payload)["content"] == plain_content(plain, prompt)
            assert entry["decoy_score"] is None


# ---------------------------------------------------------------- reasoning_content_rate


def test_reasoning_content_rate_moves_the_reasoning_out_of_content(plain: StandInLLM) -> None:
    # reasoning_content takes precedence over inline thinking.
    with StandInLLM(reasoning_content_rate=1.0, think_rate=1.0) as server:
        for prompt in MIXED:
            payload, entry = post(server, prompt, n=2)
            said = message(payload)
            reasoning = said["reasoning_content"]
            assert said["content"] == plain_content(plain, prompt)
            assert isinstance(reasoning, str) and reasoning == entry["reasoning_content"]
            assert [c["message"] for c in payload["choices"]] == [said, said]
            content_tokens, reasoning_tokens = math.ceil(len(said["content"]) / 4), math.ceil(len(reasoning) / 4)
            usage = payload["usage"]
            assert usage["completion_tokens"] == 2 * (content_tokens + reasoning_tokens)
            assert usage["completion_tokens_details"] == {"reasoning_tokens": 2 * reasoning_tokens}
            assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
            assert (entry["thinking"], entry["finish_reason"], entry["reply"]) == (
                "reasoning_content",
                "stop",
                said["content"],
            )
            _assert_decoys(entry, reasoning, said["content"])
        # The openai client keeps the field (as it does for vLLM's).
        client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        completion = client.chat.completions.create(
            model="stand-in", messages=[{"role": "user", "content": critique("relevance", "Which port?")}]
        )
        extra = completion.choices[0].message.model_extra or {}
        assert extra["reasoning_content"] == server.log[-1]["reasoning_content"]
        assert completion.choices[0].message.content == plain_content(plain, critique("relevance", "Which port?"))


# ---------------------------------------------------------------- truncate_rate


def test_truncate_rate_cuts_replies_inside_or_just_after_the_verdict(plain: StandInLLM) -> None:
    critiques = [critique("groundedness", f"How big is chunk {i}?") for i in range(30)]
    generations = [generation(f"Release {i} compresses shards with zstd. It is fast.") for i in range(12)]
    rating_kept = rating_lost = answer_cut = 0
    with StandInLLM(truncate_rate=1.0) as server:
        for prompt in critiques + generations:
            payload, entry = post(server, prompt)
            content = message(payload)["content"]
            whole = plain_content(plain, prompt)
            assert payload["choices"][0]["finish_reason"] == "length"
            assert (entry["finish_reason"], entry["cut"], entry["reply"]) == ("length", "truncate_rate", content)
            assert content and content != whole and (whole.startswith(content) or content.startswith(whole))
            assert entry["thinking"] is None and entry["decoy_score"] is None
            if prompt in critiques:
                ratings = re.findall(r"Total rating: ([1-5])", content)
                if ratings:
                    assert ratings == [str(entry["score"])] and content.startswith(whole)
                    rating_kept += 1
                else:
                    rating_lost += 1
            elif "\nAnswer: " in content and whole.startswith(content):
                answer_cut += 1  # "Answer: Release ... is fa"
    assert rating_kept and rating_lost and answer_cut


def test_truncation_comes_after_complete_reasoning(plain: StandInLLM) -> None:
    with StandInLLM(truncate_rate=1.0, think_rate=1.0, think_tag="thinking") as server:
        for prompt in MIXED:
            payload, entry = post(server, prompt)
            match = THINK.match(message(payload)["content"])
            assert match is not None and match["tag"] == "thinking"
            whole = plain_content(plain, prompt)
            assert match["reply"] != whole
            assert whole.startswith(match["reply"]) or match["reply"].startswith(whole)
            assert (entry["thinking"], entry["cut"], entry["finish_reason"]) == ("inline", "truncate_rate", "length")


def test_truncation_is_chosen_per_answer_so_asking_again_can_help() -> None:
    prompts = [critique("relevance", f"Which encoder is used in release {i}?") for i in range(10)]
    runs = []
    for _ in range(2):
        with StandInLLM(truncate_rate=0.5) as server:
            runs.append([[post(server, p)[1]["cut"] for _ in range(6)] for p in prompts])
    assert runs[0] == runs[1]  # the n-th answer to a body is cut or not, reproducibly
    assert all(None in cuts for cuts in runs[0])
    assert any("truncate_rate" in cuts for cuts in runs[0])


# ---------------------------------------------------------------- max_tokens


def test_max_tokens_cuts_reasoning_first_then_content(plain: StandInLLM) -> None:
    prompt = critique("relevance", "Which port is used?")
    whole = plain_content(plain, prompt)
    with StandInLLM(think_rate=1.0) as server:
        full = message(post(server, prompt)[0])["content"]
        payload, entry = post(server, prompt, max_tokens=10)
        assert message(payload)["content"] == full[:40] and payload["usage"]["completion_tokens"] == 10
        assert payload["choices"][0]["finish_reason"] == "length"
        assert (entry["cut"], entry["finish_reason"], entry["thinking"]) == ("max_tokens", "length", "inline")
    with StandInLLM(reasoning_content_rate=1.0) as server:
        reasoning = message(post(server, prompt)[0])["reasoning_content"]
        # A budget spent on reasoning: content null, as vLLM sends it.
        payload, entry = post(server, prompt, max_completion_tokens=5)
        assert message(payload) == {"role": "assistant", "content": None, "reasoning_content": reasoning[:20]}
        assert payload["usage"]["completion_tokens"] == 5
        assert payload["usage"]["completion_tokens_details"] == {"reasoning_tokens": 5}
        assert (entry["reply"], entry["reasoning_content"], entry["cut"]) == (None, reasoning[:20], "max_tokens")
        # max_completion_tokens wins over max_tokens; what the reasoning leaves goes to the content.
        # (The reasoning is chosen per request body, so this one may differ from the one above.)
        budget = math.ceil(len(reasoning) / 4) + 8
        payload, entry = post(server, prompt, max_completion_tokens=budget, max_tokens=1)
        said = message(payload)
        assert said["reasoning_content"].endswith("so I rate it again below.")  # whole
        left = budget - math.ceil(len(said["reasoning_content"]) / 4)
        assert said["content"] == whole[: 4 * left] and 0 < 4 * left < len(whole)
        assert payload["usage"]["completion_tokens"] == budget
        assert (entry["finish_reason"], entry["cut"]) == ("length", "max_tokens")
        # A budget large enough cuts nothing.
        payload, entry = post(server, prompt, max_tokens=10_000)
        assert message(payload)["content"] == whole and (entry["finish_reason"], entry["cut"]) == ("stop", None)
    payload, entry = post(plain, prompt, max_tokens=3)
    assert message(payload)["content"] == whole[:12]
    assert (entry["finish_reason"], entry["cut"], entry["reply"]) == ("length", "max_tokens", whole[:12])


# ---------------------------------------------------------------- unterminated_think_rate


@pytest.mark.parametrize("tag", ["think", "thinking"])
def test_unterminated_thinking_is_only_an_open_tag_and_reasoning(plain: StandInLLM, tag: str) -> None:
    # Precedence over the other knobs: a model out of tokens while thinking wrote nothing else.
    knobs: dict[str, Any] = {"reasoning_content_rate": 1.0, "think_rate": 1.0, "truncate_rate": 1.0}
    with StandInLLM(unterminated_think_rate=1.0, think_tag=tag, **knobs) as server:
        for prompt in MIXED:
            payload, entry = post(server, prompt)
            content = message(payload)["content"]
            assert content.startswith(f"<{tag}>\n") and f"</{tag}>" not in content
            assert plain_content(plain, prompt) not in content
            assert "reasoning_content" not in message(payload)
            assert payload["choices"][0]["finish_reason"] == "length"
            assert (entry["thinking"], entry["finish_reason"], entry["cut"]) == ("unterminated", "length", None)
            assert entry["reply"] == content
            _assert_decoys(entry, content.removeprefix(f"<{tag}>\n"), plain_content(plain, prompt))


# ---------------------------------------------------------------- huge replies


def test_huge_replies_are_padded_to_the_byte(plain: StandInLLM) -> None:
    with StandInLLM(huge_reply_bytes=20_000) as server:
        for prompt in [*MIXED, RAG_UNICODE]:
            payload, entry = post(server, prompt)
            content = message(payload)["content"]
            assert len(content.encode("utf-8")) == 20_000
            assert content.startswith(plain_content(plain, prompt) + "\n\n")
            assert payload["choices"][0]["finish_reason"] == "stop"
            assert payload["usage"]["completion_tokens"] == math.ceil(len(content) / 4)
            assert (entry["huge_bytes"], entry["reply"], entry["cut"]) == (20_000, content, None)
        assert not plain_content(plain, RAG_UNICODE).isascii()
        # The token limit still applies to a huge reply.
        payload, entry = post(server, MIXED[0], max_tokens=100)
        assert len(message(payload)["content"]) == 400 and payload["choices"][0]["finish_reason"] == "length"
        assert (entry["huge_bytes"], entry["cut"]) == (20_000, "max_tokens")


def test_huge_rate_is_a_share(plain: StandInLLM) -> None:
    prompts = [critique("standalone", f"What does flag {i} do?") for i in range(40)]
    with StandInLLM(huge_reply_bytes=3_000, huge_rate=0.5) as server:
        entries = [post(server, p)[1] for p in prompts]
    padded = [e for e in entries if e["huge_bytes"] == 3_000]
    assert 12 <= len(padded) <= 28
    for prompt, entry in zip(prompts, entries, strict=True):
        if entry["huge_bytes"] is None:
            assert entry["reply"] == plain_content(plain, prompt)
        else:
            assert entry["reply"] is not None and len(entry["reply"]) == 3_000


# ---------------------------------------------------------------- determinism, knobs, the log


def test_the_same_request_gets_the_same_shape() -> None:
    knobs: dict[str, Any] = {
        "think_rate": 0.5,
        "reasoning_content_rate": 0.3,
        "truncate_rate": 0.3,
        "unterminated_think_rate": 0.2,
        "huge_reply_bytes": 2_000,
        "huge_rate": 0.3,
    }
    prompts = MIXED + [critique("relevance", f"Which option sets limit {i}?") for i in range(30)]
    runs = []
    for _ in range(2):
        with StandInLLM(**knobs) as server:
            runs.append([post(server, p, max_tokens=300) for p in prompts])
    assert [sent(p) for p, _ in runs[0]] == [sent(p) for p, _ in runs[1]]
    assert [logged(e) for _, e in runs[0]] == [logged(e) for _, e in runs[1]]
    entries = [e for _, e in runs[0]]
    assert {e["thinking"] for e in entries} == {"inline", "reasoning_content", "unterminated", None}
    assert {e["cut"] for e in entries} == {"truncate_rate", "max_tokens", None}
    assert {e["huge_bytes"] for e in entries} == {2_000, None}


def test_configure_validates_and_switches_shaping(plain: StandInLLM) -> None:
    prompt = critique("relevance", "Which port?")
    with StandInLLM() as server:
        server.configure(think_rate=1.0, think_tag="thinking")
        assert message(post(server, prompt)[0])["content"].startswith("<thinking>\n")
        server.configure(think_rate=0.0)
        assert message(post(server, prompt)[0])["content"] == plain_content(plain, prompt)
        rates = ("think_rate", "reasoning_content_rate", "truncate_rate", "unterminated_think_rate", "huge_rate")
        for name in rates:
            for bad in (-0.1, 1.5, float("nan")):
                change: dict[str, Any] = {name: bad}
                with pytest.raises(ValueError, match=name):
                    server.configure(**change)
                with pytest.raises(ValueError, match=name):
                    StandInLLM(**change)
        with pytest.raises(ValueError, match="think_tag"):
            server.configure(think_tag="reasoning")
        for size in (-1, 1.5, True):
            with pytest.raises(ValueError, match="huge_reply_bytes"):
                server.configure(huge_reply_bytes=size)
        assert server.knobs.shaping.think_tag == "thinking"  # a refused change changes nothing


def test_the_command_line_has_every_shaping_option() -> None:
    args = build_parser().parse_args(
        "--think-rate 0.1 --think-tag thinking --reasoning-content-rate 0.2 --truncate-rate 0.3 "
        "--unterminated-think-rate 0.4 --huge-reply-bytes 5000 --huge-rate 0.5".split()
    )
    assert (args.think_rate, args.think_tag, args.reasoning_content_rate) == (0.1, "thinking", 0.2)
    assert (args.truncate_rate, args.unterminated_think_rate, args.huge_reply_bytes, args.huge_rate) == (
        0.3,
        0.4,
        5000,
        0.5,
    )
    defaults = build_parser().parse_args([])
    assert (defaults.think_rate, defaults.think_tag, defaults.huge_reply_bytes) == (0.0, "think", 0)
    for bad in (["--think-tag", "reason"], ["--huge-reply-bytes", "-5"], ["--truncate-rate", "2"]):
        with pytest.raises(SystemExit):
            build_parser().parse_args(bad)


def test_every_answer_logs_its_shape_in_the_jsonl_file(tmp_path: Path) -> None:
    log_path = tmp_path / "requests.jsonl"
    with StandInLLM(log_path=log_path, reasoning_content_rate=1.0, truncate_rate=1.0) as server:
        post(server, critique("standalone", "What is the chunk size?"))
        lines = [json.loads(line) for line in log_path.read_text(encoding="utf-8").splitlines()]
        assert lines == [dict(e) for e in server.log]
    line = lines[0]
    assert set(SHAPE_FIELDS) | {"finish_reason"} <= set(line)
    assert (line["thinking"], line["cut"], line["finish_reason"]) == ("reasoning_content", "truncate_rate", "length")
    assert line["decoy_score"] != line["score"] == score_for("standalone", "What is the chunk size?")


def test_decoys_differ_from_every_kind_of_real_reply() -> None:
    key = "0" * 64
    for score in (None, 0, 1, 2, 3, 4, 5, 7):
        for kind in ("critique", "judge"):
            decoy = reasoning_for(Reply("x", kind, kind, "relevance", score), key)
            assert decoy.score in range(1, 6) and decoy.score != score
    question, answer = factoid_for(CONTEXTS[0])
    decoy = reasoning_for(Reply(f"Factoid question: {question}\nAnswer: {answer}", "generation", "generation"), key)
    assert (decoy.question, decoy.answer) != (question, answer) and decoy.question != question
    for kind in MALFORMED_KINDS:
        decoy = reasoning_for(Reply("", "malformed", kind, score=1), key)
        assert decoy.text and "<" not in decoy.text
    assert judge_score("What is X?", "X is Y.") in range(1, 6)


@pytest.mark.slow
def test_the_cli_serves_shaped_replies(tmp_path: Path) -> None:
    log_path = tmp_path / "cli.jsonl"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    command = [sys.executable, "-m", "standins.llm.server", "--port", "0", "--log", str(log_path)]
    command += ["--think-rate", "1", "--think-tag", "thinking", "--huge-reply-bytes", "4000"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) as process:
        try:
            assert process.stdout is not None
            ready, _, _ = select.select([process.stdout], [], [], 20)
            assert ready, "the CLI printed nothing within 20 s"
            match = re.fullmatch(r"stand-in LLM listening on (http://127\.0\.0\.1:\d+/v1)\n", process.stdout.readline())
            assert match is not None
            client = openai.OpenAI(base_url=match.group(1), api_key="k", max_retries=0, timeout=5)
            completion = client.chat.completions.create(
                model="stand-in", messages=[{"role": "user", "content": critique("relevance", "Which port?")}]
            )
            content = completion.choices[0].message.content
            assert content is not None and content.startswith("<thinking>\n") and len(content) == 4000
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=10) == 0
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    [entry] = [json.loads(x) for x in log_path.read_text(encoding="utf-8").splitlines()]
    assert (entry["thinking"], entry["huge_bytes"], entry["finish_reason"]) == ("inline", 4000, "stop")
