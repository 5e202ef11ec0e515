"""Pairs of chunks that share a specific term, found without a knowledge graph: rare shared words.

A term is a content word (`qagen.generation.checks.words.content_words`) of at least `MIN_TERM_CHARACTERS`; it is rare
when it occurs in at least two chunks and at most `MAX_TERM_SHARE` of them (and never in more than
`MAX_TERM_CHUNKS`): a name, an option, a command, rather than a word every chunk uses. Two chunks
are linked by the rare terms they share, weighted by inverse document frequency (`log(N / df)`, as
TF-IDF and BM25 weigh a word), so a pair that shares one very rare name outranks one that shares
two common-ish words.

The anchors are taken in the type's seeded round-robin order over documents (as single-passage
types sample); each anchor gets the partner it shares the most weight with, from another document
when any qualifies, else from the same document but a part that does not overlap it. Pairs are
never repeated (in either order). An anchor without any partner is skipped; pairs the corpus
cannot give are counted (`Picked.short`), never hidden.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import NamedTuple

from qagen.generation.checks.words import content_words
from qagen.generation.sample import ChunkRef, sampling_order
from qagen.question_types.pickers import type_seed
from qagen.question_types.spec import ChunkSource, PassagePicker, Picked, PickedPassages

MIN_TERM_CHARACTERS = 3
"""Shorter words (`id`, `of`, `to`) name nothing specific."""
MAX_TERM_SHARE = 0.05
"""A term in more than this share of the chunks is the corpus' common vocabulary, not a link."""
MAX_TERM_CHUNKS = 50
"""Nor is one in more chunks than this, whatever the corpus' size (it bounds the work per anchor)."""
LINK_TERMS = 3
"""The shared terms shown to the generator, rarest first."""


class _Placed(NamedTuple):
    id: str
    source: str
    start: int
    end: int


def _overlaps(a: _Placed, b: _Placed) -> bool:
    return a.source == b.source and a.start < b.end and b.start < a.end


def shared_term_pairs(own_order_of: str) -> PassagePicker:
    """The multi-hop picker: `n` pairs of chunks linked by rare shared terms (see the module)."""

    def pick(chunks: ChunkSource, seed: int, n: int | None) -> Picked:
        placed: list[_Placed] = []
        terms: list[frozenset[str]] = []
        frequency: Counter[str] = Counter()
        for chunk in chunks():
            words = frozenset(word for word in content_words(chunk.text) if len(word) >= MIN_TERM_CHARACTERS)
            placed.append(_Placed(chunk.id, chunk.source, chunk.start_index, chunk.end_index))
            terms.append(words)
            frequency.update(words)
        total = len(placed)
        most = min(MAX_TERM_CHUNKS, max(2, int(MAX_TERM_SHARE * total)))
        weight = {term: math.log(total / count) for term, count in frequency.items() if 2 <= count <= most}
        holders: dict[str, list[int]] = {term: [] for term in weight}
        for position, words in enumerate(terms):
            for term in words:
                if term in holders:
                    holders[term].append(position)
        position_of = {chunk.id: position for position, chunk in enumerate(placed)}
        order = sampling_order((ChunkRef(chunk.id, chunk.source) for chunk in placed), type_seed(seed, own_order_of))
        groups: list[PickedPassages] = []
        made: set[frozenset[int]] = set()
        for anchor_id in order:
            if n is not None and len(groups) == n:
                break
            anchor = position_of[anchor_id]
            shared: dict[int, list[str]] = {}
            for term in terms[anchor]:
                for other in holders.get(term, ()):
                    if other != anchor and not _overlaps(placed[anchor], placed[other]):
                        shared.setdefault(other, []).append(term)
            candidates = [other for other in shared if frozenset((anchor, other)) not in made]
            elsewhere = [other for other in candidates if placed[other].source != placed[anchor].source]
            pool = elsewhere or candidates
            if not pool:
                continue
            # The most shared weight; ties to the chunk with the smaller id, so the pick is the same everywhere.
            partner = min(pool, key=lambda other: (-sum(weight[term] for term in shared[other]), placed[other].id))
            made.add(frozenset((anchor, partner)))
            link = sorted(shared[partner], key=lambda term: (-weight[term], term))[:LINK_TERMS]
            groups.append(PickedPassages((placed[anchor].id, placed[partner].id), tuple(link)))
        return Picked(groups, 0 if n is None else n - len(groups))

    return pick
