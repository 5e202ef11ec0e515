"""The tokens a reply reports, the cached part of its prompt included, as each kind of server sends them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from qagen.llm.backends import langchain_usage
from qagen.llm.completions import parse_completion, usage_of
from qagen.records import Draft, Usage


def _body(**top: Any) -> bytes:
    return json.dumps({"choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}], **top}).encode()


@pytest.mark.parametrize(
    ("top", "expected"),
    [
        # OpenAI (and vLLM with prefix caching): the cached part in prompt_tokens_details.
        (
            {
                "usage": {
                    "prompt_tokens": 2006,
                    "completion_tokens": 300,
                    "prompt_tokens_details": {"cached_tokens": 1920},
                }
            },
            Usage(input_tokens=2006, output_tokens=300, cached_input_tokens=1920),
        ),
        # No details: nothing cached.
        ({"usage": {"prompt_tokens": 12, "completion_tokens": 3}}, Usage(input_tokens=12, output_tokens=3)),
        # Details without a count, or with null.
        (
            {"usage": {"prompt_tokens": 12, "completion_tokens": 3, "prompt_tokens_details": {"cached_tokens": None}}},
            Usage(input_tokens=12, output_tokens=3),
        ),
        # llama.cpp's server: its timings say what its slot's cache held.
        (
            {"usage": {"prompt_tokens": 410, "completion_tokens": 40}, "timings": {"prompt_n": 120, "cache_n": 290}},
            Usage(input_tokens=410, output_tokens=40, cached_input_tokens=290),
        ),
        # Both: the OpenAI field is the one read.
        (
            {
                "usage": {"prompt_tokens": 7, "completion_tokens": 3, "prompt_tokens_details": {"cached_tokens": 2}},
                "timings": {"cache_n": 5},
            },
            Usage(input_tokens=7, output_tokens=3, cached_input_tokens=2),
        ),
        # A cached count above the prompt is held to the prompt: it is a part of it.
        (
            {"usage": {"prompt_tokens": 10, "completion_tokens": 1, "prompt_tokens_details": {"cached_tokens": 64}}},
            Usage(input_tokens=10, output_tokens=1, cached_input_tokens=10),
        ),
        # Counts that are not numbers, negative or infinite are not counts.
        (
            {
                "usage": {
                    "prompt_tokens": "12",
                    "completion_tokens": -1,
                    "prompt_tokens_details": {"cached_tokens": 1e999},
                }
            },
            Usage(),
        ),
        ({"usage": {"prompt_tokens": 9.0, "completion_tokens": True}}, Usage(input_tokens=9)),
        # No usage at all, or usage that is not an object.
        ({}, Usage()),
        ({"usage": ["prompt_tokens", 3]}, Usage()),
    ],
)
def test_the_cached_part_of_the_prompt_is_read_where_each_server_puts_it(top: dict[str, Any], expected: Usage) -> None:
    assert usage_of(top) == expected
    assert parse_completion(_body(**top)).usage == expected


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [
        (
            {"input_tokens": 1500, "output_tokens": 20, "input_token_details": {"cache_read": 1024}},
            Usage(input_tokens=1500, output_tokens=20, cached_input_tokens=1024),
        ),
        ({"input_tokens": 15, "output_tokens": 2}, Usage(input_tokens=15, output_tokens=2)),
        (
            {"input_tokens": 15, "output_tokens": 2, "input_token_details": {"audio": 3}},
            Usage(input_tokens=15, output_tokens=2),
        ),
        (None, Usage()),
    ],
)
def test_a_langchain_model_s_cached_input_is_its_cache_read(metadata: dict[str, Any] | None, expected: Usage) -> None:
    assert langchain_usage(metadata) == expected


def test_a_record_stored_before_cached_tokens_were_counted_loads_with_none_cached() -> None:
    stored = {
        "id": "d1",
        "model": "openai:gpt-4o-mini",
        "chunk_id": "c1",
        "prompt_hash": "p",
        "usage": {"input_tokens": 120, "output_tokens": 30},
    }
    draft = Draft.model_validate_json(json.dumps(stored))
    assert draft.usage == Usage(input_tokens=120, output_tokens=30, cached_input_tokens=0)
