"""The bundled BM25 baseline: tokenizer, retrieval, offsets, caching, and the reader end to end."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from qagen.corpus.bm25_index import BM25Index, tokenize
from qagen.corpus.load.documents import CorpusReport, iter_documents
from qagen.errors import ConfigError, CorpusError
from qagen.evaluate.systems import baseline as baseline_module
from qagen.evaluate.systems import retrievers as retrievers_module
from qagen.evaluate.systems.baseline import Baseline, build_context
from qagen.evaluate.systems.bundled import rag_baseline
from qagen.evaluate.systems.protocol import RagSystem
from qagen.evaluate.systems.retrievers import BM25Retriever
from qagen.llm.backends import LangChainBackend
from qagen.llm.client import LLMClient, ModelSettings
from qagen.llm.prompts import load_prompt
from qagen.llm.task import Outcome, Request
from qagen.records import RetrievedContext
from standins.corpus import write_corpus
from standins.llm.outcomes import first_sentence
from standins.llm.server import StandInLLM

KEYWORD_DOC = (
    "The lighthouse keeper kept a logbook of passing ships.\n\n"
    "In the spring the xylophonist from the northern harbour played for the workers every evening.\n\n"
    "The council later moved the archive to the museum."
)


@pytest.fixture(autouse=True)
def _fresh_memory() -> Iterator[None]:
    """Each test builds its own index: nothing carried over in this process's index cache."""
    baseline_module._memory.clear()
    yield
    baseline_module._memory.clear()


class RecordingClient(LLMClient):
    """An LLMClient that remembers every prompt it was asked to complete."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.prompts: list[tuple[str, str | None]] = []

    async def complete(self, request: Request) -> Outcome:
        system = next((m.content for m in request if m.role == "system"), None)
        self.prompts.append((request[-1].content, system))
        return await super().complete(request)


def fake_reader(replies: list[str] | None = None) -> RecordingClient:
    messages = iter([AIMessage(content=reply) for reply in (replies or ["A fake answer."] * 20)])
    return RecordingClient(
        LangChainBackend(GenericFakeChatModel(messages=messages)), ModelSettings(spec="fake:reader-1")
    )


def keyword_corpus(tmp_path: Path) -> Path:
    root = write_corpus(tmp_path / "corpus", documents=12, paragraphs=4)
    (root / "zz keyword.md").write_text(KEYWORD_DOC, encoding="utf-8")
    return root


def document_texts(corpus: Path) -> dict[str, str]:
    return {doc.source: doc.text for doc in iter_documents(corpus, report=CorpusReport())}


def bm25(corpus: Path, *, reader: LLMClient, **options: Any) -> Baseline:
    """The bundled baseline with BM25 retrieval, as `rag_baseline` builds it for `evaluate`."""
    system = rag_baseline(corpus, **options).build(reader)
    assert isinstance(system, Baseline) and isinstance(system.retriever, BM25Retriever)
    return system


def bm25_index(baseline: Baseline) -> BM25Index:
    """The baseline's BM25 index: from memory, else from its `index_dir`, else built now."""
    assert isinstance(baseline.retriever, BM25Retriever)
    return baseline.retriever.index()


def cache_key(baseline: Baseline) -> str:
    assert isinstance(baseline.retriever, BM25Retriever)
    return baseline.retriever.cache_key()


# --------------------------------------------------------------------------- pieces


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("What is BM25?", ["what", "is", "bm25"]),
        ("max_retries=3, Über-STRASSE Straße", ["max_retries", "3", "über", "strasse", "strasse"]),
        ("长城在哪里？", ["长", "城", "在", "哪", "里"]),
        ("Python の関数", ["python", "の", "関", "数"]),
        ("한국어 문장", ["한국어", "문장"]),
        ("... --- !!!", []),
    ],
)
def test_tokenize(text: str, tokens: list[str]) -> None:
    assert tokenize(text) == tokens


def test_build_context_is_the_notebooks() -> None:
    docs = ["first doc", "second doc"]
    notebook = "\nExtracted documents:\n"
    notebook += "".join([f"Document {i!s}:::\n" + doc for i, doc in enumerate(docs)])
    assert (
        build_context(docs) == notebook == "\nExtracted documents:\nDocument 0:::\nfirst docDocument 1:::\nsecond doc"
    )


def test_prompts_render() -> None:
    prompt = load_prompt("rag_answer").render(context=build_context(["x {y} z"]), question="Why?")
    assert prompt.startswith("Context:\n\nExtracted documents:\nDocument 0:::\nx {y} z\n---\n")
    assert prompt.endswith("Now here is the question you need to answer.\n\nQuestion: Why?\n")
    assert load_prompt("rag_answer_system").variables == frozenset()


def test_settings_name_and_default_overlap(tmp_path: Path) -> None:
    baseline = bm25(tmp_path, reader=fake_reader())
    assert baseline.chunk_overlap == 200 and baseline.k == 7
    assert baseline.name == "bm25-k7-chunk2000-reader-1"
    assert isinstance(baseline, RagSystem)
    assert bm25(tmp_path, reader=fake_reader(), chunk_size=500).chunk_overlap == 50
    with pytest.raises(ConfigError, match=r"^`k` must be at least 1, got 0\.$"):
        bm25(tmp_path, reader=fake_reader(), k=0)
    with pytest.raises(ConfigError, match="`chunk_overlap` must be at least 0"):
        bm25(tmp_path, reader=fake_reader(), chunk_size=100, chunk_overlap=100)


# --------------------------------------------------------------------------- retrieval


def test_chunk_with_a_unique_keyword_ranks_first(tmp_path: Path) -> None:
    corpus = keyword_corpus(tmp_path)
    baseline = bm25(corpus, reader=fake_reader(), chunk_size=400, progress=False)
    contexts = baseline.retrieve("What did the xylophonist play?")
    assert 1 <= len(contexts) <= 7
    assert "xylophonist" in contexts[0].text and contexts[0].source == "zz keyword.md"
    assert all("xylophonist" not in c.text for c in contexts[1:])


def test_offsets_point_into_the_source_documents(tmp_path: Path) -> None:
    corpus = keyword_corpus(tmp_path)
    texts = document_texts(corpus)
    baseline = bm25(corpus, reader=fake_reader(), chunk_size=400, k=20, progress=False)
    contexts = baseline.retrieve("Which glacier report was recorded by engineers in the harbour?")
    assert len(contexts) == 20
    for context in contexts:
        assert context.source is not None and context.start_index is not None and context.end_index is not None
        assert texts[context.source][context.start_index : context.end_index] == context.text


def test_results_are_deterministic_and_ranked(tmp_path: Path) -> None:
    corpus = keyword_corpus(tmp_path)
    first = bm25(corpus, reader=fake_reader(), chunk_size=400, progress=False)
    index = bm25_index(first)
    question = "the engineers measured the volcano"
    assert first.retrieve(question) == index.search(question, 7)
    scores = index.retriever.get_scores_from_ids(index.retriever.get_tokens_ids(tokenize(question)))
    ranked = [index.contexts.index(c) for c in first.retrieve(question)]
    assert [scores[i] for i in ranked] == sorted((scores[i] for i in ranked), reverse=True)


def test_question_sharing_no_word_retrieves_nothing(tmp_path: Path) -> None:
    baseline = bm25(keyword_corpus(tmp_path), reader=fake_reader(), chunk_size=400, progress=False)
    assert baseline.retrieve("Zzyzx qwerty?") == []
    assert baseline.retrieve("???") == []


def test_chinese_corpus(tmp_path: Path) -> None:
    corpus = tmp_path / "zh"
    corpus.mkdir()
    documents = {
        "长城.txt": "长城是中国古代的军事防御工程。它东起山海关，西至嘉峪关，全长两万多公里。",
        "熊猫.txt": "大熊猫生活在四川的山区竹林里。它们每天要吃很多竹子，是中国的国宝。",
        "茶.txt": "中国是茶的故乡。绿茶、红茶和乌龙茶都很有名，龙井茶产于杭州西湖。",
        "丝绸.txt": "丝绸之路连接了古代中国与西方。商人沿着这条路运送丝绸、瓷器和香料。",
    }
    for name, text in documents.items():
        (corpus / name).write_text(text, encoding="utf-8")
    baseline = bm25(corpus, reader=fake_reader(), chunk_size=200, k=2, progress=False)
    assert baseline.retrieve("大熊猫吃什么？")[0].source == "熊猫.txt"
    assert baseline.retrieve("龙井茶产于哪里？")[0].source == "茶.txt"
    top = baseline.retrieve("嘉峪关在长城的哪一端？")[0]
    assert top.source == "长城.txt" and top.start_index == 0 and top.text == documents["长城.txt"]


def test_empty_corpus_is_a_clear_error(tmp_path: Path) -> None:
    corpus = tmp_path / "only-punctuation"
    corpus.mkdir()
    (corpus / "a.txt").write_text("... --- !!!", encoding="utf-8")
    with pytest.raises(CorpusError, match="no words to index"):
        bm25(corpus, reader=fake_reader(), progress=False).build_index()
    with pytest.raises(CorpusError, match="not found"):
        bm25(tmp_path / "missing", reader=fake_reader(), progress=False).build_index()


# --------------------------------------------------------------------------- caching


def test_index_is_built_once_per_corpus_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    corpus = keyword_corpus(tmp_path)
    built: list[int] = []
    real = retrievers_module.index_chunks

    def counting(*args: Any, **kwargs: Any) -> Any:
        built.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(retrievers_module, "index_chunks", counting)
    one = bm25(corpus, reader=fake_reader(), chunk_size=400, progress=False)
    two = bm25(corpus, reader=fake_reader(), chunk_size=400, k=3, progress=False)
    assert bm25_index(one) is bm25_index(two)
    assert len(built) == 1
    bm25(corpus, reader=fake_reader(), chunk_size=300, progress=False).build_index()
    assert len(built) == 2


def test_index_on_disk_is_reused_until_the_corpus_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    corpus = keyword_corpus(tmp_path)
    index_dir = tmp_path / "indexes"
    question = "What did the xylophonist play?"
    first = bm25(corpus, reader=fake_reader(), chunk_size=400, index_dir=index_dir, progress=False)
    expected = first.retrieve(question)
    [saved] = list(index_dir.glob("[!.]*"))  # not .locks
    first_key = cache_key(first)
    assert json.loads((saved / "qagen_index.json").read_text())["key"] == first_key

    baseline_module._memory.clear()

    def no_build(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the index should have been loaded from disk")

    monkeypatch.setattr(retrievers_module, "index_chunks", no_build)
    again = bm25(corpus, reader=fake_reader(), chunk_size=400, index_dir=index_dir, progress=False)
    assert again.retrieve(question) == expected

    monkeypatch.undo()
    baseline_module._memory.clear()
    (corpus / "zz keyword.md").write_text(KEYWORD_DOC + "\n\nA new paragraph about a xylophonist's drum.", "utf-8")
    changed = bm25(corpus, reader=fake_reader(), chunk_size=400, index_dir=index_dir, progress=False)
    assert cache_key(changed) != first_key
    assert "drum" in changed.retrieve("drum")[0].text
    assert again.retrieve("drum") == []  # the instance built before the change keeps its index
    # The index of the corpus as it was can never be used again: it is replaced, not kept beside.
    [replaced] = list(index_dir.glob("[!.]*"))  # not .locks
    assert json.loads((replaced / "qagen_index.json").read_text())["key"] == cache_key(changed)
    # Other chunking is another index of the same corpus, still valid: kept.
    bm25(corpus, reader=fake_reader(), chunk_size=300, index_dir=index_dir, progress=False).build_index()
    assert len(list(index_dir.glob("[!.]*"))) == 2  # not .locks


def test_damaged_index_on_disk_is_rebuilt(tmp_path: Path) -> None:
    corpus = keyword_corpus(tmp_path)
    index_dir = tmp_path / "indexes"
    bm25(corpus, reader=fake_reader(), chunk_size=400, index_dir=index_dir, progress=False).build_index()
    [saved] = list(index_dir.glob("[!.]*"))  # not .locks
    (saved / "contexts.jsonl").write_text('{"text": "half a line', encoding="utf-8")
    baseline_module._memory.clear()
    rebuilt = bm25(corpus, reader=fake_reader(), chunk_size=400, index_dir=index_dir, progress=False)
    assert "xylophonist" in rebuilt.retrieve("xylophonist")[0].text


# --------------------------------------------------------------------------- answering


def test_answer_sends_the_notebook_prompt_with_the_system_part(tmp_path: Path) -> None:
    reader = fake_reader(["The xylophonist played for the workers (Document 0)."])
    baseline = bm25(keyword_corpus(tmp_path), reader=reader, chunk_size=400, k=3, progress=False)
    output = asyncio.run(baseline.answer("What did the xylophonist play?"))
    assert output.answer == "The xylophonist played for the workers (Document 0)." and output.error == ""
    [(prompt, system)] = reader.prompts
    expected_context = build_context(c.text for c in output.contexts)
    assert prompt == load_prompt("rag_answer").render(
        context=expected_context, question="What did the xylophonist play?"
    )
    assert system is not None and system.startswith("Using the information contained in the context,")


def test_end_to_end_with_the_stand_in_llm(tmp_path: Path) -> None:
    corpus = keyword_corpus(tmp_path)
    questions = ["What did the xylophonist play?", "Where was the archive moved?", "Zzyzx qwerty?"]

    async def answer_all(server: StandInLLM) -> list[Any]:
        settings = ModelSettings(spec="openai:stand-in", base_url=server.base_url)
        reader = LLMClient.connect(settings)
        baseline = bm25(corpus, reader=reader, chunk_size=400, progress=False)
        try:
            return list(await asyncio.gather(*(baseline.answer(q) for q in questions)))
        finally:
            await reader.aclose()

    with StandInLLM() as server:
        keyword, archive, nothing = asyncio.run(answer_all(server))
    # The stand-in answers a RAG prompt with the first sentence of Document 0.
    assert keyword.error == "" and keyword.answer == first_sentence(keyword.contexts[0].text)
    assert "xylophonist" in keyword.contexts[0].text
    assert keyword.usage.input_tokens > 0
    assert archive.answer and archive.contexts
    assert nothing.contexts == [] and nothing.answer  # the reader is still asked, with no documents


def test_failed_reader_call_keeps_the_contexts(tmp_path: Path) -> None:
    corpus = keyword_corpus(tmp_path)

    async def answer(server: StandInLLM) -> Any:
        settings = ModelSettings(spec="openai:stand-in", base_url=server.base_url, max_retries=0)
        reader = LLMClient.connect(settings)
        try:
            return await bm25(corpus, reader=reader, chunk_size=400, progress=False).answer("xylophonist")
        finally:
            await reader.aclose()

    with StandInLLM(fault_rate=1.0, fault_kinds=["500"]) as server:
        output = asyncio.run(answer(server))
    assert output.answer is None and output.error == "reader_failed: server_error"
    assert output.contexts and "xylophonist" in output.contexts[0].text


def test_empty_reply_is_a_failure(tmp_path: Path) -> None:
    baseline = bm25(keyword_corpus(tmp_path), reader=fake_reader(["   "]), chunk_size=400, progress=False)
    output = asyncio.run(baseline.answer("xylophonist"))
    assert output.answer is None and output.error == "reader_failed: empty_reply"
    assert output.contexts and isinstance(output.contexts[0], RetrievedContext)
