"""The cross-encoder reranker with a tiny randomly initialised model saved in the test (no model
ships offline): its order must be the model's own scores' order; quality is not the point."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from qagen.errors import ConfigError
from qagen.evaluate.systems.rerank import cross_encoder
from qagen.evaluate.systems.rerank.base import RerankItem, rerank
from qagen.evaluate.systems.rerank.cross_encoder import CrossEncoderReranker
from qagen.failures import Failure
from qagen.llm.task import Outcome, Request
from qagen.records import RetrievedContext
from tests.extras import require_dense


@pytest.fixture(autouse=True, scope="module")
def _needs_sentence_transformers() -> None:
    # Module-scoped, so that it runs before `tiny_model` (module-scoped too) imports torch.
    require_dense("sentence_transformers")


WORDS = "the a of who what kept moved keeper lighthouse logbook ships harbour museum archive council day".split()
QUESTION = "who kept the logbook of the ships"
TEXTS = [
    "the council moved the archive",
    "the lighthouse keeper kept a logbook",
    "ships of the harbour",
    "a museum",
    "the logbook of the ships",
]


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A one-layer BERT with one output label and random weights, saved as a cross-encoder folder."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    folder = tmp_path_factory.mktemp("models") / "tiny-cross-encoder"
    folder.mkdir()
    vocab = folder / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n", encoding="utf-8")
    torch.manual_seed(16)
    config = BertConfig(
        vocab_size=5 + len(WORDS),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
        num_labels=1,
        initializer_range=0.5,  # spread scores: random weights of the usual 0.02 score every pair alike
    )
    BertForSequenceClassification(config).save_pretrained(folder)
    BertTokenizer(str(vocab)).save_pretrained(folder)
    return folder


async def _no_chat(request: Request) -> Outcome:
    raise AssertionError("a cross-encoder makes no chat call")


def test_the_order_is_the_models_own_scores_order(tiny_model: Path) -> None:
    from sentence_transformers import CrossEncoder

    own = CrossEncoder(str(tiny_model), local_files_only=True)
    expected = [float(s) for s in own.predict([(QUESTION, t) for t in TEXTS], show_progress_bar=False)]
    assert len(set(expected)) == len(expected)  # distinct scores: the order is the model's alone
    best_first = sorted(range(len(TEXTS)), key=lambda i: -expected[i])
    assert best_first != list(range(len(TEXTS)))  # reranking changes the retrieval order

    reranker = CrossEncoderReranker(tiny_model)
    candidates = [RetrievedContext(text=text) for text in TEXTS]
    top = asyncio.run(rerank(reranker, QUESTION, candidates, 3, _no_chat))
    assert not isinstance(top, Failure)
    assert [context.text for context, _ in top] == [TEXTS[i] for i in best_first[:3]]
    assert [score for _, score in top] == pytest.approx([expected[i] for i in best_first[:3]])

    record = asyncio.run(_record(reranker, candidates))
    assert record.order == best_first and record.ranked == len(TEXTS) and record.failure is None
    assert reranker.name == "ce-tiny-cross-encoder"
    described = reranker.describe()
    assert described["reranker"] == "cross-encoder" and described["model"] == str(tiny_model.resolve())


async def _record(reranker: CrossEncoderReranker, candidates: list[RetrievedContext]) -> Any:
    from qagen.runs.executor import drive

    return await drive(reranker.task, RerankItem(QUESTION, tuple(candidates)), _no_chat)


def test_another_model_in_the_same_folder_is_another_reranker(tiny_model: Path, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "tiny-cross-encoder"
    shutil.copytree(tiny_model, copy)
    before = CrossEncoderReranker(copy)
    (copy / "vocab.txt").write_text((copy / "vocab.txt").read_text() + "extra\n")
    after = CrossEncoderReranker(copy)
    item = RerankItem(QUESTION, (RetrievedContext(text="a"),))
    assert before.task.key(item) != after.task.key(item)
    assert CrossEncoderReranker(copy).task.key(item) == after.task.key(item)


def test_a_missing_folder_says_what_to_give(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="No cross-encoder model folder at"):
        CrossEncoderReranker(tmp_path / "nowhere")


def test_without_sentence_transformers_the_error_names_the_extra(
    tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_find_spec = cross_encoder.importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> Any:
        return None if name == "sentence_transformers" else real_find_spec(name, *args)

    monkeypatch.setattr(cross_encoder.importlib.util, "find_spec", find_spec)
    with pytest.raises(ConfigError, match=r'needs sentence-transformers: pip install "qagen\[dense\]"'):
        CrossEncoderReranker(tiny_model)
