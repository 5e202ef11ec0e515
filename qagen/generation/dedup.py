"""Near-duplicate questions: the same words, give or take case, punctuation and a few words.

The decision is the one the first version made by comparing every question with every kept one
(tests/generation/test_dedup.py keeps that version as the reference): a question is a
near-duplicate when the Jaccard similarity of its word set with an EARLIER KEPT question's, computed
as the float `|A∩B| / |A∪B|`, reaches the threshold, and that kept question's size lies in the range
`int(size * t) .. int(size / t) + 1`. The id returned is the first such question in the order
(size, order kept). Dropped questions are never compared with.

Finding it is an exact set-similarity join, linear-ish instead of quadratic:

- Prefix filter. Order all words globally, rarest first. If two sets share at least `o` words, the
  smallest shared word is among the first `size - o + 1` words of each. So each kept set is indexed
  under its first few words only (2 of 12 at t = 0.9), and a question looks only there.
- Length and position filter. For sizes a and b the least overlap `need(a, b)` the float test can
  accept is computed exactly (by that same test); a kept set of size b is looked up only under the
  question's first `a - need + 1` words and its own first `b - need + 1`, so postings are grouped by
  size and position and the rest is never scanned.
- Verification counts the shared words against that least overlap, which is the float test itself:
  `o / (a + b - o)` grows with o and correctly rounded division is monotone, so for given sizes the
  test holds exactly when o reaches the least o it accepts. Found by that same float expression, no
  float boundary can differ (tests sweep every overlap/union up to 30 at and beside the threshold).

The global order must be fixed while sets are indexed, but questions arrive one at a time. So the
order is "words unseen at the last re-index first (newest first), then by how many kept sets
contained them then" and the index is rebuilt with fresh counts when the kept sets grow 4-fold or the
work since the last rebuild exceeds its cost (an amortised constant factor). Any total order gives
the same answers; a good one only makes the lists short.
"""

from __future__ import annotations

import math
import re
import sys
import unicodedata
from collections import Counter
from collections.abc import Collection
from fractions import Fraction

# Letters and digits of every script; each CJK character is a word of its own, since Chinese and
# Japanese are written without spaces between words.
_WORDS = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]|[^\W_]+")

# Re-index at this many kept sets and whenever they have grown this many times since (re-indexing
# n sets in all, about n / ln(growth): 4 costs half of 2, and the order stays nearly as good), or
# when the work since the last rebuild (posting entries visited) exceeds this many times its cost.
_FIRST_REBUILD = 64
_GROWTH = 4
_WORK_PER_REBUILD = 4


def question_words(question: str) -> frozenset[str]:
    """The set of normalised words of a question (NFKC, case-folded, punctuation dropped); interned,
    so the kept questions' sets, their counts and their index share one string a word."""
    return frozenset(sys.intern(word) for word in _WORDS.findall(unicodedata.normalize("NFKC", question).casefold()))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


class NearDuplicateFilter:
    """Keeps the first of each group of near-duplicate questions, in the order they are offered.

    Two questions are near-duplicates when the Jaccard similarity of their word sets reaches the
    threshold (0.9 by default: identical after normalisation, or one word different in a long
    question).
    """

    def __init__(self, threshold: float = 0.9) -> None:
        if not 0 < threshold <= 1:
            raise ValueError(f"The near-duplicate threshold must be in (0, 1], got {threshold}.")
        self.threshold = threshold
        self.comparisons = 0  # pairs of word sets compared so far: what the index saves
        # Any pair the float test accepts has overlap >= t(1 - 2**-52) * max(a, b): a correctly
        # rounded quotient q with fl(q) >= t has q >= t / (1 + 2**-53). Exact rational, so the bound
        # itself has no rounding; used for the longest prefix a set of one size can need.
        self._overlap_factor = Fraction(threshold) * (1 - Fraction(1, 2**52))
        # Kept sets as tuples of interned words (`question_words`): a frozenset and its own copy of
        # every word took about 1.3 KB a kept question, a tuple of shared words about 0.2 KB.
        self._kept_words: list[tuple[str, ...]] = []
        self._kept_ids: list[str] = []
        self._first_empty: str | None = None
        # word -> size of the kept set -> position of the word in that set's prefix -> kept indexes
        self._postings: dict[str, dict[int, dict[int, list[int]]]] = {}
        self._rank: dict[str, int] = {}  # the global order: rank by count at the last rebuild
        self._unseen_rank = 0  # the rank given to the last word unseen at the last rebuild
        self._counts: Counter[str] = Counter()  # how many kept sets contain each word
        self._indexed_words = 0
        self._kept_at_rebuild = 0
        self._work_since_rebuild = 0
        self._reaches: dict[int, tuple[int, dict[int, tuple[int, int]]]] = {}
        self._prefix_lengths: dict[int, int] = {}

    def first_seen(self, question: str, item_id: str) -> str | None:
        """Register the question; return the id of the earlier near-duplicate, or None if it is new."""
        earlier = self.match(question)
        if earlier is None:
            self.keep(question, item_id)
        return earlier

    def match(self, question: str) -> str | None:
        """The id of the earlier kept near-duplicate of the question, or None; registers nothing
        (`keep` does, so another rule may still drop a question this one lets through)."""
        words = question_words(question)
        if not words:
            # Two empty sets are identical (Jaccard 1.0); an empty set matches nothing else.
            return self._first_empty
        earlier = self._earliest_match(words)
        return None if earlier is None else self._kept_ids[earlier]

    def keep(self, question: str, item_id: str) -> None:
        """Register a kept question (one `match` found no near-duplicate of)."""
        words = question_words(question)
        if not words:
            if self._first_empty is None:
                self._first_empty = item_id
            return
        self._keep(words, item_id)

    def _earliest_match(self, words: frozenset[str]) -> int | None:
        """The first kept set, by (size, order kept), that the pairwise test accepts."""
        size, kept_words = len(words), self._kept_words
        length, reach = self._reach(size)
        best: tuple[int, int] | None = None  # (size, kept index) of the earliest match so far
        verified: set[int] = set()
        work = 0
        for position, word in enumerate(self._ordered_prefix(words, length)):
            by_size = self._postings.get(word)
            if by_size is None:
                continue
            for other_size in by_size if len(by_size) <= len(reach) else reach:
                limits = reach.get(other_size)
                by_position = by_size.get(other_size)
                if limits is None or by_position is None or position > limits[0]:
                    continue
                if best is not None and other_size > best[0]:
                    continue
                need = size - limits[0]
                for other_position, bucket in by_position.items():
                    if other_position > limits[1]:
                        continue
                    work += len(bucket)
                    for kept in bucket:
                        if kept in verified:
                            continue
                        verified.add(kept)
                        # The float test itself, as an integer: it holds exactly from `need` on.
                        if (best is None or (other_size, kept) < best) and len(
                            words.intersection(kept_words[kept])
                        ) >= need:
                            best = (other_size, kept)
        self._work_since_rebuild += work
        self.comparisons += len(verified)
        return None if best is None else best[1]

    def _keep(self, words: frozenset[str], item_id: str) -> None:
        self._kept_words.append(tuple(words))
        self._kept_ids.append(item_id)
        self._counts.update(words)
        kept = len(self._kept_words)
        grown = kept >= max(_FIRST_REBUILD, _GROWTH * self._kept_at_rebuild)
        if grown or self._work_since_rebuild > _WORK_PER_REBUILD * self._indexed_words + _FIRST_REBUILD:
            self._rebuild()
        else:
            self._index(kept - 1)

    def _rebuild(self) -> None:
        """Re-rank the words by the kept sets' counts (rarest first) and index every kept set anew."""
        ranked = sorted(self._counts, key=lambda word: (self._counts[word], word))
        self._rank = {word: rank for rank, word in enumerate(ranked)}
        self._unseen_rank = 0
        self._postings = {}
        self._indexed_words = 0
        for kept in range(len(self._kept_words)):
            self._index(kept)
        self._kept_at_rebuild = len(self._kept_words)
        self._work_since_rebuild = 0

    def _index(self, kept: int) -> None:
        words = self._kept_words[kept]
        size, length = len(words), self._prefix_length(len(words))
        postings = self._postings
        for position, word in enumerate(self._ordered_prefix(words, length)):
            by_size = postings.get(word)
            if by_size is None:
                by_size = postings[word] = {}
            by_position = by_size.get(size)
            if by_position is None:
                by_position = by_size[size] = {}
            bucket = by_position.get(position)
            if bucket is None:
                by_position[position] = [kept]
            else:
                bucket.append(kept)
        self._indexed_words += length

    def _ordered_prefix(self, words: Collection[str], length: int) -> list[str]:
        """The first `length` words in the global order."""
        rank = self._rank
        try:
            return sorted(words, key=rank.__getitem__)[:length]
        except KeyError:
            # Words unseen since the last rebuild are the rarest: they rank before all others, newest
            # first, and keep that rank until the next rebuild so the order stays fixed meanwhile.
            # (Only questions meet them: a kept set's words were ranked when it was a question.)
            for word in [word for word in words if word not in rank]:
                self._unseen_rank -= 1
                rank[word] = self._unseen_rank
            return sorted(words, key=rank.__getitem__)[:length]

    def _prefix_length(self, size: int) -> int:
        """Words of a set of this size that any accepted pair must share its smallest common word among."""
        length = self._prefix_lengths.get(size)
        if length is None:
            least_overlap = max(1, math.ceil(self._overlap_factor * size))
            length = self._prefix_lengths[size] = size - least_overlap + 1
        return length

    def _reach(self, size: int) -> tuple[int, dict[int, tuple[int, int]]]:
        """Where a question of this size must look: for each kept size that could match it (in the
        first version's size range, and reachable by the float test), the last position in the
        question's order and in the kept set's order that the smallest shared word can take
        (`size - need` and `other_size - need`); and the question's prefix length."""
        found = self._reaches.get(size)
        if found is None:
            reach: dict[int, tuple[int, int]] = {}
            for other_size in range(int(size * self.threshold), int(size / self.threshold) + 2):
                need = self._least_overlap(size, other_size)
                if need is not None:
                    reach[other_size] = (size - need, other_size - need)
            length = 1 + max((last for last, _ in reach.values()), default=-1)
            found = self._reaches[size] = (length, reach)
        return found

    def _least_overlap(self, size: int, other_size: int) -> int | None:
        """The least shared words the float test accepts for these sizes; None if none would do.

        `o / (a + b - o)` grows with o and float division is monotone, so the test holds exactly
        from this overlap on: a binary search with the very expression the verification uses.
        """
        low, high = 1, min(size, other_size)
        if high < 1 or high / (size + other_size - high) < self.threshold:
            return None
        while low < high:
            middle = (low + high) // 2
            if middle / (size + other_size - middle) >= self.threshold:
                high = middle
            else:
                low = middle + 1
        return low
