"""The retriever contract: reciprocal rank fusion, the hybrid retriever, and the reranking hook."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from qagen.evaluate.systems.baseline import Baseline
from qagen.evaluate.systems.corpus_chunks import CorpusChunks, clear_memory
from qagen.evaluate.systems.rerank.base import RankedScores, RerankItem, ScoringTask
from qagen.evaluate.systems.retrievers import (
    RRF_K,
    BM25Retriever,
    HybridRetriever,
    Reranker,
    Retriever,
    ScoredContext,
    reciprocal_rank_fusion,
)
from qagen.llm.backends import LangChainBackend
from qagen.llm.client import LLMClient, ModelSettings
from qagen.records import RetrievedContext
from standins.corpus import write_corpus


@pytest.fixture(autouse=True)
def _fresh_memory() -> Iterator[None]:
    clear_memory()
    yield
    clear_memory()


def reader() -> LLMClient:
    messages = iter([AIMessage(content="An answer.")] * 10)
    return LLMClient(LangChainBackend(GenericFakeChatModel(messages=messages)), ModelSettings(spec="fake:reader-1"))


def chunk(name: str) -> RetrievedContext:
    return RetrievedContext(text=f"text of {name}", source=name, start_index=0, end_index=10)


def ranking(*names: str) -> list[ScoredContext]:
    return [ScoredContext(chunk(name), 10.0 - i) for i, name in enumerate(names)]


def test_rrf_scores_are_the_sum_of_reciprocal_ranks() -> None:
    fused = reciprocal_rank_fusion([ranking("a", "b", "c"), ranking("c", "b", "d")], 10)
    scores = {scored.context.source: scored.score for scored in fused}
    assert scores["b"] == pytest.approx(2 / (RRF_K + 2))
    assert scores["c"] == pytest.approx(1 / (RRF_K + 3) + 1 / (RRF_K + 1))
    assert scores["a"] == pytest.approx(1 / (RRF_K + 1))
    assert scores["d"] == pytest.approx(1 / (RRF_K + 3))
    # Ranked by fused score: c (1st and 3rd) and b (2nd twice) beat a (1st once); then a, then d.
    assert [scored.context.source for scored in fused] == ["c", "b", "a", "d"]


def test_rrf_ties_go_to_the_better_single_rank_then_the_first_ranking() -> None:
    # a and x are both ranked 1st once: a comes from the first ranking; b and y likewise at rank 2.
    fused = reciprocal_rank_fusion([ranking("a", "b"), ranking("x", "y")], 3)
    assert [scored.context.source for scored in fused] == ["a", "x", "b"]
    assert reciprocal_rank_fusion([[], []], 5) == []


class Fixed:
    """A retriever that returns a fixed ranking, to test what is built on the contract."""

    def __init__(self, corpus: CorpusChunks, label: str, names: list[str]) -> None:
        self.corpus = corpus
        self.name = label
        self.names = names
        self.asked: list[int] = []

    def describe(self) -> dict[str, object]:
        return {"retriever": self.name, "corpus_index": "0" * 16}

    def build(self) -> None:
        pass

    def contexts(self) -> list[RetrievedContext]:
        return [chunk(name) for name in self.names]

    def search(self, question: str, n: int) -> list[ScoredContext]:
        self.asked.append(n)
        return ranking(*self.names)[:n]


def test_hybrid_reads_both_rankings_deeply_and_fuses_them(tmp_path: Path) -> None:
    corpus = CorpusChunks(tmp_path)
    sparse = Fixed(corpus, "bm25", ["a", "b", "c"])
    dense = Fixed(corpus, "dense-model", ["c", "d", "b"])
    hybrid = HybridRetriever(sparse, dense)
    assert isinstance(hybrid, Retriever) and hybrid.name == "hybrid-model"
    assert [s.context.source for s in hybrid.search("q", 2)] == ["c", "b"]
    assert sparse.asked == dense.asked == [100]  # FUSION_DEPTH, not just the 2 asked for
    assert hybrid.describe()["retriever"] == "rrf(bm25, dense-model)"


class Reverse:
    """A reranker that reverses the candidates: the reader must see its order, cut to k."""

    name = "reverse"

    def __init__(self) -> None:
        self.seen: list[list[str]] = []
        self.task = ScoringTask(self.name, self.describe(), self._score)

    def describe(self) -> dict[str, object]:
        return {"reranker": "reverse"}

    async def _score(self, item: RerankItem) -> RankedScores:
        self.seen.append([c.source or "" for c in item.candidates])
        return RankedScores([(i, float(i)) for i in range(len(item.candidates))])  # the last scores best

    async def aclose(self) -> None:
        pass


def test_a_reranker_gets_rerank_top_candidates_and_the_reader_its_top_k(tmp_path: Path) -> None:
    retriever = Fixed(CorpusChunks(tmp_path, chunk_size=500), "bm25", ["a", "b", "c", "d", "e"])
    reranker = Reverse()
    assert isinstance(reranker, Reranker)
    baseline = Baseline(retriever, reader=reader(), k=2, reranker=reranker, rerank_top=4)
    retrieved = asyncio.run(baseline.retrieve_for("q"))
    assert reranker.seen == [["a", "b", "c", "d"]]
    assert [c.source for c in retrieved.contexts] == ["d", "c"]
    assert baseline.name == "bm25-reverse-k2-chunk500-reader-1"
    assert baseline.describe()["rerank"] == {"reranker": "reverse", "top": 4}
    plain = Baseline(retriever, reader=reader(), k=2)
    assert [c.source for c in asyncio.run(plain.retrieve_for("q")).contexts] == ["a", "b"]
    assert "rerank" not in plain.describe()


def test_bm25_retriever_scores_are_bm25s_and_the_baseline_keeps_its_settings(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpus", documents=4, paragraphs=3)
    baseline = Baseline(BM25Retriever(CorpusChunks(corpus, chunk_size=300, progress=False)), reader=reader(), k=3)
    retriever = BM25Retriever(CorpusChunks(corpus, chunk_size=300, progress=False))
    scored = retriever.search("glacier harbour engineers", 3)
    assert [s.context for s in scored] == baseline.retrieve("glacier harbour engineers")
    assert [s.score for s in scored] == sorted((s.score for s in scored), reverse=True) and scored[-1].score > 0
    # The settings a stored answer was made with: the same as before retrievers had a contract.
    assert set(baseline.describe()) == {
        "retriever",
        "k",
        "chunk_size",
        "chunk_overlap",
        "length_unit",
        "reader",
        "prompt_hash",
        "system_prompt_hash",
        "corpus_index",
    }
