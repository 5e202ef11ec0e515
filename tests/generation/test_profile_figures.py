"""A build's profile against independent computations: coverage by plain counting over the rows
and chunks, every row's BM25 rank by a BM25 written out here (not bm25s), its copied share by plain
counting; every document of a 30-document corpus gets a question before any gets a second; and
duplicates in other words caught with the dense extra, or the lexical rule said to be used alone."""

from __future__ import annotations

import importlib.util
import math
import re
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from datasets import load_from_disk

from qagen.config import BuildConfig
from qagen.corpus.settings import CorpusSettings
from qagen.generation.checks.words import stopwords
from qagen.generation.pipeline import build
from qagen.llm.backends import ModelSettings
from qagen.llm.untrusted import neutralize
from qagen.runs.rundir import RunDir
from standins.corpus import write_corpus
from standins.llm.replies import recorded_key
from standins.llm.server import StandInLLM
from tests.generation.test_semantic_dedup import DIFFERENT, PARAPHRASES, require_dense


def _decision(row: dict[str, Any], check: str) -> dict[str, Any] | None:
    """A check's decision in a row: its own columns (the cookbook's three), else its entry in `extra_critics`."""
    if f"{check}_passed" in row:
        passed, measurement, score = (row[f"{check}_{name}"] for name in ("passed", "measurement", "score"))
        return None if passed is None else {"passed": passed, "measurement": measurement, "score": score}
    found = next((verdict for verdict in row["extra_critics"] if verdict["name"] == check), None)
    return None if found is None or found["passed"] is None else found


def _bin(kind: str, decision: dict[str, Any]) -> str:
    measurement = decision["measurement"]
    if measurement is None:
        return "written yes" if decision["score"] == 5 else "written no"
    return str(int(measurement)) if kind == "rating" else f"{int(measurement * 10) / 10:.1f}"


def _config(corpus: Path, llm: StandInLLM, **changes: Any) -> BuildConfig:
    model = ModelSettings(spec="openai:stand-in", base_url=llm.base_url)
    settings: dict[str, Any] = {
        "corpus": CorpusSettings(path=str(corpus)), "chunking": {"chunk_size": 400, "chunk_overlap": 40},
        "seed": 9, "generator": model, "critic": model, "dedup_embeddings": None,
    }  # fmt: skip
    return BuildConfig.model_validate({**settings, **changes})


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.casefold())


def _bm25_rank(chunks: list[list[str]], query: list[str], own: int, k1: float = 1.5, b: float = 0.75) -> int:
    """Lucene's BM25 (bm25s' `lucene` method and parameters), written out; ties in the chunk's favour."""
    n, average = len(chunks), sum(map(len, chunks)) / len(chunks)
    frequency = Counter(word for chunk in chunks for word in set(chunk))
    query = [word for word in query if frequency[word]]
    scores = []
    for words in chunks:
        counts = Counter(words)
        score = 0.0
        for word in query:
            idf = math.log(1 + (n - frequency[word] + 0.5) / (frequency[word] + 0.5))
            tf = counts[word]
            score += idf * tf / (tf + k1 * (1 - b + b * len(words) / average))
        scores.append(score)
    return 1 + sum(1 for score in scores if score > scores[own] * (1 + 1e-6))


def test_thirty_documents_each_get_a_question_before_any_gets_a_second_and_the_figures_hold(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpus", documents=30, paragraphs=3)
    with StandInLLM() as llm:
        result = build(_config(corpus, llm, n_generations=30), tmp_path / "run", progress=False)
    candidates = list(load_from_disk(str(tmp_path / "run" / "candidates")))
    kept = list(load_from_disk(str(tmp_path / "run" / "dataset")))
    chunks = list(RunDir(tmp_path / "run").iter_chunks())
    per_document = Counter(chunk.source for chunk in chunks)
    assert len(per_document) == 30 and max(per_document.values()) > 1  # documents have several chunks
    assert Counter(row["source_doc"] for row in candidates) == dict.fromkeys(per_document, 1)

    profile = result.summary.model_dump(mode="json")["profile"]
    coverage = profile["coverage"]
    assert coverage["documents"] == 30 and coverage["chunks"] == len(chunks)
    assert coverage["documents_sampled"] == 30 and coverage["chunks_sampled"] == 30
    assert coverage["documents_with_kept"] == len({row["source_doc"] for row in kept}) > 0
    assert coverage["chunks_with_kept"] == len({row["chunk_id"] for row in kept})
    assert coverage["kept_per_document"]["0"] == 30 - len({row["source_doc"] for row in kept})
    assert profile["question_types"] == {"factoid": len(kept)}

    # Easiness, row by row, against the independent computations.
    tokenised = [_words(chunk.text) for chunk in chunks]
    position = {chunk.id: index for index, chunk in enumerate(chunks)}
    text_of = {chunk.id: chunk.text for chunk in chunks}
    drop = stopwords()
    ranked = 0
    for row in candidates:
        if row["question"] is None or row["bm25_rank"] is None:
            continue
        ranked += 1
        expected = _bm25_rank(tokenised, _words(row["question"]), position[row["chunk_id"]])
        assert row["bm25_rank"] == expected, row["question"]
        content = {word for word in _words(row["question"]) if word not in drop}
        chunk_words = set(_words(text_of[row["chunk_id"]]))
        assert row["copied_share"] == round(len(content & chunk_words) / len(content), 4)
    assert ranked >= 25
    easiness = profile["easiness"]
    ranks = [row["bm25_rank"] for row in kept]
    assert easiness["ranked_first"] == sum(1 for rank in ranks if rank == 1)
    assert easiness["bm25_rank"]["count"] == len(ranks)
    assert easiness["bm25_rank"]["median"] == pytest.approx(statistics.median(ranks))
    assert sum(easiness["copied_share_bins"].values()) == len(kept)
    # Each check's measurements over the drafts it decided, counted from the rows.
    assert profile["checks_measured"]
    for check, measured in profile["checks_measured"].items():
        decisions = [found for row in candidates if (found := _decision(row, check)) is not None]
        assert measured["bins"] == dict(Counter(_bin(measured["kind"], decision) for decision in decisions))
        assert (measured["passed"], measured["rejected"]) == (
            sum(1 for decision in decisions if decision["passed"]),
            sum(1 for decision in decisions if not decision["passed"]),
        )


def _paraphrase_corpus(root: Path) -> tuple[Path, dict[str, str], list[str]]:
    """One document per question (the paraphrase pairs, then questions on the same topics that ask
    other things), and the generator's reply to each, recorded."""
    questions = [q for pair in PARAPHRASES for q in pair] + [other for _, other in DIFFERENT]
    root.mkdir()
    replies: dict[str, str] = {}
    for number, question in enumerate(questions):
        text = f"Git note {number}: the answer to this note is written in full here, number {number}."
        (root / f"note{number:02d}.txt").write_text(text, encoding="utf-8")
        replies[recorded_key(neutralize(text))] = f"Factoid question: {question}\nAnswer: {text}\nEvidence: {text}"
    return root, replies, questions


def test_duplicates_in_other_words_are_caught_with_the_dense_extra(tmp_path: Path) -> None:
    require_dense()
    corpus, replies, questions = _paraphrase_corpus(tmp_path / "corpus")
    with StandInLLM(pass_rate=1.0) as llm:
        llm.configure(recorded_drafts=replies)
        result = build(_config(corpus, llm, dedup_embeddings="local"), tmp_path / "run", progress=False)
    candidates = list(load_from_disk(str(tmp_path / "run" / "candidates")))
    by_question = {row["question"]: row for row in candidates}
    assert set(by_question) == set(questions)
    caught = 0
    for first, second in PARAPHRASES:
        rows = sorted((by_question[first], by_question[second]), key=lambda row: candidates.index(row))
        if rows[1]["reason"].startswith("same_meaning_as:"):
            caught += 1
            assert rows[1]["reason"] == f"same_meaning_as:{rows[0]['id']}" and rows[0]["status"] == "kept"
    assert caught >= 7  # what the bundled model separates at the default threshold (test_semantic_dedup.py)
    assert all(by_question[other]["status"] == "kept" for _, other in DIFFERENT)
    funnel, duplicates = (
        result.summary.model_dump(mode="json")["funnel"],
        result.summary.model_dump(mode="json")["profile"]["duplicates"],
    )
    assert funnel["semantic_duplicates"] == duplicates["semantic"] == caught
    assert duplicates["semantic_model"] == "all-MiniLM-L6-v2" and duplicates["lexical_only_because"] is None


def test_without_the_dense_extra_the_build_says_it_used_the_lexical_rule_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "sentence_transformers" else real(name, *a)
    )
    corpus, replies, _ = _paraphrase_corpus(tmp_path / "corpus")
    with StandInLLM(pass_rate=1.0) as llm:
        llm.configure(recorded_drafts=replies)
        result = build(_config(corpus, llm, dedup_embeddings="local"), tmp_path / "run", progress=False)
    said = capsys.readouterr().err
    assert said.count("the lexical rule only") == 1
    # Without the extra at all, the other missing modules are named after it.
    assert "the dense extra is not installed (sentence_transformers" in said
    duplicates = result.summary.model_dump(mode="json")["profile"]["duplicates"]
    assert duplicates["semantic_model"] is None and "dense extra" in duplicates["lexical_only_because"]
    assert result.summary.model_dump(mode="json")["funnel"]["semantic_duplicates"] == 0
    assert result.summary.model_dump(mode="json")["funnel"]["kept"] == len(PARAPHRASES) * 2 + len(
        DIFFERENT
    )  # no lexical duplicate among them
