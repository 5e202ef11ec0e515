"""The command line of ``python -m standins.llm.server``: its options and how they are read.

`standins.llm.server.main` parses them and serves until SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from standins.llm.faults import FAULT_KINDS
from standins.llm.outcomes import DEFAULT_PASS_RATE
from standins.llm.shaping import THINK_TAGS


def _rate(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {text}")
    return value


def _pass_rate(text: str) -> float | dict[str, float]:
    """``0.8`` for every critic, or per criterion: ``groundedness=0.9,relevance=0.5``."""
    if "=" not in text:
        return _rate(text)
    rates: dict[str, float] = {}
    for item in text.split(","):
        name, _, value = item.partition("=")
        rates[name.strip()] = _rate(value)
    return rates


def _size(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {text}")
    return value


def _names(text: str) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()]


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m standins.llm.server``."""
    parser = argparse.ArgumentParser(
        prog="python -m standins.llm.server",
        description="Serve a deterministic stand-in OpenAI-compatible LLM on 127.0.0.1.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    add = parser.add_argument
    add("--port", type=int, default=8000, help="port to listen on; 0 picks a free one")
    add("--latency", type=float, default=0.0, help="seconds per reply")
    add("--fault-rate", type=_rate, default=0.0, help="share of bodies whose 1st attempt fails")
    add("--fault-kinds", type=_names, default=list(FAULT_KINDS), help="e.g. 429,500,drop,timeout")
    add("--fault-attempts", type=int, default=1, help="failing first attempts per faulty body (large: persistent)")
    add("--timeout-sleep", type=float, default=3.0, help="delay of a 'timeout' fault (seconds)")
    add("--retry-after", type=float, default=0.0, help="Retry-After of a 429 fault (seconds)")
    add("--malformed-rate", type=_rate, default=0.0, help="share of malformed replies")
    add("--format-variety", type=_rate, default=0.0, help="share of non-canonical rating formats")
    add(
        "--generation-format-variety",
        type=_rate,
        default=0.0,
        help="share of non-canonical QA-generation formats",
    )
    add("--duplicate-rate", type=_rate, default=0.0, help="share of contexts given one question")
    add(
        "--pass-rate",
        type=_pass_rate,
        default=DEFAULT_PASS_RATE,
        help="share of questions rated 4-5: 0.8, or groundedness=0.9,relevance=0.5,...",
    )
    add("--think-rate", type=_rate, default=0.0, help="share of replies preceded by inline <think> reasoning")
    add("--think-tag", choices=THINK_TAGS, default="think", help="tag of inline reasoning")
    add(
        "--reasoning-content-rate",
        type=_rate,
        default=0.0,
        help="share of replies with their reasoning in message.reasoning_content",
    )
    add("--truncate-rate", type=_rate, default=0.0, help="share of replies cut short (finish_reason length)")
    add(
        "--unterminated-think-rate",
        type=_rate,
        default=0.0,
        help="share of replies that are only unclosed reasoning (finish_reason length)",
    )
    add("--huge-reply-bytes", type=_size, default=0, help="pad chosen replies to this many bytes; 0: off")
    add("--huge-rate", type=_rate, default=1.0, help="share of replies padded to --huge-reply-bytes")
    add("--api-key", default=None, help="require 'Authorization: Bearer KEY'")
    add("--models", type=_names, default=None, help="comma-separated names; others get 404")
    add(
        "--prefix-cache",
        action="store_true",
        help="report the prompt tokens shared with an earlier prompt as cached (usage.prompt_tokens_details)",
    )
    add("--log-prompts", action="store_true", help="keep each chat request's prompt in its log entry (messages)")
    add("--log", type=Path, default=None, help="append one JSON line per request to this file")
    add("--port-file", type=Path, default=None, help="write the port here once listening (for --port 0)")
    return parser
