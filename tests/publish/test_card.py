"""The dataset card and the language rule, without a Hub."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from qagen.publish.card import (
    EMBEDDINGS_SETTINGS,
    NOT_PUBLISHED,
    CardContent,
    PromptFile,
    configs_metadata,
    is_qagen_card,
    make_card,
    public_summary,
    size_category,
)
from qagen.publish.language import detect_languages, text_language

SUMMARY: dict[str, Any] = {
    "qagen_version": "0.1.0",
    "corpus": {
        "documents": 41,
        "skipped": 3,
        "skipped_by_reason": {"empty": 2, "binary": 1},
        "chunks": 512,
        "duplicate_chunks": 7,
        "characters": 900000,
    },
    "funnel": {
        "sampled": 200,
        "drafted": 193,
        "generation_failed": {"parse_failure": 5, "refusal": 2},
        "critique_failed": {"groundedness:parse_failure": 4},
        "rejected": 61,
        "rejected_by": {"groundedness": 38, "relevance": 17, "standalone": 12},
        "critic_calls_skipped": 30,
        "duplicates": 9,
        "kept": 119,
    },
    "thresholds": {"groundedness": 4, "relevance": 3, "standalone": 4},
    "models": {"generator": "openai:gpt-4o-mini", "critic": "openai:gpt-4o"},
    "prompts": {"qa_generation": "5550cb2d690b", "critique_groundedness": "7e6c78127d18"},
    "usage": {"generation": {"model": "openai:gpt-4o-mini", "calls": 200, "input_tokens": 9, "output_tokens": 8}},
    "settings": {
        "corpus": {"path": "/home/alice/acme-merger/docs", "hf_dataset": None, "split": "train"},
        "chunking": {"chunk_size": 2000, "chunk_overlap": 200, "length_unit": "characters", "encoding": "x"},
        "n_generations": 200,
        "seed": 42,
        "generator": {"spec": "openai:gpt-4o-mini", "base_url": "http://bob:pw@llm.corp.internal/v1"},
        "critic": {"spec": "openai:gpt-4o", "base_url": None, "temperature": 0.0},
        "audience": "support engineers",
        "all_critics": False,
        "dedup_threshold": 0.9,
    },
}


def content(**changes: Any) -> CardContent:
    values: dict[str, Any] = {
        "repo_id": "alice/acme-qa",
        "summary": public_summary(SUMMARY),
        "kept_rows": 119,
        "candidate_rows": 200,
        "languages": ["en"],
        "license": "unknown",
        "prompts": [
            PromptFile("qa_generation", "5550cb2d690b", "prompts/qa_generation.txt"),
            PromptFile("critique_groundedness", "7e6c78127d18", None),
        ],
    }
    values.update(changes)
    return CardContent(**values)


def split_card(text: str) -> tuple[dict[str, Any], str]:
    _, front, body = text.split("---", 2)
    data = yaml.safe_load(front)
    assert isinstance(data, dict)
    return data, body


def test_metadata_has_what_the_hub_indexes() -> None:
    meta, _ = split_card(str(make_card(content())))
    assert meta == {
        "language": ["en"],
        "license": "unknown",
        "size_categories": ["n<1K"],
        "task_categories": ["question-answering"],
        "pretty_name": "acme-qa",
        "tags": ["synthetic", "rag-evaluation", "qagen"],
        "configs": configs_metadata(),
    }
    assert is_qagen_card(meta)


def test_unclear_language_is_left_out() -> None:
    meta, body = split_card(str(make_card(content(languages=[]))))
    assert "language" not in meta
    assert "Language: not stated" in body


def test_body_has_the_funnel_models_settings_prompts_and_usage() -> None:
    card = make_card(content())
    _, body = split_card(str(card))
    for row in [
        "| documents | 41 |",
        "| inputs skipped | 3 (empty: 2, binary: 1) |",
        "| chunks | 512 |",
        "| identical chunks dropped | 7 |",
        "| sampled chunks | 200 |",
        "| drafted | 193 |",
        "| generation failed | 7 (parse_failure: 5, refusal: 2) |",
        "| critique failed | 4 (groundedness:parse_failure: 4) |",
        "| rejected by the critics | 61 |",
        "| rejected by groundedness | 38 |",
        "| rejected by relevance | 17 |",
        "| rejected by standalone | 12 |",
        "| near-duplicates dropped | 9 |",
        "| **kept** | **119** |",
        "| chunking | 2000 characters, overlap 200 |",
        "| sampling | 200 chunks, spread across documents |",
        "| seed | 42 |",
        "| thresholds (keep when every 1-5 rating is at least) | groundedness 4, relevance 3, standalone 4 |",
        "| relevance audience | support engineers |",
        "| `default` (split `train`) | 119 | the kept questions: the test set |",
        "| `qa_generation` | `5550cb2d690b` | [prompts/qa_generation.txt](prompts/qa_generation.txt) |",
    ]:
        assert row in body, row
    assert "| `critique_groundedness` | `7e6c78127d18` | not published" in body
    assert "Generator (drafts): `openai:gpt-4o-mini`" in body
    assert "Critics (ratings): `openai:gpt-4o` (temperature 0.0)" in body
    assert "generation: 200 calls" in body
    assert 'load_dataset("alice/acme-qa", split="train")' in body
    assert 'load_dataset("alice/acme-qa", "candidates", split="train")' in body
    assert "qagen evaluate alice/acme-qa --baseline bm25 --corpus PATH --out eval" in body
    assert "Built with qagen 0.1.0" in body


def test_the_card_of_a_build_to_a_target_size_says_the_target_and_what_it_took() -> None:
    summary = copy.deepcopy(SUMMARY)
    summary["settings"] |= {"n_generations": None, "target": 119}
    summary["funnel"]["over_target"] = 6
    summary["target"] = {"target": 119, "by_type": {"factoid": 119}, "max_drafts": 476, "drafts": 200, "rounds": 3,
                         "kept": 119}  # fmt: skip
    _, body = split_card(str(make_card(content(summary=public_summary(summary)))))
    for row in [
        "| questions asked for (target) | 119 (200 drafts in 3 rounds) |",
        "| passed, beyond the target | 6 |",
        "| sampling | 200 chunks, spread across documents, for 119 questions |",
    ]:
        assert row in body, row
    _, without = split_card(str(make_card(content())))
    assert "target" not in without


def test_server_address_and_corpus_path_are_not_published() -> None:
    public = public_summary(SUMMARY)
    assert public["settings"]["generator"]["base_url"] == "(not published)"
    assert public["settings"]["critic"]["base_url"] is None  # unset stays unset
    assert public["settings"]["corpus"]["path"] == "(not published)"
    assert SUMMARY["settings"]["corpus"]["path"] == "/home/alice/acme-merger/docs"  # input untouched
    text = str(make_card(content()))
    for leak in ("llm.corp.internal", "bob:pw", "acme-merger"):
        assert leak not in text
    assert "address is not published" in text


@pytest.mark.parametrize("key", EMBEDDINGS_SETTINGS)
def test_a_local_embeddings_folder_is_not_published(key: str) -> None:
    for spec, shown in (
        ("local", "local"), ("openai:text-embedding-3-small", "openai:text-embedding-3-small"),
        ("/home/alice/models/minilm", NOT_PUBLISHED), ("local:/home/alice/m", NOT_PUBLISHED),
        ("local:models/minilm", NOT_PUBLISHED), ("C:\\models\\minilm", NOT_PUBLISHED), (None, None),
    ):  # fmt: skip
        summary = {**SUMMARY, "settings": {**SUMMARY["settings"], key: spec}}
        assert public_summary(summary)["settings"][key] == shown, spec


def test_the_card_says_how_multi_hop_passages_were_paired() -> None:
    mixed = {**SUMMARY["settings"], "question_types": {"factoid": 80, "multi_hop": 20}}
    for pairing, said in (
        (None, "| rare shared terms |"),
        ("local", "| rare shared terms, the closest in meaning by `local` |"),
    ):
        summary = {**SUMMARY, "settings": {**mixed, "pair_embeddings": pairing}}
        assert f"| multi-hop passages paired by {said}" in str(make_card(content(summary=summary)))
    assert "multi-hop passages paired by" not in str(make_card(content()))  # factoids alone: no pairs


def test_secrets_in_free_text_are_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-live-0123456789abcdef")
    summary = copy.deepcopy(SUMMARY)
    summary["settings"]["audience"] = "engineers (key sk-live-0123456789abcdef, token hf_abcdefghijklmnop)"
    text = str(make_card(content(summary=public_summary(summary))))
    assert "sk-live-0123456789abcdef" not in text and "hf_abcdefghijklmnop" not in text
    assert "engineers (key ***" in text


def test_revision_in_the_snippets() -> None:
    _, body = split_card(str(make_card(content(revision="v2"))))
    assert 'load_dataset("alice/acme-qa", split="train", revision="v2")' in body


@pytest.mark.parametrize(
    ("rows", "label"),
    [(0, "n<1K"), (999, "n<1K"), (1000, "1K<n<10K"), (99_999, "10K<n<100K"), (100_000, "100K<n<1M"), (10**9, "n>1B")],
)
def test_size_categories(rows: int, label: str) -> None:
    assert size_category(rows) == label


@pytest.mark.parametrize(
    ("card_data", "ours"),
    [
        ({"tags": ["synthetic", "qagen"]}, True),
        ({"tags": "qagen"}, True),
        ({"tags": ["synthetic"], "license": "mit"}, False),
        ({}, False),
        (None, False),
    ],
)
def test_ownership_marker(card_data: dict[str, Any] | None, ours: bool) -> None:
    assert is_qagen_card(card_data) is ours


# --- the language rule ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("What is the tallest lighthouse in the harbour, and when was it built?", "en"),
        ("Die Schwebebahn in Wuppertal ist eine Hängebahn, die seit 1901 in Betrieb ist.", "de"),
        ("Le compost est obtenu par la décomposition de déchets organiques dans le jardin.", "fr"),
        ("El té verde es una bebida que se toma en todo el mundo, y es muy popular.", "es"),
        ("Il tè verde è una bevanda che si beve in tutto il mondo, ed è molto popolare per la salute.", "it"),
        ("O chá verde é uma bebida que não é fermentada, e é muito popular no Brasil e em Portugal.", "pt"),
        ("De groene thee is een drank die niet wordt gefermenteerd en het is populair in de wereld.", "nl"),
        ("Москва — столица России, и это самый большой город в стране, который был основан давно.", "ru"),
        ("绿茶是一种不发酵的茶。新鲜的茶叶采摘以后，经过杀青、揉捻和干燥等工序制成。", "zh"),
        ("日本の首都は東京です。東京にはたくさんの人が住んでいます。", "ja"),
        ("서울은 대한민국의 수도이며 가장 큰 도시입니다.", "ko"),
        ("Η Αθήνα είναι η πρωτεύουσα της Ελλάδας.", "el"),
        # Undecided: no letters, no known function words, too few of them, or an even mix.
        ("12345 67 89 !!!", None),
        ("Xyzzy plugh frobozz quendor zork.", None),
        ("Lighthouse glacier.", None),
        ("The tower is in the harbour. Der Turm ist in dem Hafen und die Stadt.", None),
        ("नमस्ते दुनिया, यह एक परीक्षण है", None),
    ],
)
def test_text_language(text: str, language: str | None) -> None:
    assert text_language(text) == language


def test_detect_languages_over_a_set() -> None:
    english = "What did the engineers record in the archive of the museum, and when was it built?"
    german = "Die Ingenieure haben das Archiv des Museums untersucht, und es wurde im Jahr gebaut."
    assert detect_languages([]) == []
    assert detect_languages([english] * 10) == ["en"]
    # Every language of at least a tenth of the rows, most frequent first.
    assert detect_languages([english] * 6 + [german] * 4) == ["en", "de"]
    assert detect_languages([english] * 19 + [german]) == ["en"]
    # Fewer than half decided: say nothing rather than guess.
    assert detect_languages([english] * 4 + ["Xyzzy plugh frobozz."] * 6) == []
