"""Near-duplicate questions: the same words, give or take case, punctuation and a few words."""

from __future__ import annotations

import re
import unicodedata

# Letters and digits of every script; each CJK character is a word of its own, since Chinese and
# Japanese are written without spaces between words.
_WORDS = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]|[^\W_]+")


def question_words(question: str) -> frozenset[str]:
    """The set of normalised words of a question (NFKC, case-folded, punctuation dropped)."""
    return frozenset(_WORDS.findall(unicodedata.normalize("NFKC", question).casefold()))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


class NearDuplicateFilter:
    """Keeps the first of each group of near-duplicate questions, in the order they are offered.

    Two questions are near-duplicates when the Jaccard similarity of their word sets reaches the
    threshold (0.9 by default: identical after normalisation, or one word different in a long
    question). Only sets whose sizes allow that similarity are compared, via buckets by size.
    """

    def __init__(self, threshold: float = 0.9) -> None:
        self.threshold = threshold
        self._by_size: dict[int, list[tuple[frozenset[str], str]]] = {}

    def first_seen(self, question: str, item_id: str) -> str | None:
        """Register the question; return the id of the earlier near-duplicate, or None if it is new."""
        words = question_words(question)
        size = len(words)
        # |A∩B|/|A∪B| >= t implies t*|B| <= |A| <= |B|/t.
        low = int(size * self.threshold)
        high = int(size / self.threshold) + 1 if self.threshold > 0 else size
        for other_size in range(low, high + 1):
            for other_words, other_id in self._by_size.get(other_size, ()):
                if jaccard(words, other_words) >= self.threshold:
                    return other_id
        self._by_size.setdefault(size, []).append((words, item_id))
        return None
