"""Pairs of chunks that share a specific term, found without a knowledge graph: rare shared words.

A term is a content word (`qagen.generation.checks.words.content_words`) of at least `MIN_TERM_CHARACTERS`; it is rare
when it occurs in at least two chunks and at most `MAX_TERM_SHARE` of them (and never in more than
`MAX_TERM_CHUNKS`): a name, an option, a command, rather than a word every chunk uses. Two chunks
are linked by the rare terms they share, weighted by inverse document frequency (`log(N / df)`, as
TF-IDF and BM25 weigh a word), so a pair that shares one very rare name outranks one that shares
two common-ish words.

The anchors are taken in the type's seeded round-robin order over documents (as single-passage
types sample); each anchor gets the partner it shares the most weight with, from a part of its own
document that does not overlap it when any qualifies, else from another document. Measured on 14
pairs Qwen2.5-1.5B drafted from Python's library docs when another document came first, none made a
question a reviewer keeps: two modules sharing a rare word (csv and statistics, zlib and secrets)
rarely have a fact that bridges them, and the drafts used one passage or invented a link; two
sections of one document share their subject. A near copy
of the anchor (the same section in two documents, a page and its older version, an included file)
is never its partner: one passage alone would answer any question on both. Lexically, a near copy
shares at least `NEAR_COPY_TERM_SHARE` of the two chunks' terms (Jaccard); this bound holds with
or without embeddings. Pairs are never repeated (in either order). An anchor without any partner is
skipped; pairs the corpus cannot give are counted (`Picked.short`), never hidden.

With an embeddings model (`BuildConfig.pair_embeddings`), the rare terms still find the candidates
(a shared name, option or command: what a question can bridge on), and the meaning chooses among
them: of the anchor's `EMBEDDING_CANDIDATES` candidates that share the most weight, the partner is
the one whose embedding is closest to the anchor's, short of `NEAR_DUPLICATE_COSINE` (a near copy
would let one passage answer the question alone). An anchor whose candidates are all near copies is
skipped. Each chunk is embedded at most once per pick, so a pick of `n` pairs embeds at most
`n * (1 + EMBEDDING_CANDIDATES)` chunks, plus those of the anchors skipped.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import TYPE_CHECKING, NamedTuple

from qagen.corpus.chunk import ChunkSource
from qagen.generation.checks.words import content_words
from qagen.generation.sample import ChunkRef, sampling_order
from qagen.question_types.pickers import type_seed
from qagen.question_types.spec import PassagePicker, Picked, PickedPassages, TextEmbedder

if TYPE_CHECKING:  # numpy is imported only when texts are embedded
    import numpy as np
    from numpy.typing import NDArray

MIN_TERM_CHARACTERS = 3
"""Shorter words (`id`, `of`, `to`) name nothing specific."""
MAX_TERM_SHARE = 0.05
"""A term in more than this share of the chunks is the corpus' common vocabulary, not a link."""
MAX_TERM_CHUNKS = 50
"""Nor is one in more chunks than this, whatever the corpus' size (it bounds the work per anchor)."""
LINK_TERMS = 3
"""The shared terms shown to the generator, rarest first."""
EMBEDDING_CANDIDATES = 20
"""With embeddings: the candidates of an anchor compared by meaning, those sharing the most term
weight (it bounds the chunks embedded per pair)."""
NEAR_COPY_TERM_SHARE = 0.8
"""Jaccard of two chunks' term sets from which they are near copies. Measured on 400 multi-hop pairs
this picker made on Python's docs and 300 on git's (2000-character chunks): distinct passages share
at most 0.63 (sndhdr's and imghdr's), while the same text in two places shares up to 1.0 (the
introduction Python's installing and distributing guides both open with, 0.92; git's pages that
include one file, a page's HTML and text copies). Copies cut into chunks at other places share only
a part of their text, and less (git's: 0.4 to 0.8): this bound does not catch those."""
NEAR_DUPLICATE_COSINE = 0.95
"""With embeddings: a candidate at least this close to its anchor is a near copy of it (the same
passage in two documents, a page and its older version), never its partner."""


class _Placed(NamedTuple):
    id: str
    source: str
    start: int
    end: int


def _overlaps(a: _Placed, b: _Placed) -> bool:
    return a.source == b.source and a.start < b.end and b.start < a.end


def _near_copies(a: frozenset[str], b: frozenset[str]) -> bool:
    return len(a & b) >= NEAR_COPY_TERM_SHARE * len(a | b)


def shared_term_pairs(own_order_of: str) -> PassagePicker:
    """The multi-hop picker: `n` pairs of chunks linked by rare shared terms (see the module)."""

    def pick(chunks: ChunkSource, seed: int, n: int | None, embed: TextEmbedder | None = None) -> Picked:
        placed: list[_Placed] = []
        terms: list[frozenset[str]] = []
        texts: list[str] = []  # held only to embed them
        frequency: Counter[str] = Counter()
        for chunk in chunks():
            words = frozenset(word for word in content_words(chunk.text) if len(word) >= MIN_TERM_CHARACTERS)
            placed.append(_Placed(chunk.id, chunk.source, chunk.start_index, chunk.end_index))
            terms.append(words)
            if embed is not None:
                texts.append(chunk.text)
            frequency.update(words)
        closest = None if embed is None else _ClosestByMeaning(embed, texts, [chunk.id for chunk in placed])
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
            candidates = [
                other
                for other in shared
                if frozenset((anchor, other)) not in made and not _near_copies(terms[anchor], terms[other])
            ]
            own_document = [other for other in candidates if placed[other].source == placed[anchor].source]
            pool = own_document or candidates
            if not pool:
                continue
            # The most shared weight first; ties to the chunk with the smaller id, so the pick is the same everywhere.
            ranked = sorted(pool, key=lambda other: (-sum(weight[term] for term in shared[other]), placed[other].id))
            partner = ranked[0] if closest is None else closest(anchor, ranked[:EMBEDDING_CANDIDATES])
            if partner is None:
                continue
            made.add(frozenset((anchor, partner)))
            link = sorted(shared[partner], key=lambda term: (-weight[term], term))[:LINK_TERMS]
            groups.append(PickedPassages((placed[anchor].id, placed[partner].id), tuple(link)))
        return Picked(groups, 0 if n is None else n - len(groups))

    return pick


class _ClosestByMeaning:
    """The candidate closest in meaning to an anchor, short of a near copy; each text embedded once."""

    def __init__(self, embed: TextEmbedder, texts: list[str], ids: list[str]) -> None:
        self._embed = embed
        self._texts = texts
        self._ids = ids
        self._vectors: dict[int, NDArray[np.float64]] = {}

    def __call__(self, anchor: int, candidates: list[int]) -> int | None:
        """The candidate (a position) with the highest cosine to `anchor` below `NEAR_DUPLICATE_COSINE`,
        ties to the smaller chunk id; None when every one is a near copy."""
        new = [position for position in (anchor, *candidates) if position not in self._vectors]
        if new:
            # One call per anchor for the texts not embedded yet.
            self._vectors.update(zip(new, self._embed([self._texts[position] for position in new]), strict=True))
        reference = self._vectors[anchor]
        scored = [(float(self._vectors[other] @ reference), other) for other in candidates]
        apart = [(cosine, other) for cosine, other in scored if cosine < NEAR_DUPLICATE_COSINE]
        if not apart:
            return None
        return min(apart, key=lambda found: (-found[0], self._ids[found[1]]))[1]
