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
  question's first `a - need + 1` words and its own first `b - need + 1`, so postings are kept by
  word, size and position, and only the sizes a question can reach are read.
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

import json
import math
import re
import unicodedata
from collections.abc import Collection
from fractions import Fraction
from typing import NamedTuple

from qagen.runs.scratch import scratch_database, scratch_writes

# Letters and digits of every script; each CJK character is a word of its own, since Chinese and
# Japanese are written without spaces between words.
_WORDS = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]|[^\W_]+")

# Re-index at this many kept sets and whenever they have grown this many times since (re-indexing
# n sets in all, about n / ln(growth): 4 costs half of 2, and the order stays nearly as good), or
# when the work since the last rebuild (posting entries visited) exceeds this many times its cost.
_FIRST_REBUILD = 64
_PENDING_WORDS = 1000
"""Ranks of words met for the first time kept in memory before they are written to the index at once."""
_GROWTH = 4
_WORK_PER_REBUILD = 4

_SCHEMA = """
CREATE TABLE kept (number INTEGER PRIMARY KEY, id TEXT NOT NULL, words TEXT NOT NULL, size INTEGER NOT NULL,
    prefix INTEGER NOT NULL);
CREATE TABLE word (word TEXT PRIMARY KEY, rank INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE posting (word TEXT NOT NULL, size INTEGER NOT NULL, position INTEGER NOT NULL, kept INTEGER NOT NULL,
    PRIMARY KEY (word, size, position, kept)) WITHOUT ROWID;
"""
"""The index of the kept questions: each kept set (`words`: a JSON list; `prefix`: its prefix length),
each word's rank in the global order, and the postings of the kept sets' prefixes, by word, size and
position."""


def question_words(question: str) -> frozenset[str]:
    """The set of normalised words of a question (NFKC, case-folded, punctuation dropped)."""
    return frozenset(_WORDS.findall(unicodedata.normalize("NFKC", question).casefold()))


def _ordered(words: Collection[str], ranks: dict[str, int]) -> list[str]:
    """The words in the global order."""
    return sorted(words, key=ranks.__getitem__)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


class _Matched(NamedTuple):
    """A question `match` looked up: its words and their ranks, which `keep` indexes it by."""

    question: str
    words: frozenset[str]
    ranks: dict[str, int]


class NearDuplicateFilter:
    """Keeps the first of each group of near-duplicate questions, in the order they are offered.

    Two questions are near-duplicates when the Jaccard similarity of their word sets reaches the
    threshold (0.9 by default: identical after normalisation, or one word different in a long
    question).

    The index of the kept questions (their words, each word's rank, the postings of their prefixes)
    is a scratch database on disk (`qagen.runs.scratch`): as Python objects it took about 0.9 KB a
    kept question, so a build's memory grew with its drafts.
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
        self._db = scratch_database()
        self._db.executescript(_SCHEMA)
        # One transaction for the filter's life, never committed: nothing is kept past it, and a
        # transaction for each question written would cost several times the lookups.
        self._db.execute("BEGIN")
        self._kept = 0  # kept sets so far, numbered from 0 in the order kept
        self._kept_sizes: set[int] = set()
        self._first_empty: str | None = None
        self._unseen_rank = 0  # the rank given to the last word unseen at the last rebuild
        self._indexed_words = 0
        self._kept_at_rebuild = 0
        self._work_since_rebuild = 0
        self._reaches: dict[int, tuple[int, dict[int, tuple[int, int]]]] = {}
        self._prefix_lengths: dict[int, int] = {}
        self._matched: _Matched | None = None
        """The last question `match` looked up (`keep` registers it next)."""
        self._pending_words: dict[str, int] = {}
        """Ranks given to unseen words and not yet in the `word` table (written a batch at a time)."""

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
        return self._earliest_match(question, words)

    def keep(self, question: str, item_id: str) -> None:
        """Register a kept question (one `match` found no near-duplicate of)."""
        matched = self._matched
        self._matched = None
        if matched is None or matched.question != question:
            words = question_words(question)
            matched = _Matched(question, words, self._ranks(words) if words else {})
        if not matched.words:
            if self._first_empty is None:
                self._first_empty = item_id
            return
        with scratch_writes("the index of the kept questions"):
            self._keep(matched.words, matched.ranks, item_id)

    def _earliest_match(self, question: str, words: frozenset[str]) -> str | None:
        """The id of the first kept set, by (size, order kept), that the pairwise test accepts.

        Only the postings the position filters let through are read (each word of the question's
        prefix, under each kept size it can reach, up to the last position there), in that order, so
        the first one the test accepts is the one."""
        size = len(words)
        length, reach = self._reach(size)
        ranks = self._ranks(words)
        self._matched = _Matched(question, words, ranks)
        # Each prefix word under each size of kept set there is that it can reach, with the last
        # position there (a low threshold reaches hundreds of sizes, of which few are kept).
        reached = [(other_size, *reach[other_size]) for other_size in self._kept_sizes if other_size in reach]
        wanted = [
            (word, other_size, kept_last)
            for position, word in enumerate(_ordered(words, ranks)[:length])
            for other_size, question_last, kept_last in reached
            if position <= question_last
        ]
        rows = self._db.execute(
            "SELECT posting.size, kept.number, kept.id, kept.words FROM json_each(?) AS wanted"
            " JOIN posting ON posting.word = json_extract(wanted.value, '$[0]')"
            " AND posting.size = json_extract(wanted.value, '$[1]')"
            " AND posting.position <= json_extract(wanted.value, '$[2]')"
            " JOIN kept ON kept.number = posting.kept ORDER BY posting.size, posting.kept",
            (json.dumps(wanted),),
        )
        verified: set[int] = set()
        work = 0
        found: str | None = None
        for other_size, kept, kept_id, kept_words in rows:
            work += 1
            if kept in verified:
                continue
            verified.add(kept)
            # The float test itself, as an integer: it holds exactly from `need` on.
            if len(words.intersection(json.loads(kept_words))) >= size - reach[other_size][0]:
                found = kept_id
                break
        rows.close()
        self._work_since_rebuild += work
        self.comparisons += len(verified)
        return found

    def _keep(self, words: frozenset[str], ranks: dict[str, int], item_id: str) -> None:
        number, size = self._kept, len(words)
        self._kept += 1
        self._kept_sizes.add(size)
        self._db.execute(
            "INSERT INTO kept (number, id, words, size, prefix) VALUES (?, ?, ?, ?, ?)",
            (number, item_id, json.dumps(list(words)), size, self._prefix_length(size)),
        )
        grown = self._kept >= max(_FIRST_REBUILD, _GROWTH * self._kept_at_rebuild)
        if grown or self._work_since_rebuild > _WORK_PER_REBUILD * self._indexed_words + _FIRST_REBUILD:
            self._rebuild()
        else:
            self._index(number, words, ranks)

    def _rebuild(self) -> None:
        """Re-rank the words by the kept sets' counts (rarest first) and index every kept set anew."""
        db = self._db
        # The kept sets' words by how many of them hold each: words met only in questions that were
        # not kept drop out of the order (they are unseen again).
        self._pending_words = {}
        db.execute("DELETE FROM word")
        db.execute(
            "INSERT INTO word (word, rank) SELECT value, row_number() OVER (ORDER BY count(*), value) - 1"
            " FROM kept, json_each(kept.words) GROUP BY value"
        )
        self._unseen_rank = 0
        db.execute("DELETE FROM posting")
        # Each kept set's first `prefix` words in the new order (ranks are distinct: a total order).
        db.execute(
            "INSERT INTO posting (word, size, position, kept)"
            " SELECT word, size, position, kept FROM ("
            "  SELECT word.word AS word, kept.size AS size, kept.prefix AS prefix, kept.number AS kept,"
            "   row_number() OVER (PARTITION BY kept.number ORDER BY word.rank) - 1 AS position"
            "  FROM kept, json_each(kept.words) AS kept_word JOIN word ON word.word = kept_word.value"
            " ) WHERE position < prefix"
        )
        self._indexed_words = db.execute("SELECT count(*) FROM posting").fetchone()[0]
        self._kept_at_rebuild = self._kept
        self._work_since_rebuild = 0

    def _index(self, number: int, words: frozenset[str], ranks: dict[str, int]) -> None:
        size, length = len(words), self._prefix_length(len(words))
        prefix = _ordered(words, ranks)[:length]
        self._db.executemany(
            "INSERT INTO posting (word, size, position, kept) VALUES (?, ?, ?, ?)",
            ((word, size, position, number) for position, word in enumerate(prefix)),
        )
        self._indexed_words += length

    def _ranks(self, words: frozenset[str]) -> dict[str, int]:
        """Each word's rank in the global order. Words unseen since the last rebuild are the rarest:
        they rank before all others, newest first, and keep that rank until the next rebuild so the
        order stays fixed meanwhile. (Only questions meet them: a kept set's words were ranked when it
        was a question.)"""
        ranks: dict[str, int] = dict(
            self._db.execute(
                "SELECT word, rank FROM word WHERE word IN (SELECT value FROM json_each(?))", (json.dumps(list(words)),)
            ).fetchall()
        )
        pending = self._pending_words
        for word in words:
            if word not in ranks:
                rank = pending.get(word)
                if rank is None:
                    self._unseen_rank -= 1
                    rank = pending[word] = self._unseen_rank
                ranks[word] = rank
        if len(pending) >= _PENDING_WORDS:
            with scratch_writes("the index of the kept questions"):
                self._db.executemany("INSERT INTO word (word, rank) VALUES (?, ?)", pending.items())
            self._pending_words = {}
        return ranks

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
