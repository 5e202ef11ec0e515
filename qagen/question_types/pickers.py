"""Passage pickers: how a question type chooses the chunks its drafts read.

`one_chunk` is the single-passage picker (factoid, unanswerable, reworded): the first `n` chunks of
the seeded round-robin order (`qagen.generation.sample.sampling_order`). The factoid type reads the
order of the build's own seed, as every build before question types did; any other type reads an
order of its own (the seed mixed with the type's name), so two types do not draft from the same
chunks more than chance makes them, and each type's sample only grows when more is asked.
"""

from __future__ import annotations

import hashlib

from qagen.corpus.chunk import ChunkSource
from qagen.generation.sample import ChunkRef, sampling_order, take
from qagen.question_types.spec import PassagePicker, Picked, PickedPassages, TextEmbedder


def type_seed(seed: int, question_type: str) -> int:
    """A type's own seed: the build's seed mixed with the type's name (sha256, the same in every process)."""
    digest = hashlib.sha256(f"{seed}\x00{question_type}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def one_chunk(own_order_of: str | None) -> PassagePicker:
    """One chunk per draft, in the sampling order of the build's seed (`own_order_of` None) or of the
    seed mixed with `own_order_of` (a type's name)."""

    def pick(chunks: ChunkSource, seed: int, n: int | None, embed: TextEmbedder | None = None) -> Picked:
        order_seed = seed if own_order_of is None else type_seed(seed, own_order_of)
        refs = (ChunkRef(chunk.id, chunk.source) for chunk in chunks())
        return Picked([PickedPassages((chunk_id,)) for chunk_id in take(sampling_order(refs, order_seed), n)])

    return pick
