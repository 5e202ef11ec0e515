"""Deterministic evidence of an answer's correctness beside the judge: the reference's key terms the
answer contains, and SQuAD token F1 against the reference.

Its errors do not come from the judge's model. A small judge says "correct" of an answer to another
question or of a near miss (Thakur et al., 2024: judges under 70B are lenient); an answer that holds
none of the reference's content words is seldom right, so the `answer_correct` judge caps its value then
(`qagen.evaluate.judges.answer_correct`).

The key terms of a reference are its content words (`qagen.corpus.words`: BM25's tokens without
stopwords) that the question does not already hold: a response that restates the question shares
those without answering it. A reference whose every content word is in the question keeps them all.
A term is found in the answer when the answer has a token equal to it, or one sharing its first
`STEM` characters when both are at least that long ("compress" and "compressed").
"""

from __future__ import annotations

from typing import NamedTuple

from qagen.corpus.squad import token_f1
from qagen.corpus.words import content_words

STEM = 5
"""Characters two words of at least this length must share at their start to count as one term."""


class KeyTermEvidence(NamedTuple):
    """What the answer holds of the reference, by words alone."""

    terms: tuple[str, ...]
    """The reference's key terms, in order, each once."""
    found: tuple[str, ...]
    """Those the answer contains."""
    token_f1: float
    """SQuAD token F1 of the answer against the reference."""
    words_shared: int
    """The reference's content words the answer holds, those the question holds too included."""
    has_words: bool
    """The reference has content words at all (`O(n)` has none)."""

    @property
    def containment(self) -> float | None:
        """The share of the key terms the answer contains; None when the reference has none."""
        return len(self.found) / len(self.terms) if self.terms else None


def _same_term(term: str, word: str) -> bool:
    if term == word:
        return True
    return len(term) >= STEM and len(word) >= STEM and term[:STEM] == word[:STEM]


def key_terms(question: str, reference: str) -> tuple[str, ...]:
    """The reference's key terms (see the module)."""
    words = tuple(dict.fromkeys(content_words(reference)))
    asked = set(content_words(question))
    own = tuple(word for word in words if word not in asked)
    return own or words


def key_term_evidence(question: str, answer: str, reference: str) -> KeyTermEvidence:
    """The reference's key terms, those `answer` holds, and its token F1 against the reference."""
    terms = key_terms(question, reference)
    words = set(content_words(answer))
    found = tuple(term for term in terms if any(_same_term(term, word) for word in words))
    every = tuple(dict.fromkeys(content_words(reference)))
    shared = sum(any(_same_term(term, word) for word in words) for term in every)
    return KeyTermEvidence(terms, found, token_f1(answer, reference), shared, bool(every))
