"""The build's one BM25 index of its chunks: ranks and top chunks against a BM25 written out here
(Lucene's formula, the variant and parameters bm25s is configured with), not by bm25s; and a build
whose critics read `{retrieved}` and whose final write ranks every draft's chunk indexes its chunks
once."""

from __future__ import annotations

import math
import random
import re
import threading
from collections import Counter
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
import pytest
from datasets import load_from_disk

from qagen.config import BuildConfig
from qagen.corpus import bm25_ranks
from qagen.corpus.bm25_index import BM25_PARAMETERS, TokenIds, bm25_retriever, token_ids
from qagen.corpus.chunk_index import RETRIEVED_CHUNKS, ChunkIndex, RankQuery
from qagen.corpus.settings import CorpusSettings
from qagen.generation.pipeline import build
from qagen.llm.backends import ModelSettings
from qagen.records import Chunk
from qagen.runs.rundir import RunDir
from standins.corpus import write_corpus
from standins.llm.server import StandInLLM

TOLERANCE = 1e-6
"""bm25s scores in float32, the BM25 here in float64: scores this close are the same score."""


def _lucene_bm25(chunks: list[list[str]], query: list[str], k1: float = 1.5, b: float = 0.75) -> list[float]:
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
    return scores


def _chunks(count: int = 40, repeated: int = 5) -> list[Chunk]:
    """Texts of a 60-word vocabulary; the first `repeated` again at the end (ties broken by position)."""
    rng = random.Random(5)
    vocabulary = [f"w{number}" for number in range(60)]
    texts = [" ".join(rng.choices(vocabulary, k=rng.randint(8, 40))) for _ in range(count)]
    texts += texts[:repeated]
    return [
        Chunk(id=f"c{i}", source=f"doc{i % 7}", text=text, start_index=0, end_index=len(text))
        for i, text in enumerate(texts)
    ]


def _queries(chunks: list[Chunk], trials: int) -> list[tuple[list[str], int]]:
    """Distinct words, some from a chunk and some not (so ranks other than 1 come up), with that chunk."""
    rng = random.Random(11)
    vocabulary = sorted({word for chunk in chunks for word in chunk.text.split()})
    queries = []
    for _ in range(trials):
        own = rng.randrange(len(chunks))
        words = list(dict.fromkeys(rng.sample(chunks[own].text.split(), 2) + rng.sample(vocabulary, 3)))
        queries.append((words, own))
    return queries


def test_rank_equals_an_independent_bm25_ties_in_the_chunks_favour() -> None:
    chunks = _chunks()
    index = ChunkIndex(lambda: chunks)
    tokenised = [chunk.text.split() for chunk in chunks]
    ranks = []
    for query, own in _queries(chunks, 200):
        scores = _lucene_bm25(tokenised, query)
        expected = 1 + sum(1 for score in scores if score > scores[own] * (1 + TOLERANCE))
        assert index.rank(" ".join(query), chunks[own].id) == expected, query
        ranks.append(expected)
    assert 1 in ranks and max(ranks) > 3  # the trials cover first places and others
    assert index.rank("w1", "missing") is None
    assert index.rank("nothing here", "c0") == 1  # no word of the question in the corpus: a tie


@pytest.mark.parametrize("dense_share", [8, 10**9], ids=["frequent-words-dense", "all-sparse"])
@pytest.mark.parametrize("shard_chunks", [1, 3, 7, 44, 1000])
def test_ranks_shard_by_shard_equal_the_ranks_of_one_index_of_every_chunk(
    shard_chunks: int, dense_share: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bm25_ranks, "DENSE_SHARE", dense_share)
    chunks = _chunks(count=40, repeated=5)  # repeated texts: chunks tying with a question's own
    queries = [RankQuery(" ".join(words), chunks[own].id) for words, own in _queries(chunks, 150)]
    queries += [
        RankQuery("w1 w1 w2 w1", "c3"),  # a repeated word counts each time
        RankQuery(chunks[2].text, "c2"),
        RankQuery(chunks[2].text, f"c{len(chunks) - 3}"),  # its repeat at the end: the same score
        RankQuery("nothing here", "c0"),  # no word of the corpus: every chunk ties
        RankQuery("", "c1"),
        RankQuery("w1 w2", "missing"),  # a chunk not indexed
        RankQuery("w1 w2", None),  # not ranked
    ]
    one_index = ChunkIndex(lambda: chunks)
    expected = [one_index.rank(q.question, q.chunk_id) if q.chunk_id is not None else None for q in queries]
    assert None in expected and 1 in expected and max(rank for rank in expected if rank) > 10

    indexed: list[int] = []
    monkeypatch.setattr(bm25s.BM25, "index", lambda *args, **kwargs: indexed.append(1))
    sharded = ChunkIndex(lambda: chunks, shard_chunks=shard_chunks)
    assert list(sharded.ranks(iter(queries))) == expected
    assert indexed == []  # no index of every chunk was built
    assert sharded.chunks_per_document() == Counter(chunk.source for chunk in chunks)
    ahead = ChunkIndex(lambda: chunks, shard_chunks=shard_chunks)
    ahead.count_ahead()  # the shards indexed before the questions are known: only scored by `ranks`
    monkeypatch.setattr(bm25_ranks, "_index_shard", lambda *args: pytest.fail("a shard indexed again"))
    assert list(ahead.ranks(iter(queries))) == expected and indexed == []


def test_each_shard_scores_its_chunks_as_one_index_of_every_chunk_does_to_the_bit(tmp_path: Path) -> None:
    rng = random.Random(3)
    vocabulary = [f"w{number}" for number in range(300)]
    texts = [" ".join(rng.choices(vocabulary, k=rng.randint(5, 200))) for _ in range(600)]
    chunks = [
        Chunk(id=f"c{i}", source="d", text=text, start_index=0, end_index=len(text)) for i, text in enumerate(texts)
    ]
    every = TokenIds()
    for chunk in chunks:
        every.add(chunk.text)
    one_index = bm25_retriever(every)
    with (tmp_path / "tokens").open("w+b") as tokens:
        corpus = bm25_ranks._Corpus(chunks, tokens)
        tokens.flush()
        questions = [" ".join(rng.choices(vocabulary, k=rng.randint(1, 12))) for _ in range(100)]
        queries = bm25_ranks._Queries((RankQuery(question, None) for question in questions), corpus)
        idf, average = corpus.idf(), corpus.average_length()
        shards = [bm25_ranks._index_shard(tokens, corpus, start, min(start + 170, 600), idf, average) for start in
                  range(0, 600, 170)]  # fmt: skip
    assert any(shard.dense for shard in shards) and any(len(shard.dense) < 300 for shard in shards)
    for number, question in enumerate(questions):
        expected = one_index.get_scores_from_ids(one_index.get_tokens_ids(bm25_ranks.tokenize(question)))
        scores = np.concatenate([shard.scores(queries.ids(number)) for shard in shards])
        assert scores.dtype == expected.dtype and scores.tobytes() == expected.tobytes(), question


def test_ranks_ask_the_index_of_every_chunk_when_it_is_built() -> None:
    chunks = _chunks()
    index = ChunkIndex(lambda: chunks, shard_chunks=4)
    assert index.top("w1")  # builds the index of every chunk
    queries = [RankQuery(" ".join(words), chunks[own].id) for words, own in _queries(chunks, 20)]
    assert list(index.ranks(queries)) == [index.rank(q.question, q.chunk_id) for q in queries]


def test_a_corpus_without_a_word_ranks_every_indexed_chunk_first_shard_by_shard() -> None:
    punctuation = [Chunk(id=f"p{i}", source="punctuation", text="... !!", start_index=0, end_index=6) for i in range(3)]
    index = ChunkIndex(lambda: punctuation, shard_chunks=2)
    assert list(index.ranks([RankQuery("anything", "p2"), RankQuery("anything", "q")])) == [1, None]
    assert list(ChunkIndex(list, shard_chunks=2).ranks([RankQuery("anything", "p2")])) == [None]  # no chunk


def test_compact_token_ids_give_bm25s_the_index_it_builds_from_lists() -> None:
    texts = [chunk.text for chunk in _chunks()] + ["", "w1 w1 w2"]  # a text without a word, a repeated word
    compact = TokenIds()
    for text in texts:
        compact.add(text)
    vocab: dict[str, int] = {}
    lists = [token_ids(text, vocab) for text in texts]
    assert list(compact) == lists and compact.vocab == vocab and len(compact) == len(texts)
    from_lists = bm25s.BM25(**BM25_PARAMETERS)
    from_lists.index((lists, vocab), create_empty_token=False, show_progress=False)
    built = bm25_retriever(compact)
    for part in ("data", "indices", "indptr"):
        assert built.scores[part].tobytes() == from_lists.scores[part].tobytes(), part
    assert built.scores["num_docs"] == from_lists.scores["num_docs"] == len(texts)


def test_top_is_the_independent_bm25s_best_chunks_earlier_first_among_equals() -> None:
    chunks = _chunks()
    index = ChunkIndex(lambda: chunks)
    tokenised = [chunk.text.split() for chunk in chunks]
    position = {chunk.id: number for number, chunk in enumerate(chunks)}
    tied = 0
    for query, _ in _queries(chunks, 200):
        scores = _lucene_bm25(tokenised, query)
        found = [position[chunk.id] for chunk in index.top(" ".join(query))]
        scoring = sum(1 for score in scores if score > 0)
        assert len(found) == min(RETRIEVED_CHUNKS, scoring)
        assert all(scores[p] > 0 for p in found)  # a chunk sharing no word with the question is no evidence
        for better, worse in pairwise(found):
            assert scores[better] >= scores[worse] * (1 - TOLERANCE)  # best first
            if chunks[better].text == chunks[worse].text:
                assert better < worse  # equal scores: the earlier chunk first
                tied += 1
        # Nothing left out scores above the last one taken.
        left_out = max((scores[p] for p in range(len(chunks)) if p not in found), default=0.0)
        assert not found or left_out <= scores[found[-1]] * (1 + TOLERANCE)
    assert tied > 0  # the repeated texts met in some top
    assert index.top("nothing here") == ()
    assert [chunk.id for chunk in index.top(chunks[0].text, 2)] == ["c0", f"c{len(chunks) - 5}"]  # its repeat


def test_the_chunks_are_read_on_the_first_question_and_their_texts_kept_only_for_top() -> None:
    reads = []
    chunks = _chunks()

    def source() -> list[Chunk]:
        reads.append(1)
        return chunks

    index = ChunkIndex(source)
    assert reads == []
    assert index.rank("w1 w2", "c3") is not None and index.rank("w3", "c4") is not None
    assert index.chunks_per_document() == Counter(chunk.source for chunk in chunks)
    assert len(reads) == 1  # read and indexed once; ranking holds no text
    assert index.top("w1") and index.top("w2 w3")
    assert len(reads) == 2  # the chunks themselves, read once more on the first `top` and kept


def test_a_corpus_without_a_word_ranks_every_chunk_first_and_finds_nothing() -> None:
    punctuation = [Chunk(id=f"p{i}", source="punctuation", text="... !!", start_index=0, end_index=6) for i in range(3)]
    index = ChunkIndex(lambda: punctuation)
    assert index.top("anything") == ()
    assert index.rank("anything", "p2") == 1 and index.rank("anything", "q") is None
    assert index.chunks_per_document() == {"punctuation": 3}


def _config(corpus: Path, llm: StandInLLM, **changes: Any) -> BuildConfig:
    model = ModelSettings(spec="openai:stand-in", base_url=llm.base_url)
    settings: dict[str, Any] = {
        "corpus": CorpusSettings(path=str(corpus)), "chunking": {"chunk_size": 400, "chunk_overlap": 40},
        "seed": 9, "generator": model, "critic": model, "dedup_embeddings": None,
    }  # fmt: skip
    return BuildConfig.model_validate({**settings, **changes})


def test_a_build_with_unanswerable_questions_indexes_its_chunks_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    indexed: list[int] = []
    real = bm25s.BM25.index

    def counting(self: Any, corpus: Any, *args: Any, **kwargs: Any) -> Any:
        indexed.append(len(corpus.ids))  # (`TokenIds`): the documents indexed
        return real(self, corpus, *args, **kwargs)

    monkeypatch.setattr(bm25s.BM25, "index", counting)
    corpus = write_corpus(tmp_path / "corpus", documents=30, paragraphs=3)
    shares = {"factoid": 50, "unanswerable": 50}
    with StandInLLM() as llm:
        build(_config(corpus, llm, n_generations=30, question_types=shares), tmp_path / "run", progress=False)
        searched = [entry for entry in llm.log if entry["criterion"] == "not_in_corpus"]
    chunks = list(RunDir(tmp_path / "run").iter_chunks())
    # Both readers of the index were served: the critic reading `{retrieved}` and the final write's ranks
    # (of the factoids: an unanswerable question has no chunk of its own to rank, `NO_TARGET_COLUMNS`).
    assert searched, "no critic read {retrieved}"
    candidates = list(load_from_disk(str(tmp_path / "run" / "candidates")))
    ranked = Counter(row["question_type"] for row in candidates if row["bm25_rank"] is not None)
    assert set(ranked) == {"factoid"} and "unanswerable" in {row["question_type"] for row in candidates}
    assert indexed == [len(chunks)]  # ...from one index of every chunk

    # The ranks of both types against the independent BM25.
    tokenised = [re.findall(r"\w+", chunk.text.casefold()) for chunk in chunks]
    position = {chunk.id: number for number, chunk in enumerate(chunks)}
    for row in candidates:
        if row["bm25_rank"] is None:
            continue
        scores = _lucene_bm25(tokenised, re.findall(r"\w+", row["question"].casefold()))
        own = scores[position[row["chunk_id"]]]
        assert row["bm25_rank"] == 1 + sum(1 for score in scores if score > own * (1 + TOLERANCE)), row["question"]


def test_ranks_counted_ahead_in_another_thread_are_the_ranks_counted_when_asked() -> None:
    chunks = _chunks()
    reads: list[int] = []
    started, release = threading.Event(), threading.Event()

    def slow_source() -> Iterator[Chunk]:
        reads.append(1)
        started.set()
        release.wait(5)  # still counting when `ranks` is asked: it waits instead of counting again
        yield from chunks

    queries = [RankQuery(" ".join(words), chunks[own].id) for words, own in _queries(chunks, 40)]
    expected = list(ChunkIndex(lambda: chunks, shard_chunks=7).ranks(queries))
    ahead = ChunkIndex(slow_source, shard_chunks=7)
    counting = threading.Thread(target=ahead.count_ahead)
    counting.start()
    assert started.wait(5)
    ranked: list[list[int | None]] = []
    asking = threading.Thread(target=lambda: ranked.append(list(ahead.ranks(queries))))
    asking.start()
    release.set()
    counting.join(5)
    asking.join(5)
    assert ranked == [expected] and reads == [1]  # counted once, ahead, and the same ranks
    assert ahead.chunks_per_document() == Counter(chunk.source for chunk in chunks) and reads == [1]

    def counted_source() -> list[Chunk]:
        reads.append(1)
        return chunks

    again = ChunkIndex(counted_source, shard_chunks=7)
    again.count_ahead()
    again.count_ahead()  # (a build to a target size warms up once a round)
    assert list(again.ranks(queries)) == expected and reads == [1, 1]


def test_the_chunks_positions_are_found_together_as_one_by_one_in_a_dict(tmp_path: Path) -> None:
    """`_Corpus.positions` (one search for every question's chunk) against a dict of the ids: a repeated id
    at its later place, ids that are a prefix of one indexed or longer than every one not indexed."""
    rng = random.Random(4)
    ids = [f"c{rng.randrange(40)}" for _ in range(60)] + ["long-id-0", "é"]
    chunks = [Chunk(id=chunk_id, source="d", text="w", start_index=0, end_index=1) for chunk_id in ids]
    with (tmp_path / "tokens").open("w+b") as tokens:
        corpus = bm25_ranks._Corpus(chunks, tokens)
    last = {chunk_id: place for place, chunk_id in enumerate(ids)}
    asked = [*ids, "c", "c4", "c400", "long-id-0-and-more", "long-id", "", "é", "e", "x" * 100]
    rng.shuffle(asked)
    assert corpus.positions(asked) == [last.get(chunk_id, -1) for chunk_id in asked]
    assert corpus.positions([]) == []
    assert corpus.positions(["c1" * 40]) == [-1]  # longer than every id indexed, alone
