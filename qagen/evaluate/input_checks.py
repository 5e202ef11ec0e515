"""Warnings about an evaluation's inputs, found before any question is asked.

Each is one sentence for the user (shown at once, and kept in the summary's `warnings`) plus the
counts behind it (kept in the summary under their own key), so that a score that can only be 0 or
an answer that can never be scored is explained, not discovered later:

- answers-file rows that match no question of the test set (`AnswersFileSystem.match`);
- a baseline corpus that holds none, or only some, of the test set's source documents: hit@k, MRR
  and NDCG compare the retrieved chunks' sources with each question's `source_doc`, so a question
  whose document is not in the corpus scores 0 whatever the retriever does.
"""

from __future__ import annotations

import asyncio
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from qagen.evaluate.records import EvalItem
from qagen.evaluate.systems.answers_file import AnswersFileSystem

__all__ = ["InputChecks", "check_inputs", "normalize_source", "source_coverage"]

_EXAMPLES = 3


@dataclass
class InputChecks:
    """What `check_inputs` found: sentences to show, and the counts for the summary."""

    warnings: list[str] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)


async def check_inputs(system: object, items: list[EvalItem]) -> InputChecks:
    """Pair an answers file with the questions, and compare a baseline's corpus with their sources.

    A system with `corpus_sources()` (the bundled baseline) builds its index here, in a worker
    thread, rather than on the first question: the sources must be known before scoring starts.
    """
    found = InputChecks()
    if isinstance(system, AnswersFileSystem):
        match = system.match(items)
        found.facts["answers_file"] = {
            "rows": match.rows,
            "matched_rows": match.rows - len(match.unmatched),
            "unmatched_rows": len(match.unmatched),
            "unmatched_examples": [{"row": r.where, "question": r.question} for r in match.unmatched[:_EXAMPLES]],
        }
        sentence = match.sentence(system.path)
        if sentence:
            found.warnings.append(sentence)
    corpus_sources = getattr(system, "corpus_sources", None)
    if callable(corpus_sources):
        sources = await asyncio.to_thread(corpus_sources)
        coverage = source_coverage((item.source_doc for item in items), sources)
        if coverage is not None:
            sentence, facts = coverage
            found.warnings.append(sentence)
            found.facts["corpus_sources"] = facts
    return found


def normalize_source(source: str) -> str:
    """A source id as compared here: Unicode NFC, `/` separators, no leading `./`, no doubled `/`.

    The same file named by a Windows path, a decomposed accent (macOS file names) or `./a.md` is
    still the same document.
    """
    text = unicodedata.normalize("NFC", source.strip()).replace("\\", "/")
    while "//" in text:
        text = text.replace("//", "/")
    while text.startswith("./"):
        text = text[2:]
    return text


def source_coverage(wanted: Iterable[str | None], corpus: Iterable[str | None]) -> tuple[str, dict[str, Any]] | None:
    """A warning when the test set's source documents (`wanted`) are missing from `corpus`; None if all are there.

    Only questions with a `source_doc` count; a test set without any says nothing here.
    """
    needed = {normalize_source(source) for source in wanted if source}
    present = {normalize_source(source) for source in corpus if source}
    missing = sorted(needed - present)
    if not missing:
        return None
    facts = {"test_set_sources": len(needed), "missing": len(missing), "missing_examples": missing[:_EXAMPLES]}
    examples = ", ".join(repr(source) for source in missing[:_EXAMPLES])
    if len(missing) == len(needed):
        corpus_examples = ", ".join(repr(source) for source in sorted(present)[:_EXAMPLES]) or "nothing"
        return (
            f"hit@k, MRR and NDCG will be 0 for every question because the baseline's corpus holds none of the "
            f"test set's {len(needed)} source documents (the test set names e.g. {examples}; the corpus has "
            f"e.g. {corpus_examples}); give `corpus` the files or folder the test set was built from.",
            facts,
        )
    return (
        f"{len(missing)} of the test set's {len(needed)} source documents are not in the baseline's corpus "
        f"(e.g. {examples}), so their questions will score 0 on hit@k, MRR and NDCG.",
        facts,
    )
