"""Multi-hop pairs picked both ways on a corpus, without an LLM: by rare shared terms alone (the
default) and with the bundled embeddings model choosing among those candidates (`pair_embeddings
= "local"`, the dense extra).

    python benchmarks/pairing_report.py CORPUS [--n 20] [--seed 42] [--chunk-size 2000] [--chunk-overlap 200]

Per method: the pairs made of the `--n` asked; the share joining two documents; the cosine between
the two passages with the bundled all-MiniLM-L6-v2 (the same model measures both methods); how many
rare terms the two passages share (every one, not only the 3 shown to the generator); the seconds
the pick took and the chunks it embedded; and 3 example pairs (document names and link terms).
The corpus is chunked as a build chunks it (`--chunk-size`/`--chunk-overlap`, in characters).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from qagen.corpus.chunk import ChunkStats, chunk_documents, make_splitter
from qagen.corpus.load.documents import CorpusReport, iter_documents
from qagen.generation.checks.words import content_words
from qagen.generation.embedders import pairing_embedder
from qagen.question_types.pairs import MAX_TERM_CHUNKS, MAX_TERM_SHARE, MIN_TERM_CHARACTERS, shared_term_pairs
from qagen.question_types.spec import Picked, TextEmbedder
from qagen.records import Chunk


class CountingEmbedder:
    """The embedder, counting the texts it is asked for."""

    def __init__(self, embed: TextEmbedder) -> None:
        self.embed = embed
        self.texts = 0

    def __call__(self, texts: Sequence[str]) -> NDArray[np.float64]:
        self.texts += len(texts)
        return self.embed(texts)


def rare_terms(chunks: list[Chunk]) -> list[frozenset[str]]:
    """Each chunk's rare terms, as `qagen.question_types.pairs` defines them (its constants)."""
    terms = [frozenset(w for w in content_words(c.text) if len(w) >= MIN_TERM_CHARACTERS) for c in chunks]
    frequency = Counter(term for words in terms for term in words)
    most = min(MAX_TERM_CHUNKS, max(2, int(MAX_TERM_SHARE * len(chunks))))
    rare = {term for term, count in frequency.items() if 2 <= count <= most}
    return [words & rare for words in terms]


class Measured(NamedTuple):
    """What every method's pairs are measured against."""

    chunks: dict[str, Chunk]
    """The corpus's chunks by id."""
    terms: dict[str, frozenset[str]]
    """Each chunk's rare terms, by id."""
    embed: TextEmbedder
    """The bundled model, for the cosine of a pair."""
    asked: int
    """The pairs asked for."""


def report(name: str, picked: Picked, seconds: float, embedded: int | None, measured: Measured) -> None:
    chunks, terms, embed, asked = measured
    groups = picked.groups
    print(f"\n== {name}")
    print(f"   pairs made           {len(groups)} of {asked} asked (short {picked.short})")
    if not groups:
        return
    apart = sum(chunks[a].source != chunks[b].source for a, b in (g.chunk_ids for g in groups))
    print(f"   two documents        {apart}/{len(groups)} ({apart / len(groups):.0%})")
    cosines = []
    for group in groups:
        first, second = embed([chunks[chunk_id].text for chunk_id in group.chunk_ids])
        cosines.append(float(first @ second))
    print(
        f"   cosine of the pair   mean {statistics.fmean(cosines):.3f}, median {statistics.median(cosines):.3f}, "
        f"min {min(cosines):.3f}, max {max(cosines):.3f}"
    )
    shared = [len(terms[a] & terms[b]) for a, b in (g.chunk_ids for g in groups)]
    print(f"   shared rare terms    mean {statistics.fmean(shared):.2f}, median {statistics.median(shared):.1f}")
    spent = f"{seconds:.1f} s" + (f", {embedded} chunks embedded" if embedded is not None else "")
    print(f"   pick                 {spent}")
    for group, cosine in list(zip(groups, cosines, strict=True))[:3]:
        a, b = (chunks[chunk_id] for chunk_id in group.chunk_ids)
        print(f"   - {a.source} + {b.source}  link: {', '.join(group.link)}  (cosine {cosine:.3f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--n", type=int, default=20, help="multi-hop pairs to pick")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--chunk-size", type=int, default=2000)
    parser.add_argument("--chunk-overlap", type=int, default=200)
    args = parser.parse_args()

    corpus = CorpusReport()
    stats = ChunkStats()
    splitter = make_splitter(args.chunk_size, args.chunk_overlap)
    chunks = list(chunk_documents(iter_documents(args.corpus, report=corpus), splitter, stats))
    print(
        f"{args.corpus}: {corpus.documents} documents ({len(corpus.skipped)} skipped), {len(chunks)} chunks of at "
        f"most {args.chunk_size} characters; {args.n} pairs asked, seed {args.seed}"
    )
    embed = pairing_embedder("local")
    if embed is None:  # pragma: no cover - "local" always names a model
        sys.exit("no embeddings model")
    embed(["warm-up"])  # load the model before anything is timed
    pick = shared_term_pairs("multi_hop")
    measured = Measured(
        {chunk.id: chunk for chunk in chunks},
        dict(zip((chunk.id for chunk in chunks), rare_terms(chunks), strict=True)),
        embed,
        args.n,
    )

    started = time.perf_counter()
    by_terms = pick(lambda: chunks, args.seed, args.n)
    report("rare terms (default)", by_terms, time.perf_counter() - started, None, measured)

    counting = CountingEmbedder(embed)
    started = time.perf_counter()
    by_meaning = pick(lambda: chunks, args.seed, args.n, counting)
    report("rare terms + local embeddings", by_meaning, time.perf_counter() - started, counting.texts, measured)

    same = {g.chunk_ids for g in by_terms.groups} & {g.chunk_ids for g in by_meaning.groups}
    print(f"\npairs both methods made: {len(same)} of {len(by_meaning.groups)}")


if __name__ == "__main__":
    main()
