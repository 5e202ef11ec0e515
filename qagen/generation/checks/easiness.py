"""How easy a question is for retrieval: how much of it its chunk spells out.

- `copied_share`: the share of the question's distinct content words (`checks.words`) that occur in
  its chunk. 1.0 is a question made of the chunk's words; a reworded question scores lower.
- `longest_copied_run`: the most consecutive words of the question that the chunk holds in the same
  order: a phrase copied whole, which a short question in a user's own words ("What does the
  `glob` function do?", every content word the chunk's) does not have.
- `extractive_share`: the share of the answer's distinct content words that occur in its passages: 1.0
  is an answer made of the passages' words (extractive), a low share an answer the passages do not spell
  out (from the model's memory, or wrong).
- `restated_share`: the share of the answer's distinct content words already in its question: an answer
  that restates what was asked ("`punctuation_chars` sets the punctuation characters") scores high.
- The other easiness figure, where BM25 ranks a question's own chunk among all the corpus' chunks
  (`bm25_rank`), is asked of the build's one BM25 index of its chunks
  (`qagen.corpus.chunk_index.ChunkIndex.rank`).

`too_close` is the optional bound on `copied_share` that rejects drafts copying their chunk
(reason `too_close`); question types that reword on purpose share it.
"""

from __future__ import annotations

from collections.abc import Sequence
from difflib import SequenceMatcher
from typing import NamedTuple

from qagen.corpus.words import tokenize, tokens_among
from qagen.generation.checks.words import content_words

TOO_CLOSE = "too_close"
"""The rejection reason of a draft whose question copies its chunk (`too_close`)."""


def copied_share(question: str, chunk: str) -> float | None:
    """The share of the question's distinct content words found in the chunk; None for a question
    with no content word."""
    return _share_found(question, chunk)


def extractive_share(answer: str, passages: Sequence[str]) -> float | None:
    """The share of the answer's distinct content words found in its passages (any of them); None for an
    answer with no content word."""
    return _share_found(answer, "\n".join(passages))


def restated_share(question: str, answer: str) -> float | None:
    """The share of the answer's distinct content words already in its question; None for an answer with
    no content word."""
    return _share_found(answer, question)


class Shares(NamedTuple):
    """A draft's `copied_share`, `extractive_share` and `restated_share` (`shares`)."""

    copied: float | None
    extractive: float | None
    restated: float | None


def shares(question: str, answer: str, passages: Sequence[str]) -> Shares:
    """`copied_share(question, passages[0])`, `extractive_share(answer, passages)` and
    `restated_share(question, answer)` at once (what the final write measures of every draft): each
    text's content words found once, a lone passage (a factoid's) looked through once for the question's
    words and the answer's, and the answer's words in the question found among the question's content
    words (an answer's content words are no stopwords: those among the question's tokens are those among
    its content words)."""
    asked, answered = set(content_words(question)), set(content_words(answer))
    if len(passages) == 1:
        found = tokens_among(passages[0], asked | answered)
        copied, extracted = found & asked, found & answered
    else:
        copied, extracted = tokens_among(passages[0], asked), tokens_among("\n".join(passages), answered)
    return Shares(_share(asked, copied), _share(answered, extracted), _share(answered, answered & asked))


def _share(wanted: set[str], found: set[str]) -> float | None:
    return len(found) / len(wanted) if wanted else None


def _share_found(text: str, within: str) -> float | None:
    """The share of `text`'s distinct content words that are tokens of `within`; None when it has none."""
    wanted = set(content_words(text))
    if not wanted:
        return None
    # Among `within`'s tokens, stopwords and all: `wanted` holds none, so the words found are the same.
    return len(tokens_among(within, wanted)) / len(wanted)


def longest_copied_run(question: str, chunk: str) -> int:
    """The most consecutive words (BM25's tokens, stopwords included) of the question found in the
    same order in the chunk."""
    asked, written = tokenize(question), tokenize(chunk)
    matcher = SequenceMatcher(None, asked, written, autojunk=False)
    return matcher.find_longest_match(0, len(asked), 0, len(written)).size


def too_close(question: str, chunk: str, max_share: float) -> bool:
    """Whether the question copies its chunk: more than `max_share` of its content words are the chunk's."""
    share = copied_share(question, chunk)
    return share is not None and share > max_share
