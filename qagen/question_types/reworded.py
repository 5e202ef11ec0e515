"""`reworded`: a factoid from one chunk, asked the way a user would, without the chunk's words.

Drafted by its own prompt, vetted by the three critics like a factoid. Before any critic, a free
check measures how many of the question's content words the chunk spells out (`copied_share`) and
rejects a draft above `MAX_COPIED_SHARE` as `too_close` (the build's own `max_copied_share`, when
set, bounds every type's drafts as well): a question that copies its chunk is found
by any keyword search, which is what this type is there to test.
"""

from __future__ import annotations

from qagen.question_types.pickers import one_chunk
from qagen.question_types.spec import QuestionTypeSpec, TypeCritic
from qagen.records import Draft, Passages

MAX_COPIED_SHARE = 0.5
"""The most of a reworded question's content words its chunk may hold (cookbook factoids hold 71-85%,
measured on git's docs with a 1.5B model)."""


def too_close(draft: Draft, passages: Passages) -> str | None:
    """`too_close` when more than `MAX_COPIED_SHARE` of the question's content words are its chunk's
    (the quality checks' measure and reason: `qagen.generation.checks.easiness`)."""
    from qagen.generation.checks import easiness  # BM25's tokens and bm25s: loaded when a draft is checked

    copies = easiness.too_close(draft.question or "", passages.first.text, MAX_COPIED_SHARE)
    return easiness.TOO_CLOSE if copies else None


REWORDED = QuestionTypeSpec(
    name="reworded",
    help="a factoid asked in a user's own words, not the chunk's (word overlap bounded)",
    draft_prompt="qa_reworded",
    question_label="User question",
    picker=one_chunk("reworded"),
    critics=(TypeCritic("groundedness"), TypeCritic("relevance"), TypeCritic("standalone")),
    check=too_close,
)
