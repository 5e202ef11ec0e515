"""The stand-in's prompt cache: each reply says how many of its prompt's tokens an earlier prompt shared."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import openai

from standins.llm.knobs import Knobs
from standins.llm.offline import answer_requests
from standins.llm.prefix_cache import PrefixCache
from standins.llm.server import StandInLLM
from standins.llm.shaping import CHARS_PER_TOKEN, tokens


def _shared(one: str, other: str) -> int:
    length = 0
    while length < min(len(one), len(other)) and one[length] == other[length]:
        length += 1
    return length


def test_the_cached_part_is_the_longest_prefix_shared_with_any_earlier_prompt() -> None:
    cache = PrefixCache()
    passage = "The harbour gauge reads the tide every ten minutes. " * 4  # 208 characters
    assert cache.cached_tokens(passage + "Write a question.") == 0  # the first prompt: nothing cached
    assert cache.cached_tokens(passage + "Rate the question.") == len(passage) // CHARS_PER_TOKEN
    assert cache.cached_tokens("Something else entirely.") == 0
    # Not only the last prompt counts: the passage's two prompts are still held.
    assert cache.cached_tokens(passage + "Write a question. Then an answer.") == (len(passage) + 17) // CHARS_PER_TOKEN
    # The same prompt again: all of it, in whole tokens, never more than the prompt's own count.
    again = passage + "Rate the question."
    assert cache.cached_tokens(again) == len(again) // CHARS_PER_TOKEN <= tokens(again)
    cache.clear()
    assert cache.cached_tokens(again) == 0


def test_the_cache_agrees_with_comparing_every_earlier_prompt() -> None:
    rng = random.Random(29)
    cache, seen = PrefixCache(), []
    for _ in range(400):
        # Short strings of a small alphabet: long shared prefixes, and many prompts sent twice.
        prompt = "".join(rng.choice("ab") for _ in range(rng.randint(0, 40)))
        expected = max((_shared(prompt, earlier) for earlier in seen), default=0) // CHARS_PER_TOKEN
        assert cache.cached_tokens(prompt) == expected, prompt
        seen.append(prompt)


def _ask(server: StandInLLM, text: str) -> Any:
    client = openai.OpenAI(base_url=server.base_url, api_key="k")
    return client.chat.completions.create(model="stand-in", messages=[{"role": "user", "content": text}])


def test_replies_say_what_was_cached_only_with_the_knob() -> None:
    passage = "Context: the archive keeps every report of the station since 1901. " * 3
    with StandInLLM() as server:
        assert _ask(server, passage + "first").usage.prompt_tokens_details is None
        assert _ask(server, passage + "second").usage.prompt_tokens_details is None
        server.configure(prefix_cache=True)
        first = _ask(server, passage + "first")
        second = _ask(server, passage + "second")
        assert first.usage.prompt_tokens_details.cached_tokens == 0  # the cache starts when the knob is on
        assert second.usage.prompt_tokens_details.cached_tokens == len(passage) // CHARS_PER_TOKEN
        assert [entry["cached_tokens"] for entry in server.log] == [None, None, 0, len(passage) // CHARS_PER_TOKEN]
        server.reset()
        assert _ask(server, passage + "second").usage.prompt_tokens_details.cached_tokens == 0


def test_batch_lines_are_cached_alike(tmp_path: Path) -> None:
    passage = "Context: the gauge at the pier reads the tide every ten minutes. " * 2
    requests = tmp_path / "requests.jsonl"
    lines = [
        {
            "custom_id": str(n),
            "method": "POST",
            "url": "/v1/chat/completions",
            "body": {"model": "stand-in", "messages": [{"role": "user", "content": passage + ending}]},
        }
        for n, ending in enumerate(["one", "two"])
    ]
    requests.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    results = tmp_path / "results.jsonl"
    answer_requests(requests, results, Knobs(prefix_cache=True))
    cached = [
        json.loads(line)["response"]["body"]["usage"]["prompt_tokens_details"]["cached_tokens"]
        for line in results.read_text(encoding="utf-8").splitlines()
    ]
    assert cached == [0, len(passage) // CHARS_PER_TOKEN]
