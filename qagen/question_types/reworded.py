"""`reworded`: a factoid from one chunk, asked the way a user would, without the chunk's words.

Drafted by its own prompt, vetted like a factoid. Before any call, a free check rejects a draft
whose question copies a phrase of its chunk, more than `MAX_COPIED_RUN` words in a row
(`longest_copied_run`), as `too_close`: a question that copies its chunk is found by any keyword
search, which is what this type is there to test. (The build's own `max_copied_share`, when set,
bounds the share of every type's content words its chunk holds as well.)

Why a copied phrase and not the share of content words: a user's short question shares its few
content words with the chunk ("What does the `glob` function do?": all of them). On 16 reviewed
reworded drafts of Python's documentation, a share above 0.5 rejected 12, 6 of them drafts the
reviewer keeps; a run of more than 7 words rejects one, a question copying "creates a temporary
directory using the same rules as mkdtemp", which the reviewer rejects for it (the longest run of a
draft the reviewer keeps: 6 words).
"""

from __future__ import annotations

from qagen.question_types.pickers import one_chunk
from qagen.question_types.spec import QuestionTypeSpec, TypeCritic
from qagen.records import Draft, Passages

MAX_COPIED_RUN = 7
"""The most consecutive words of its chunk a reworded question may copy."""


def too_close(draft: Draft, passages: Passages) -> str | None:
    """`too_close` when the question copies more than `MAX_COPIED_RUN` words of its chunk in a row
    (the quality checks' measure and reason: `qagen.generation.checks.easiness`)."""
    from qagen.generation.checks import easiness  # BM25's tokens: loaded when a draft is checked

    copies = easiness.longest_copied_run(draft.question or "", passages.first.text) > MAX_COPIED_RUN
    return easiness.TOO_CLOSE if copies else None


REWORDED = QuestionTypeSpec(
    name="reworded",
    help="a factoid asked in a user's own words, not the chunk's (no long phrase copied)",
    draft_prompt="qa_reworded",
    question_label="User question",
    pairs_prompt="qa_reworded_pairs",
    picker=one_chunk("reworded"),
    critics=(TypeCritic("groundedness"), TypeCritic("relevance"), TypeCritic("standalone")),
    check=too_close,
)
