"""What a build says when the corpus could not give some drafts their passages (`Picked.short`): a
multi-hop draft needs two chunks that share a rare term, and a small or scattered corpus may have
none. Said in words, with what the passages must be and how to get more, never left as a bare 0."""

from __future__ import annotations

from qagen.question_types import QUESTION_TYPES
from qagen.records import BuildSummary

PASSAGES_SETTINGS = ("chunk_size", "out", "question_types")
"""The settings `short_of_passages` names (as `QagenError.settings`: the CLI shows them as its flags)."""


def passages_missing(summary: BuildSummary) -> str | None:
    """The facts, one sentence per question type the corpus had no passages for some drafts of: how
    many, and what its passages must be (`QuestionTypeSpec.passages_needed`); None when every draft
    asked for got its passages."""
    chunks = summary.corpus.chunks
    sentences = []
    for name, counts in summary.question_types.items():
        if not counts.short:
            continue
        asked = counts.requested if counts.requested is not None else counts.sampled + counts.short
        needed = QUESTION_TYPES.get(name).passages_needed if name in QUESTION_TYPES else None
        why = f": a draft of it needs {needed}" if needed else ""
        sentences.append(
            f"The corpus ({chunks} chunk{'s' if chunks != 1 else ''}) had passages for {counts.sampled} of the "
            f"{asked} {name} drafts asked for{why}."
        )
    return " ".join(sentences) or None


def short_of_passages(summary: BuildSummary) -> str | None:
    """`passages_missing`, and how to have fewer such drafts; None when every draft got its passages."""
    missing = passages_missing(summary)
    if missing is None:
        return None
    return (
        f"{missing} More documents on the same subjects, or smaller chunks (`chunk_size`, in a new `out`), give more "
        "passages; or ask for fewer of these drafts (a smaller share in `question_types`)."
    )
