"""Easiness figures against independent computations: the copied share by plain counting, the
BM25 rank of a question's chunk by a BM25 written out here (Lucene's formula, the variant and
parameters bm25s is configured with), not by bm25s."""

from __future__ import annotations

import math
import random
import re
from collections import Counter

from qagen.generation.checks.easiness import ChunkRanker, copied_share, too_close


def test_copied_share_by_hand() -> None:
    chunk = "The packfile holds compressed objects; git gc writes it."
    # Content words of the question: packfile, holds, objects, written, daily (5); in the chunk: 3.
    assert copied_share("Which packfile holds the objects written daily?", chunk) == 3 / 5
    assert copied_share("What is it?", chunk) is None  # stopwords only
    assert too_close("Which packfile holds compressed objects?", chunk, 0.9)
    assert not too_close("Which packfile holds the objects written daily?", chunk, 0.9)


def _lucene_bm25_ranks(chunks: list[list[str]], query: list[str], own: int, k1: float = 1.5, b: float = 0.75) -> int:
    n = len(chunks)
    average = sum(len(c) for c in chunks) / n
    document_frequency = Counter(word for c in chunks for word in set(c))
    scores = []
    for words in chunks:
        counts = Counter(words)
        score = 0.0
        for word in query:
            if document_frequency[word] == 0:
                continue
            idf = math.log(1 + (n - document_frequency[word] + 0.5) / (document_frequency[word] + 0.5))
            tf = counts[word]
            score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(words) / average))
        scores.append(score)
    return 1 + sum(1 for score in scores if score > scores[own] * (1 + 1e-9))


def test_bm25_rank_equals_an_independent_bm25() -> None:
    rng = random.Random(5)
    vocabulary = [f"w{number}" for number in range(60)]
    texts = [" ".join(rng.choices(vocabulary, k=rng.randint(8, 40))) for _ in range(40)]
    ranker = ChunkRanker((f"c{i}", text) for i, text in enumerate(texts))
    tokenised = [re.findall(r"\w+", text) for text in texts]
    ranks = []
    for trial in range(200):
        own = rng.randrange(len(texts))
        # Distinct words, some from the chunk and some not (so ranks other than 1 come up).
        query = list(dict.fromkeys(rng.sample(tokenised[own], 2) + rng.sample(vocabulary, 3)))
        expected = _lucene_bm25_ranks(tokenised, query, own)
        assert ranker.rank(" ".join(query), f"c{own}") == expected, (trial, query)
        ranks.append(expected)
    assert 1 in ranks and max(ranks) > 3  # the trials cover first places and others
    assert ranker.rank("w1", "missing") is None
    assert ranker.rank("nothing here", "c0") == 1  # no word of the question in the corpus: a tie
