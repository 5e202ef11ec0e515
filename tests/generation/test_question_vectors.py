"""A build's questions embedded as their drafts arrive (`QuestionVectors`): in a thread of their own,
the same vectors as embedding them at the end, each text once, and a failure there raised by the
filter's own call, not lost."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest
from datasets import load_from_disk
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings

from qagen.config import BuildConfig
from qagen.corpus.embeddings import EmbeddingsModel
from qagen.corpus.settings import CorpusSettings
from qagen.generation import embedders
from qagen.generation.embedders import unit_vectors
from qagen.generation.pipeline import build
from qagen.generation.semantic_dedup import QuestionVectors
from qagen.llm.backends import ModelSettings
from standins.corpus import write_corpus
from standins.llm.server import StandInLLM


class _Recording(Embeddings):
    """A deterministic fake that records the texts of each call and the thread that made it."""

    def __init__(self, fail: bool = False) -> None:
        self.fake = DeterministicFakeEmbedding(size=8)
        self.calls: list[tuple[str, list[str]]] = []
        self.fail = fail

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls.append((threading.current_thread().name, list(texts)))
        if self.fail:
            raise RuntimeError("the embeddings server is down")
        return self.fake.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


class _Model(EmbeddingsModel):
    def __init__(self, embeddings: Embeddings) -> None:
        super().__init__("openai:fake-embeddings")
        self._fake = embeddings

    def embeddings(self) -> Embeddings:
        return self._fake


def _embedded_in_background(recording: _Recording, count: int) -> None:
    """Wait (up to 10 s) until the thread has embedded `count` texts: it works while the build waits."""
    deadline = time.monotonic() + 10
    while sum(len(texts) for thread, texts in recording.calls if thread == "embed-questions") < count:
        assert time.monotonic() < deadline, recording.calls
        time.sleep(0.01)


def _questions(count: int) -> dict[str, str]:
    return {f"id{n}": f"What does setting number {n} change?" for n in range(count)}


def test_offered_questions_are_embedded_in_the_background_and_the_rest_by_the_filter() -> None:
    recording = _Recording()
    vectors = QuestionVectors(_Model(recording))
    questions = _questions(2 * QuestionVectors.BATCH + 5)
    offered = list(questions.values())[: 2 * QuestionVectors.BATCH]
    for text in offered + offered[:3]:  # a text offered twice is embedded once
        vectors.offer(text)
    _embedded_in_background(recording, 2 * QuestionVectors.BATCH)
    found = vectors.of(questions)

    expected = unit_vectors(_Model(DeterministicFakeEmbedding(size=8)), list(questions.values()))
    assert list(found) == list(questions)
    np.testing.assert_allclose(np.array(list(found.values())), expected, rtol=0, atol=1e-12)
    embedded = [text for _, texts in recording.calls for text in texts]
    assert sorted(embedded) == sorted(questions.values())  # each text once
    in_background = {text for thread, texts in recording.calls if thread == "embed-questions" for text in texts}
    assert in_background == set(offered)
    # What the filter embedded itself, in its own thread, includes the texts never offered.
    by_filter = {text for thread, texts in recording.calls if thread != "embed-questions" for text in texts}
    assert set(list(questions.values())[2 * QuestionVectors.BATCH :]) <= by_filter
    assert not in_background & by_filter


def test_offers_after_the_filter_asked_start_the_thread_again() -> None:
    recording = _Recording()
    vectors = QuestionVectors(_Model(recording))
    first = _questions(3)
    assert set(vectors.of(first)) == set(first)
    second = {f"next{n}": f"Which option turns feature {n} off?" for n in range(QuestionVectors.BATCH)}
    for text in second.values():
        vectors.offer(text)
    _embedded_in_background(recording, QuestionVectors.BATCH)
    both = vectors.of({**first, **second})
    assert len(both) == len(first) + len(second)
    assert any(thread == "embed-questions" for thread, _ in recording.calls)
    assert sum(len(texts) for _, texts in recording.calls) == len(first) + len(second)


def test_a_failure_in_the_background_is_raised_by_the_filters_call() -> None:
    recording = _Recording(fail=True)
    vectors = QuestionVectors(_Model(recording))
    questions = _questions(QuestionVectors.BATCH)
    for text in questions.values():
        vectors.offer(text)
    deadline = time.monotonic() + 10
    while not recording.calls:  # the thread's attempt, which fails
        assert time.monotonic() < deadline
        time.sleep(0.01)
    with pytest.raises(RuntimeError, match="server is down"):
        vectors.of(questions)
    threads = [thread for thread, _ in recording.calls]
    assert threads[0] == "embed-questions" and threads[-1] != "embed-questions"  # the filter tried again itself


def test_a_build_offers_each_drafts_question_as_it_arrives_and_embeds_each_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The wiring in a build, through the OpenAI client against the stand-in's embeddings endpoint: every
    usable draft's question is offered by the LLM stage, and the filter's vectors embed each question once
    (in the thread or by the filter, whichever the timing gave)."""
    offered: list[str] = []
    embedded: list[str] = []
    offer, embed = QuestionVectors.offer, QuestionVectors._embed

    def offering(self: QuestionVectors, question: str) -> None:
        offered.append(question)
        offer(self, question)

    def embedding(self: QuestionVectors, texts: list[str]) -> None:
        embedded.extend(texts)
        embed(self, texts)

    monkeypatch.setattr(QuestionVectors, "offer", offering)
    monkeypatch.setattr(QuestionVectors, "_embed", embedding)
    monkeypatch.setattr(embedders, "_MODELS", {})  # a model of this name made against another server is not reused
    corpus = write_corpus(tmp_path / "corpus", documents=6, paragraphs=4)
    with StandInLLM(pass_rate=1.0) as llm:
        monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        model = ModelSettings(spec="openai:stand-in", base_url=llm.base_url)
        config = BuildConfig.model_validate(
            {
                "corpus": CorpusSettings(path=str(corpus)),
                "chunking": {"chunk_size": 400, "chunk_overlap": 40},
                "n_generations": 24,
                "seed": 3,
                "generator": model,
                "critic": model,
                "dedup_embeddings": "openai:embedder",
            }
        )
        result = build(config, tmp_path / "run", progress=False)
        embeddings_calls = sum(entry["kind"] == "embeddings" for entry in llm.log)
    drafted = {row["question"] for row in load_from_disk(str(tmp_path / "run" / "candidates")) if row["question"]}
    assert len(drafted) >= 12
    assert set(offered) == drafted
    assert sorted(embedded) == sorted(set(embedded)) and set(embedded) == drafted  # each once
    assert embeddings_calls >= 1
    assert result.summary.profile.duplicates.semantic_model == "embedder"
