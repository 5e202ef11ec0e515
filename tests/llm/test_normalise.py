"""Reply normalisation (`qagen.llm.normalise`): every rule as a row of one table, and a property."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from qagen.llm.completions import valid_text
from qagen.llm.normalise import MAX_REPLY_CHARS, normalise_reply
from qagen.records import Usage

USAGE = Usage(input_tokens=10, output_tokens=5)

# (content, reasoning_content, finish_reason) -> (text parsers read, reasoning, truncated)
CASES = [
    ("Total rating: 5", None, "stop", "Total rating: 5", None, False),
    ("Total rating: 5", None, None, "Total rating: 5", None, False),
    # Thinking inline, with a decoy rating inside: the decoy is set apart, never read.
    (
        "<think>Total rating: 1? no.</think>\nTotal rating: 5",
        None,
        "stop",
        "Total rating: 5",
        "Total rating: 1? no.",
        False,
    ),
    (
        "  <THINK>\nhmm\n</THINK>Factoid question: Q\nAnswer: A",
        None,
        "stop",
        "Factoid question: Q\nAnswer: A",
        "hmm",
        False,
    ),
    ("<thinking>a</thinking><thinking>b</thinking> Total rating: 4", None, "stop", "Total rating: 4", "a\n\nb", False),
    # The chat template opened the block (DeepSeek-R1): only the closing tag is in the reply.
    (
        "Let me see. Total rating: 2</think>\n\nTotal rating: 4",
        None,
        "stop",
        "Total rating: 4",
        "Let me see. Total rating: 2",
        False,
    ),
    # vLLM's reasoning parser: the thinking comes apart already.
    ("Total rating: 3", "Maybe Total rating: 1", "stop", "Total rating: 3", "Maybe Total rating: 1", False),
    # Cut off while thinking, or at the output cap: truncated, nothing to read.
    ("<think>Total rating: 5 is tempting but", None, "length", "", "Total rating: 5 is tempting but", True),
    ("<think>never closed", None, "stop", "", "never closed", True),
    ("Evaluation: good.\nTotal rating: 4 because", None, "length", "", None, True),
    ("Factoid question: Q\nAnswer: It is abo", None, "length", "", None, True),
    # A think tag that is not leading is text like any other.
    ("Total rating: 4 <think>x</think>", None, "stop", "Total rating: 4 <think>x</think>", None, False),
    ("", None, "stop", "", None, False),
]


@pytest.mark.parametrize(("content", "reasoning_content", "finish_reason", "text", "reasoning", "truncated"), CASES)
def test_normalise_table(
    content: str,
    reasoning_content: str | None,
    finish_reason: str | None,
    text: str,
    reasoning: str | None,
    truncated: bool,
) -> None:
    reply = normalise_reply(content, USAGE, reasoning_content=reasoning_content, finish_reason=finish_reason)
    assert (reply.text, reply.reasoning, reply.truncated) == (text, reasoning, truncated)
    assert reply.verbatim == content and reply.usage == USAGE and not reply.cut


def test_a_huge_reply_is_cut_before_anything_reads_it_and_says_so() -> None:
    content = "Factoid question: Q\nAnswer: " + "very " * 400_000  # 2 MB
    reply = normalise_reply(content, USAGE, finish_reason="stop")
    assert reply.cut and len(reply.verbatim) < MAX_REPLY_CHARS + 200
    assert reply.verbatim.endswith(f"after {MAX_REPLY_CHARS:,} of its {len(content):,} characters]")
    assert len(reply.text) < MAX_REPLY_CHARS + 200


@given(st.text(), st.none() | st.text(), st.sampled_from([None, "stop", "length", "content_filter"]))
def test_normalise_never_raises_and_never_reads_a_truncated_reply(
    content: str, reasoning_content: str | None, finish_reason: str | None
) -> None:
    reply = normalise_reply(content, USAGE, reasoning_content=reasoning_content, finish_reason=finish_reason)
    if reply.truncated:
        assert reply.text == ""
    if finish_reason == "length":
        assert reply.truncated
    assert len(reply.text) <= len(reply.verbatim)


@given(st.text(alphabet=st.sampled_from(["a", " ", "\n", "é", "\ud800", "\udfff", "😀", "\x7f"])))
def test_a_reply_s_lone_surrogates_become_replacement_characters_and_nothing_else_changes(text: str) -> None:
    valid = valid_text(text)
    assert valid.encode("utf-8").decode("utf-8") == valid
    assert valid == "".join("\ufffd" if "\ud800" <= char <= "\udfff" else char for char in text)
