"""One opening for every call about a draft: its passages in a data block (`frame`), so that a server's
prefix cache (llama.cpp's reuse of the previous prompt's longest common prefix, vLLM's automatic prefix
caching, OpenAI's prompt caching) reads them once for the draft and again for none of its checks,
critics and readers.

Each call is one user message: the frame, then the prompt file, its wording kept, each passage
placeholder filled with a short reference to the block above (`reference`), so the passages are sent
once. A prompt file that itself opens with the passages' data block (`<context>\\n{context}\\n</context>`,
as the yes/no checks and the reader do) has that block taken as the frame: it is sent as it reads.

A prompt that reads only some of a draft's passages (a lone reader: one passage of two) or none of them
(a question alone, what a search of the corpus finds) is sent as before, without the frame: shown text
it is meant not to see, it would judge something else.

The frame is opt-in (`BuildConfig.shared_prefix`): unframed, each prompt has its passages in place, as
its file reads. A small model drafting after the frame quoted the wrong evidence sentence more often.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from qagen.llm.prompts import Prompt
from qagen.llm.untrusted import PASSAGE_SEPARATOR, neutralize
from qagen.records import Passages

FRAME_OPENING = "<context>\n"
FRAME_CLOSING = "\n</context>\n\n"
"""What the frame puts around the passages: the data tags the prompt files put them between."""


class Shown(NamedTuple):
    """What a passage placeholder of a prompt shows of an item: its text, and which of its passages."""

    text: str
    passages: tuple[int, ...]
    """Positions in `Passages.chunks`."""


def passages_text(item: Passages) -> str:
    """The passages as one text: the chunk itself, or each passage labelled `Passage N:`, apart."""
    if len(item.chunks) == 1:
        return neutralize(item.first.text)
    return PASSAGE_SEPARATOR.join(
        f"Passage {number}:\n{neutralize(chunk.text).strip()}" for number, chunk in enumerate(item.chunks, 1)
    )


def frame(item: Passages) -> str:
    """The opening of every call about the item's draft that reads all its passages (byte for byte the same)."""
    return f"{FRAME_OPENING}{passages_text(item)}{FRAME_CLOSING}"


def reference(shown: Shown, item: Passages) -> str:
    """What fills a passage placeholder in a framed prompt: where the passage(s) it shows are."""
    if len(item.chunks) == 1:
        return "(the passage above)"
    if len(shown.passages) == len(item.chunks):
        return "(the passages above)"
    return f"({' and '.join(f'passage {position + 1}' for position in shown.passages)} above)"


def framed(shown: Mapping[str, Shown], item: Passages) -> bool:
    """Whether the prompt's placeholders show every passage of the item, so its call opens with the
    frame where the frame is on."""
    seen = {position for placeholder in shown.values() for position in placeholder.passages}
    return seen == set(range(len(item.chunks)))


def render(
    prompt: Prompt, item: Passages, shown: Mapping[str, Shown], values: Mapping[str, str], *, shared: bool
) -> str:
    """The prompt's text for the item: with `shared`, the frame, then the prompt with each placeholder
    of `shown` filled with its reference (and its opening data block, when it has one, given by the
    frame); without it, or for a prompt that does not show every passage, the prompt with the passages'
    text in place. `values` fills the other placeholders."""
    if not shared or not framed(shown, item):
        return prompt.render(**values, **{name: placeholder.text for name, placeholder in shown.items()})
    references = {name: reference(placeholder, item) for name, placeholder in shown.items()}
    text = prompt.render(**values, **references)
    for name, placeholder in shown.items():
        own_block = f"{FRAME_OPENING}{references[name]}{FRAME_CLOSING.rstrip()}"
        if len(placeholder.passages) == len(item.chunks) and text.startswith(own_block):
            text = text[len(own_block) :].lstrip("\n")
            break
    return frame(item) + text
