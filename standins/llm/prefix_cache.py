"""The stand-in's prompt cache: what a serving engine's prefix cache would hold (vLLM's automatic prefix
caching, llama.cpp's slot cache, OpenAI's prompt caching), with the `prefix_cache` knob on.

A prompt's cached part is the longest prefix, in characters, it shares with any prompt the server was
sent before (its messages' text joined, as `prompt_tokens` counts it), reported as the whole tokens in
it (`standins.llm.shaping.tokens`' four characters per token) in `usage.prompt_tokens_details.cached_tokens`.
It keeps every prompt and evicts none: what it reports is the reuse a build's prompts allow, the measure
of how well calls about one draft share their beginning.
"""

from __future__ import annotations

import bisect
import threading

from standins.llm.shaping import CHARS_PER_TOKEN


class PrefixCache:
    """Every prompt seen, sorted: the prompt sharing the longest prefix with a new one is a neighbour of
    the new one in sorted order, so a lookup is a binary search and two comparisons."""

    def __init__(self) -> None:
        self._seen: list[str] = []
        self._lock = threading.Lock()

    def cached_tokens(self, prompt: str) -> int:
        """The whole tokens of `prompt` in its longest prefix shared with a prompt seen before (0 for
        the first); `prompt` is seen from then on."""
        with self._lock:
            at = bisect.bisect_left(self._seen, prompt)
            neighbours = self._seen[max(at - 1, 0) : at + 1]
            shared = max((_shared_length(prompt, seen) for seen in neighbours), default=0)
            if at == len(self._seen) or self._seen[at] != prompt:
                self._seen.insert(at, prompt)
        return shared // CHARS_PER_TOKEN

    def clear(self) -> None:
        with self._lock:
            self._seen.clear()


def _shared_length(one: str, other: str) -> int:
    """How many characters the two strings share at their start."""
    for at, (a, b) in enumerate(zip(one, other, strict=False)):
        if a != b:
            return at
    return min(len(one), len(other))
