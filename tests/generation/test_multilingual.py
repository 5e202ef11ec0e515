"""German, French and Chinese corpora: chunking, generation, the dataset rows, the card, BM25.

The corpora are real prose (facts about Cologne Cathedral, the Zugspitze, Mont-Saint-Michel, the
Canal du Midi, the Great Wall, the giant panda and the Yangtze), written with the typography of
each language: German umlauts and ß, French elisions with ’, guillemets and the no-break spaces
before `:`, Chinese with no spaces between words and full-width punctuation. Builds run through
the CLI against the stand-in LLM, so every text makes the round trip through HTTP and back.
"""

from __future__ import annotations

import asyncio
import codecs
import re
import unicodedata
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from datasets import load_from_disk
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

from qagen.cli.app import main
from qagen.corpus.chunk import ChunkStats, chunk_documents, make_splitter
from qagen.corpus.load.documents import CorpusReport, iter_documents
from qagen.evaluate.api import evaluate
from qagen.evaluate.config import EvalConfig
from qagen.evaluate.systems import baseline as baseline_module
from qagen.evaluate.systems.baseline import Baseline
from qagen.evaluate.systems.bundled import rag_baseline
from qagen.generation.checks.evidence import EVIDENCE_NOT_FOUND
from qagen.generation.checks.rules import FREE_CHECKS
from qagen.llm.backends import LangChainBackend
from qagen.llm.client import LLMClient, ModelSettings
from qagen.llm.prompts import load_prompt
from qagen.publish.language import detect_languages, text_language
from qagen.publish.push import push_run
from qagen.records import Document
from standins.hub.server import StandInHub
from standins.llm import replies as llm_replies
from standins.llm import routes as llm_routes
from standins.llm.server import StandInLLM

NBSP = "\u00a0"  # French puts a no-break space inside guillemets and before : ; ? !

CORPORA: dict[str, dict[str, str]] = {
    "de": {
        "koelner_dom.txt": (
            "Der Kölner Dom ist eine römisch-katholische Kirche in Köln und die Kathedrale des Erzbistums "
            "Köln. Mit dem Bau wurde im Jahr 1248 begonnen; vollendet wurde er erst 1880, mehr als sechs "
            "Jahrhunderte später.\n\n"
            "Die beiden Westtürme sind rund 157 Meter hoch. Von 1880 bis 1884 war der Dom das höchste "
            "Gebäude der Welt, bis ihn das Washington Monument übertraf.\n\n"
            "Im Chor steht der Dreikönigenschrein, ein vergoldeter Reliquienschrein aus dem späten zwölften "
            "Jahrhundert. Er soll die Gebeine der Heiligen Drei Könige enthalten, die Erzbischof Rainald von "
            "Dassel im Jahr 1164 von Mailand nach Köln bringen ließ. Der Schrein gilt als eines der "
            "bedeutendsten Werke der mittelalterlichen Goldschmiedekunst.\n\n"
            "Im Zweiten Weltkrieg wurde der Dom von vielen Fliegerbomben getroffen, stürzte aber nicht ein. "
            "Seit 1996 gehört er zum Weltkulturerbe der UNESCO.\n"
        ),
        "zugspitze.md": (
            "# Die Zugspitze\n\n"
            "Die Zugspitze ist mit 2962 Metern der höchste Berg Deutschlands. Sie liegt im "
            "Wettersteingebirge, und über ihren Gipfel verläuft die Grenze zwischen Bayern und Tirol.\n\n"
            "Auf den Gipfel führen drei Seilbahnen und eine Zahnradbahn. Die Bayerische Zugspitzbahn wurde "
            "1930 eröffnet und fährt von Garmisch-Partenkirchen bis auf das Zugspitzplatt.\n\n"
            "Am Fuß des Berges liegt der Eibsee, dessen Wasser auffallend klar und grünlich ist. Auf dem "
            "Zugspitzplatt liegen die Reste des Nördlichen Schneeferners, eines der letzten Gletscher "
            "Deutschlands.\n"
        ),
    },
    "fr": {
        "mont_saint_michel.txt": (
            "Le Mont-Saint-Michel est une commune française de la Manche, en Normandie. L’îlot rocheux se "
            "dresse au milieu d’une baie où les marées comptent parmi les plus fortes d’Europe" + NBSP + ": "
            "l’écart entre la basse mer et la pleine mer peut y dépasser quatorze mètres.\n\n"
            "Selon la tradition, l’évêque d’Avranches, saint Aubert, y consacra un premier sanctuaire à "
            "l’archange saint Michel en 708. Des moines bénédictins s’y installèrent en 966. Le monastère "
            "gothique bâti au XIIIe siècle sur le flanc nord est surnommé «" + NBSP + "la Merveille" + NBSP + "».\n\n"
            "Pendant la guerre de Cent Ans, le Mont résista à tous les assauts anglais. Après la Révolution, "
            "l’abbaye servit de prison jusqu’en 1863.\n\n"
            "Depuis 1979, le Mont-Saint-Michel et sa baie sont inscrits au patrimoine mondial de l’UNESCO. "
            "En 2014, un pont-passerelle a remplacé l’ancienne digue-route, afin que la mer puisse de "
            "nouveau entourer le Mont lors des grandes marées.\n"
        ),
        "canal_du_midi.md": (
            "# Le canal du Midi\n\n"
            "Le canal du Midi relie Toulouse à l’étang de Thau, près de la mer Méditerranée. Conçu par "
            "Pierre-Paul Riquet, il fut construit entre 1666 et 1681, sous le règne de Louis XIV.\n\n"
            "Long d’environ 240 kilomètres, il compte plus de soixante écluses. Avec le canal de Garonne, il "
            "forme le canal des Deux-Mers, qui relie l’océan Atlantique à la Méditerranée.\n\n"
            "Le canal est inscrit au patrimoine mondial de l’UNESCO depuis 1996. Riquet ne vit jamais son "
            "œuvre en service" + NBSP + ": il mourut en 1680, quelques mois avant l’inauguration.\n"
        ),
    },
    "zh": {
        "长城.txt": (
            "长城是中国古代的军事防御工程。现存的长城大部分修建于明朝，明长城东起辽宁的虎山，西至甘肃的嘉峪关，"
            "全长八千八百多公里。\n\n"
            "早在春秋战国时期，各诸侯国就开始修筑城墙。秦始皇统一六国以后，把北方各国的城墙连接起来，"
            "形成了绵延万里的长城。\n\n"
            "一九八七年，长城被列入联合国教科文组织的《世界遗产名录》。北京附近的八达岭长城是游客最多的一段。\n"
        ),
        "大熊猫.txt": (
            "大熊猫是中国特有的哺乳动物，主要生活在四川、陕西和甘肃的山区。它们的食物几乎全是竹子，"
            "一只成年大熊猫每天要花十多个小时进食。\n\n"
            "大熊猫的繁殖率很低。雌性大熊猫每年只有两三天能够受孕，刚出生的幼崽只有一百克左右，"
            "大约是母亲体重的千分之一。\n\n"
            "二〇一六年，世界自然保护联盟把大熊猫的受威胁等级从“濒危”降为“易危”，因为野生大熊猫的数量有所增长。\n"
        ),
        "长江.md": (
            "长江是中国第一长河，也是亚洲最长的河流，全长约六千三百公里。它发源于青藏高原的唐古拉山脉，"
            "流经青海、西藏、四川、云南、重庆、湖北、湖南、江西、安徽、江苏和上海，最后在上海注入东海。"
            "长江流域面积约一百八十万平方公里，约占中国陆地面积的五分之一。长江干流的通航里程有两千八百多公里，"
            "它和黄河一起被称为中国的母亲河。\n\n"
            "三峡大坝位于湖北省宜昌市，是世界上装机容量最大的水力发电站，大坝主体工程于二〇〇六年完工。"
            "长江中下游平原土地肥沃，自古以来就是重要的粮食产区，被称为“鱼米之乡”。\n"
        ),
    },
}
# Chinese says in one character what takes five in German or French: smaller chunks, so that the
# Yangtze's long first paragraph has to be cut inside a sentence.
# The Chinese files have no markdown heading on purpose: a heading-only chunk ("# 长江") gets an
# English question from the stand-in (no word of three letters to ask about), and that row would
# then rightly count as English in the language checks.
CHUNK_SIZES = {"de": 300, "fr": 300, "zh": 150}
LANGUAGE_LINE = "Write the question and the answer in the same language as the context."
STAND_IN_QUESTION = re.compile(r"^Which fact about (?P<topic>.+) is recorded under ref [0-9a-f]{10}\?$")
TOKEN = "hf_test_token"  # alice on the session `hub`
# The checks made before any critic: the prompts' rules and the evidence check (the stand-in's answer
# is sometimes a bare "." of a chunk starting with one, which holds no answer).
FREE_CHECK_REASONS = {check.reason for check in FREE_CHECKS} | {EVIDENCE_NOT_FOUND}


def write_corpus(root: Path, *languages: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for language in languages:
        for name, text in CORPORA[language].items():
            (root / name).write_text(text, encoding="utf-8")
    return root


def all_texts(*languages: str) -> dict[str, str]:
    return {name: text for language in languages for name, text in CORPORA[language].items()}


def assert_clean(text: str) -> None:
    """Text as a person wrote it: NFC, no replacement character, no UTF-8 read as a code page."""
    assert unicodedata.normalize("NFC", text) == text
    assert "\ufffd" not in text
    # UTF-8 bytes of ä, é, ’ or 中 decoded as Windows-1252 start with Ã, Â, â or ä¸/å etc.
    assert not re.search("Ã.|[Âå][\u0080-\u00bf]|â€|ä¸", text), text


# --------------------------------------------------------------------------- the corpora themselves


def test_the_corpora_are_what_they_claim() -> None:
    # Guards the fixtures: the texts are NFC, Chinese has no spaces, French has its no-break spaces.
    for text in all_texts("de", "fr", "zh").values():
        assert_clean(text)
    assert all(" " not in text for text in CORPORA["zh"].values())
    assert all(NBSP in text for text in CORPORA["fr"].values())
    assert any(len(paragraph) > CHUNK_SIZES["zh"] for paragraph in CORPORA["zh"]["长江.md"].split("\n\n"))


def test_the_qa_prompt_asks_for_the_language_of_the_context() -> None:
    prompt = load_prompt("qa_generation")
    assert LANGUAGE_LINE in prompt.text
    rendered = prompt.render(context=CORPORA["zh"]["长城.txt"], document="长城")
    assert rendered.index(LANGUAGE_LINE) < rendered.index("Context: 长城是中国古代的军事防御工程。")


# --------------------------------------------------------------------------- chunking


@pytest.mark.parametrize("language", ["de", "fr", "zh"])
def test_chunks_fit_and_point_into_their_document(language: str, tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / language, language)
    size = CHUNK_SIZES[language]
    documents = list(iter_documents(corpus, report=CorpusReport()))
    assert {doc.source: doc.text for doc in documents} == CORPORA[language]
    chunks = list(chunk_documents(documents, make_splitter(size, size // 10), ChunkStats()))
    assert len(chunks) > len(documents)  # every document was split
    covered: dict[str, set[int]] = {doc.source: set() for doc in documents}
    for chunk in chunks:
        text = CORPORA[language][chunk.source]
        assert 0 < len(chunk.text) <= size
        assert text[chunk.start_index : chunk.end_index] == chunk.text
        assert_clean(chunk.text)
        covered[chunk.source].update(range(chunk.start_index, chunk.end_index))
    for source, positions in covered.items():
        # Nothing is lost between chunks: every character but whitespace is in one.
        missing = [i for i, char in enumerate(CORPORA[language][source]) if not char.isspace() and i not in positions]
        assert missing == [], (source, missing[:5])


def test_french_no_break_spaces_stay_inside_their_chunk() -> None:
    # The splitter's word separator is " ": a no-break space glues `:` and `»` to their word, so a
    # chunk never starts with one of them, nor begins or ends with the no-break space itself.
    documents = [Document(source=source, text=text) for source, text in CORPORA["fr"].items()]
    chunks = list(chunk_documents(documents, make_splitter(60, 6), ChunkStats()))
    for chunk in chunks:
        assert not chunk.text.startswith((NBSP, ":", "»")) and not chunk.text.endswith((NBSP, "«")), chunk.text
    assert any(f"d’Europe{NBSP}:" in chunk.text for chunk in chunks)
    assert any(f"«{NBSP}la Merveille{NBSP}»" in chunk.text for chunk in chunks)


CHINESE_SENTENCE_ENDS = "。！？；"


def _starts_a_sentence(text: str, start: int) -> bool:
    # The splitter may keep a separator at the start of the next piece: skip it.
    while start < len(text) and text[start] in CHINESE_SENTENCE_ENDS:
        start += 1
    return start == 0 or text[start - 1] in CHINESE_SENTENCE_ENDS + "\n”》"


def _ends_a_sentence(text: str, end: int) -> bool:
    return (
        end == len(text) or text[end] in CHINESE_SENTENCE_ENDS + "\n" or text[end - 1] in CHINESE_SENTENCE_ENDS + "”》"
    )


def test_chinese_chunks_are_cut_between_sentences() -> None:
    text = CORPORA["zh"]["长江.md"]
    chunks = list(chunk_documents([Document(source="长江.md", text=text)], make_splitter(120, 12), ChunkStats()))
    for chunk in chunks:
        assert _starts_a_sentence(text, chunk.start_index), chunk.text[:10]
        assert _ends_a_sentence(text, chunk.end_index), chunk.text[-10:]


# --------------------------------------------------------------------------- builds through the CLI


@dataclass
class Built:
    run: Path
    corpus: Path
    texts: dict[str, str]
    prompts: list[str]
    """Every prompt text the stand-in server received while this run was built."""


@dataclass
class Builds:
    llm: StandInLLM
    runs: dict[str, Built]
    received: list[str]
    """Every prompt text the server received, also after the builds (it keeps recording)."""


def _build(llm: StandInLLM, corpus: Path, out: Path, chunk_size: int) -> None:
    args = ["build", str(corpus), "--out", str(out), "--generator-model", "openai:stand-in", "--base-url", llm.base_url]
    args += ["--chunk-size", str(chunk_size), "--chunk-overlap", str(chunk_size // 10), "--seed", "7"]
    args += ["--all-critics", "--vetting", "cookbook", "-q"]  # the rationales a 1-5 critic writes
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Builds]:
    """One run per corpus (de, fr, zh, and all three mixed), built once for the whole module."""
    received: list[str] = []
    real_make_reply = llm_replies.make_reply  # what the server calls, by its name in llm_routes

    def recording_make_reply(prompt: str, **kwargs: Any) -> Any:
        # The server's log keeps the prompt's kind, not its text; the text is what is checked here.
        received.append(prompt)
        return real_make_reply(prompt, **kwargs)

    root = tmp_path_factory.mktemp("multilingual")
    runs: dict[str, Built] = {}
    # Every critic passes every draft: the kept set is then every chunk, which is what the language
    # checks below want to see (rejections are tested elsewhere).
    with pytest.MonkeyPatch.context() as patch, StandInLLM(pass_rate=1.0) as llm:
        patch.setattr(llm_routes, "make_reply", recording_make_reply)
        for name, languages, size in (
            ("de", ("de",), CHUNK_SIZES["de"]),
            ("fr", ("fr",), CHUNK_SIZES["fr"]),
            ("zh", ("zh",), CHUNK_SIZES["zh"]),
            ("mixed", ("de", "fr", "zh"), 300),
        ):
            corpus = write_corpus(root / f"corpus-{name}", *languages)
            start = len(received)
            _build(llm, corpus, root / f"run-{name}", size)
            runs[name] = Built(root / f"run-{name}", corpus, all_texts(*languages), received[start:])
        yield Builds(llm, runs, received)


def rows(run: Path, table: str = "candidates") -> list[dict[str, Any]]:
    return list(load_from_disk(str(run / table)))


@pytest.mark.parametrize("language", ["de", "fr", "zh"])
def test_dataset_rows_keep_the_text_intact(builds: Builds, language: str) -> None:
    built = builds.runs[language]
    candidates = rows(built.run)
    assert len(candidates) > 3
    assert {row["source_doc"] for row in candidates} == set(CORPORA[language])  # non-ASCII names too
    for row in candidates:
        assert row["status"] != "failed", row["reason"]
        # Offsets point into the text as written here: nothing was re-encoded on the way.
        assert built.texts[row["source_doc"]][row["start_index"] : row["end_index"]] == row["context"]
        assert len(row["context"]) <= CHUNK_SIZES[language]
        # A draft a free check rejects (the stand-in's answer is sometimes the heading its question
        # names: `answer_in_question`) has no critic's rationale.
        checked = row["reason"] in FREE_CHECK_REASONS
        for field in ("context", "question", "answer", *(() if checked else ("groundedness_eval",))):
            assert_clean(row[field])
        # The stand-in answers with the chunk's first sentence and asks about its first words, so
        # both must come back from the server exactly as they were sent.
        assert row["answer"] in row["context"]
        match = STAND_IN_QUESTION.match(row["question"])
        assert match, row["question"]
        if match["topic"] != "this subject":  # its words when the chunk has any of 3+ letters
            assert all(word in row["context"].lower() for word in match["topic"].split())
    kept = rows(built.run, "dataset")
    assert kept and {row["id"] for row in kept} <= {row["id"] for row in candidates}


@pytest.mark.parametrize("language", ["de", "fr", "zh"])
def test_every_draft_prompt_carries_its_chunk_and_asks_for_its_language(builds: Builds, language: str) -> None:
    built = builds.runs[language]
    drafting = [prompt for prompt in built.prompts if "Factoid question:" in prompt and "Context:" in prompt]
    contexts = [row["context"] for row in rows(built.run)]
    assert len(drafting) == len(contexts)
    assert all(LANGUAGE_LINE in prompt for prompt in drafting)
    tail = load_prompt("qa_generation").render(context="\x00", document="").split("\x00")[1]
    sent = sorted(prompt.split("Context: ", 1)[1].removesuffix(tail) for prompt in drafting)
    assert sent == sorted(contexts)
    # The critics read the question as drafted, non-ASCII words included.
    for row in rows(built.run):
        critics = 0 if row["reason"] in FREE_CHECK_REASONS else 3
        assert sum(f"Question: {row['question']}" in prompt for prompt in built.prompts) == critics


@pytest.mark.parametrize("language", ["de", "fr", "zh"])
def test_detected_languages(builds: Builds, language: str) -> None:
    # The function the card uses, over the same text it reads: each kept row's question and context.
    kept = rows(builds.runs[language].run, "dataset")
    assert detect_languages(f"{row['question']}\n{row['context']}" for row in kept) == [language]


def paragraphs(language: str) -> list[str]:
    """The prose paragraphs of a corpus (headings are too short to tell a language by)."""
    return [p for text in CORPORA[language].values() for p in text.split("\n\n") if not p.startswith("#")]


@pytest.mark.parametrize("language", ["de", "zh"])
def test_every_paragraph_is_recognised(language: str) -> None:
    assert [text_language(paragraph) for paragraph in paragraphs(language)] == [language] * len(paragraphs(language))


def test_every_french_paragraph_is_recognised() -> None:
    assert [text_language(paragraph) for paragraph in paragraphs("fr")] == ["fr"] * len(paragraphs("fr"))


def card_languages(hub: StandInHub, repo: str) -> Any:
    readme = hub.repo_files(repo)["README.md"].decode("utf-8")
    return yaml.safe_load(readme.split("---")[1]).get("language")


def test_the_card_names_the_corpus_language(builds: Builds, hub: StandInHub) -> None:
    # One push is enough for the path from detection to the card's YAML (a push takes a second or
    # two); `test_detected_languages` covers each language with the same function on the same rows.
    result = push_run(builds.runs["zh"].run, f"ml-zh-{uuid.uuid4().hex[:10]}", token=TOKEN)
    assert card_languages(hub, result.repo_id) == ["zh"]
    readme = hub.repo_files(result.repo_id)["README.md"].decode("utf-8")
    assert "Language: zh." in readme


def test_the_card_of_a_mixed_corpus_names_each_language(builds: Builds, hub: StandInHub) -> None:
    run = builds.runs["mixed"].run
    kept = rows(run, "dataset")
    expected = {row_language(row) for row in kept}
    assert expected == {"de", "fr", "zh"}
    result = push_run(run, f"ml-mixed-{uuid.uuid4().hex[:10]}", token=TOKEN)
    assert set(card_languages(hub, result.repo_id)) == expected


def row_language(row: dict[str, Any]) -> str:
    return next(language for language in CORPORA if row["source_doc"] in CORPORA[language])


# --------------------------------------------------------------------------- legacy encodings


def test_latin1_and_windows1252_files_read_as_written(tmp_path: Path) -> None:
    # Old German and French files are often Latin-1 or Windows-1252 (œ, ’ and « » need the latter).
    german = CORPORA["de"]["zugspitze.md"]
    french = CORPORA["fr"]["canal_du_midi.md"]
    (tmp_path / "zugspitze.md").write_bytes(german.encode("latin-1"))
    (tmp_path / "canal.md").write_bytes(french.encode("cp1252"))
    (tmp_path / "bom.txt").write_bytes(codecs.BOM_UTF8 + CORPORA["de"]["koelner_dom.txt"].encode("utf-8"))
    texts = {doc.source: doc.text for doc in iter_documents(tmp_path, report=CorpusReport())}
    assert texts == {"zugspitze.md": german, "canal.md": french, "bom.txt": CORPORA["de"]["koelner_dom.txt"]}


def test_a_gbk_chinese_file_is_never_loaded_as_mojibake(tmp_path: Path) -> None:
    text = CORPORA["zh"]["大熊猫.txt"]
    (tmp_path / "panda.txt").write_bytes(text.encode("gbk"))
    report = CorpusReport()
    loaded = [doc.text for doc in iter_documents(tmp_path, report=report)]
    # Either read correctly, or skipped with a reason; never a text nobody wrote.
    assert loaded in ([text], [])
    if not loaded:
        assert report.skipped


# --------------------------------------------------------------------------- BM25 over Chinese


@pytest.fixture()
def fresh_bm25_memory() -> Iterator[None]:
    baseline_module._memory.clear()
    yield
    baseline_module._memory.clear()


def bm25(corpus: Path, reader: LLMClient, *, chunk_size: int, k: int) -> Baseline:
    """The bundled baseline with BM25 retrieval, as `rag_baseline` builds it for `evaluate`."""
    system = rag_baseline(corpus, chunk_size=chunk_size, k=k, progress=False).build(reader)
    assert isinstance(system, Baseline)
    return system


def no_reader() -> LLMClient:
    """A reader for tests that only retrieve (it has no reply to give)."""
    return LLMClient(LangChainBackend(GenericFakeChatModel(messages=iter([]))), ModelSettings(spec="fake:reader"))


@pytest.mark.parametrize(
    ("question", "source", "words"),
    [
        ("大熊猫每天吃什么？", "大熊猫.txt", "竹子"),
        ("三峡大坝在哪个城市？", "长江.md", "宜昌"),
        ("长城是哪一年被列入世界遗产名录的？", "长城.txt", "一九八七年"),
        ("明长城的西端在哪里", "长城.txt", "嘉峪关"),
    ],
)
def test_bm25_retrieves_chinese_text(
    fresh_bm25_memory: None, tmp_path: Path, question: str, source: str, words: str
) -> None:
    corpus = write_corpus(tmp_path / "zh", "zh")
    baseline = bm25(corpus, no_reader(), chunk_size=CHUNK_SIZES["zh"], k=3)
    hits = baseline.retrieve(question)
    assert hits and hits[0].source == source and words in hits[0].text
    for hit in hits:
        assert hit.source is not None and hit.start_index is not None and hit.end_index is not None
        assert CORPORA["zh"][hit.source][hit.start_index : hit.end_index] == hit.text


@pytest.mark.parametrize(
    ("question", "source", "words"),
    [
        ("WIE HOCH SIND DIE WESTTÜRME DES KÖLNER DOMS?", "koelner_dom.txt", "157 Meter"),
        ("Wann wurde die Bayerische Zugspitzbahn eröffnet?", "zugspitze.md", "1930"),
        ("COMBIEN D’ÉCLUSES LE CANAL COMPTE-T-IL ?", "canal_du_midi.md", "soixante écluses"),
        ("Quel monastère est surnommé la Merveille ?", "mont_saint_michel.txt", "Merveille"),
    ],
)
def test_bm25_case_folds_german_and_french(
    fresh_bm25_memory: None, tmp_path: Path, question: str, source: str, words: str
) -> None:
    corpus = write_corpus(tmp_path / "defr", "de", "fr")
    baseline = bm25(corpus, no_reader(), chunk_size=300, k=3)
    hits = baseline.retrieve(question)
    assert hits and hits[0].source == source and words in hits[0].text


def test_bm25_finds_a_decomposed_query_like_a_composed_one(fresh_bm25_memory: None, tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "de", "de")
    baseline = bm25(corpus, no_reader(), chunk_size=300, k=1)
    composed = baseline.retrieve("Westtürme Kölner Höhe")
    decomposed = baseline.retrieve(unicodedata.normalize("NFD", "Westtürme Kölner Höhe"))
    assert [hit.text for hit in decomposed] == [hit.text for hit in composed]


def test_bm25_reader_gets_the_chinese_context_intact(builds: Builds, fresh_bm25_memory: None) -> None:
    llm = builds.llm
    corpus = builds.runs["zh"].corpus
    settings = ModelSettings(spec="openai:stand-in", base_url=llm.base_url)
    before = len(llm.log)
    before_prompts = len(builds.received)

    async def ask() -> Any:
        reader = LLMClient.connect(settings)
        try:
            baseline = bm25(corpus, reader, chunk_size=CHUNK_SIZES["zh"], k=2)
            return await baseline.answer("大熊猫每天吃什么？")
        finally:
            await reader.aclose()

    output = asyncio.run(ask())
    assert not output.error and output.answer
    assert output.contexts[0].source == "大熊猫.txt"
    answers = [entry for entry in llm.log[before:] if entry["kind"] == "answer"]
    assert len(answers) == 1 and answers[0]["status_code"] == 200
    # The reader's prompt holds the retrieved chunks exactly, and the question as asked.
    assert len(builds.received) == before_prompts + 1
    prompt = builds.received[-1]
    assert "Question: 大熊猫每天吃什么？" in prompt
    assert all(context.text in prompt for context in output.contexts)


def test_evaluating_bm25_on_a_chinese_test_set(builds: Builds, fresh_bm25_memory: None, tmp_path: Path) -> None:
    built = builds.runs["zh"]
    model = ModelSettings(spec="openai:stand-in", base_url=builds.llm.base_url)

    config = EvalConfig(testset=built.run, metrics=["correctness", "retrieval"], judge=model, reader=model, k=3)
    baseline = rag_baseline(built.corpus, chunk_size=CHUNK_SIZES["zh"], k=3, progress=False)
    summary = evaluate(config, baseline, tmp_path / "eval", progress=False)
    kept = len(rows(built.run, "dataset"))
    assert summary.questions == summary.answered == kept
    # Questions drafted from Chinese chunks find their own document among the top 3.
    assert summary.metrics["hit@3"].mean == 1.0
    assert summary.metrics["correctness"].n == kept
