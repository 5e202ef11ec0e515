"""ROUGE-L, context ROUGE-L recall, token F1 and exact match against reference implementations.

References: the `rouge-score` package (ROUGE-L on ASCII text), a textbook O(n*m) LCS table, and the
SQuAD v1.1 official evaluation formulas, transcribed below.
"""

from __future__ import annotations

import re
import string
import time
from collections import Counter
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qagen.corpus.squad import exact_match, squad_tokens, token_f1
from qagen.evaluate.metrics.text import (
    RougeScore,
    _unicode_tokens,
    context_rouge_l_recall,
    lcs_length,
    rouge_l,
    rouge_l_recall,
    tokenize,
)

# --------------------------------------------------------------------------------------------------
# Reference implementations, written independently of the package
# --------------------------------------------------------------------------------------------------


def textbook_lcs(a: list[object], b: list[object]) -> int:
    """The full (len(a)+1) x (len(b)+1) dynamic-programming table."""
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            if a[i - 1] == b[j - 1]:
                table[i][j] = table[i - 1][j - 1] + 1
            else:
                table[i][j] = max(table[i - 1][j], table[i][j - 1])
    return table[-1][-1]


def squad_normalize_answer(s: str) -> str:
    """SQuAD v1.1 evaluate-v1.1.py `normalize_answer`."""

    def remove_articles(text: str) -> str:
        return re.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text: str) -> str:
        return " ".join(text.split())

    def remove_punc(text: str) -> str:
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    return white_space_fix(remove_articles(remove_punc(s.lower())))


def squad_f1_score(prediction: str, ground_truth: str) -> float:
    """SQuAD v1.1 evaluate-v1.1.py `f1_score`."""
    prediction_tokens = squad_normalize_answer(prediction).split()
    ground_truth_tokens = squad_normalize_answer(ground_truth).split()
    common = Counter(prediction_tokens) & Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    return (2 * precision * recall) / (precision + recall)


def squad_exact_match_score(prediction: str, ground_truth: str) -> bool:
    """SQuAD v1.1 evaluate-v1.1.py `exact_match_score`."""
    return squad_normalize_answer(prediction) == squad_normalize_answer(ground_truth)


@pytest.fixture(scope="module")
def reference_rouge_l() -> Callable[[str, str], RougeScore]:
    """rouge-score's ROUGE-L, imported when a test asks for it rather than when the module is collected:
    it imports nltk and scipy.stats (1-2 s), which every test worker would pay."""
    rouge_scorer = pytest.importorskip("rouge_score.rouge_scorer", reason="rouge-score is not installed")
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)

    def score(candidate: str, reference: str) -> RougeScore:
        found = scorer.score(reference, candidate)["rougeL"]  # (target, prediction)
        return RougeScore(found.precision, found.recall, found.fmeasure)

    return score


# --------------------------------------------------------------------------------------------------
# Strategies: ASCII sentences with enough shared words to give non-trivial LCSs
# --------------------------------------------------------------------------------------------------

_WORDS = [
    "the", "The", "a", "an", "An", "cat", "Cat", "sat", "on", "mat", "dog", "ran", "model", "RAG",
    "GPT-4", "e-mail", "U.S.", "don't", "it's", "3.14", "1,000", "42", "snake_case", "x", "y",
    "retrieval", "Retrieval-Augmented", "(generation)", "answer!", "question?", "--", "...", "&",
    "$5", "100%", "C++", "naïve",
]  # fmt: skip
_ASCII_WORDS = [word for word in _WORDS if word.isascii()]

ascii_sentences = st.lists(st.sampled_from(_ASCII_WORDS), max_size=40).map(" ".join)
any_ascii_text = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=127), max_size=120)
ascii_texts = st.one_of(ascii_sentences, any_ascii_text)


# --------------------------------------------------------------------------------------------------
# LCS
# --------------------------------------------------------------------------------------------------


@given(
    st.lists(st.integers(0, 4), max_size=150),
    st.lists(st.integers(0, 4), max_size=150),
)
@settings(max_examples=300)
def test_lcs_length_equals_the_textbook_table(a: list[int], b: list[int]) -> None:
    # Lengths past 64 cross machine-word boundaries in the bit-parallel version.
    assert lcs_length(a, b) == textbook_lcs(list(a), list(b))


@given(st.lists(st.sampled_from("abcdefgh"), max_size=40), st.lists(st.sampled_from("abc"), max_size=40))
def test_lcs_length_is_symmetric(a: list[str], b: list[str]) -> None:
    assert lcs_length(a, b) == lcs_length(b, a)


def test_lcs_length_edge_cases() -> None:
    assert lcs_length([], []) == 0
    assert lcs_length([], ["a"]) == 0
    assert lcs_length(["a"], []) == 0
    assert lcs_length(list("abc"), list("abc")) == 3
    assert lcs_length(list("abc"), list("xyz")) == 0
    assert lcs_length(list("ABCBDAB"), list("BDCABA")) == 4  # CLRS's example
    assert lcs_length(["x"] * 200, ["x"] * 70) == 70


def test_lcs_length_is_fast_for_long_contexts() -> None:
    vocabulary = [f"w{i}" for i in range(300)]
    context = [vocabulary[(i * 7919) % 300] for i in range(2000)]
    answer = [vocabulary[(i * 104729) % 300] for i in range(100)]
    started = time.perf_counter()
    for _ in range(10):
        length = lcs_length(context, answer)
    elapsed = time.perf_counter() - started
    assert length == textbook_lcs(list(context), list(answer))
    # ~1 ms a call here; the bound leaves room for a slow, loaded CI machine.
    assert elapsed < 2.0


# --------------------------------------------------------------------------------------------------
# ROUGE-L against rouge-score
# --------------------------------------------------------------------------------------------------


@given(ascii_texts, ascii_texts)
@settings(max_examples=400)
def test_rouge_l_equals_rouge_score_on_ascii(
    reference_rouge_l: Callable[[str, str], RougeScore], candidate: str, reference: str
) -> None:
    assert rouge_l(candidate, reference) == reference_rouge_l(candidate, reference)


@pytest.mark.parametrize(
    ("candidate", "reference"),
    [
        ("", ""),
        ("", "the cat sat"),
        ("the cat sat", ""),
        ("!!! ...", "the cat sat"),
        ("the cat sat", "  \n\t "),
        ("The cat sat on the mat.", "the cat sat on the mat"),
        ("police killed the gunman", "the gunman police killed"),
        ("a b c d e f", "f e d c b a"),
        ("snake_case", "snake case"),
    ],
)
def test_rouge_l_equals_rouge_score_on_edge_cases(
    reference_rouge_l: Callable[[str, str], RougeScore], candidate: str, reference: str
) -> None:
    assert rouge_l(candidate, reference) == reference_rouge_l(candidate, reference)


def test_rouge_l_known_value() -> None:
    # LCS("police killed the gunman", "police kill the gunman") = police, the, gunman.
    score = rouge_l("police kill the gunman", "police killed the gunman")
    assert score == RougeScore(0.75, 0.75, 0.75)


@given(ascii_texts, ascii_texts)
def test_rouge_l_recall_is_the_recall_of_rouge_l(candidate: str, reference: str) -> None:
    assert rouge_l_recall(candidate, reference) == rouge_l(candidate, reference).recall


@given(ascii_texts)
def test_unicode_tokenizer_agrees_with_the_ascii_path_on_ascii(text: str) -> None:
    # So a string's score does not depend on whether some *other* part of it is non-ASCII.
    assert _unicode_tokens(text.lower()) == tokenize(text)


# --------------------------------------------------------------------------------------------------
# Beyond ASCII
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("我喜欢机器学习。", ["我", "喜", "欢", "机", "器", "学", "习"]),
        ("GPT4模型很好", ["gpt4", "模", "型", "很", "好"]),
        ("東京はカレー", ["東", "京", "は", "カ", "レ", "ー"]),
        ("Café crème", ["café", "crème"]),
        ("cafe\u0301", ["café"]),  # NFKC composes e + combining acute
        ("q\u0301 x", ["q\u0301", "x"]),  # a combining mark with no composed form stays with q
        ("ＡＢＣ１２３", ["abc123"]),  # full width folds to ASCII
        ("हिन्दी भाषा", ["हिन्दी", "भाषा"]),  # Devanagari vowel signs are combining marks
        ("ภาษาไทย", ["ภ", "า", "ษ", "า", "ไ", "ท", "ย"]),
        ("ที่", ["ที่"]),  # Thai tone marks stay with their consonant
        ("한국어 문장", ["한국어", "문장"]),  # Korean is written with spaces
        ("Straße STRASSE", ["strasse", "strasse"]),
        ("«Ça va?» — oui", ["ça", "va", "oui"]),
    ],
)
def test_tokenize_beyond_ascii(text: str, tokens: list[str]) -> None:
    assert tokenize(text) == tokens


def test_chinese_rouge_l_scores_shared_characters() -> None:
    score = rouge_l("我喜欢深度学习", "我喜欢机器学习")
    # LCS = 我喜欢学习: 5 of 7 characters on both sides.
    assert score.recall == pytest.approx(5 / 7)
    assert score.precision == pytest.approx(5 / 7)
    assert score.fmeasure == pytest.approx(5 / 7)


def test_chinese_where_rouge_score_sees_nothing(reference_rouge_l: Callable[[str, str], RougeScore]) -> None:
    # rouge-score's tokenizer drops non-ASCII, so it scores 0 here; we score the shared characters.
    assert reference_rouge_l("北京是中国的首都", "中国的首都是北京").recall == 0
    assert rouge_l_recall("北京是中国的首都", "中国的首都是北京") == pytest.approx(5 / 8)


def test_japanese_rouge_l_is_sensible() -> None:
    assert 0 < rouge_l_recall("日本の首都は東京です", "東京は日本の首都です") < 1
    assert rouge_l_recall("東京は日本の首都です", "東京は日本の首都です。") == 1.0
    assert rouge_l_recall("大阪", "東京") == 0.0


def test_mixed_script_text() -> None:
    score = rouge_l("RAG系统使用GPT-4模型", "该RAG系统使用的是GPT-4")
    # Tokens: rag 系 统 使 用 gpt 4 模 型  vs  该 rag 系 统 使 用 的 是 gpt 4; LCS = 7.
    assert score.recall == pytest.approx(7 / 10)
    assert score.precision == pytest.approx(7 / 9)


# --------------------------------------------------------------------------------------------------
# Context ROUGE-L recall (seed 003)
# --------------------------------------------------------------------------------------------------


@given(st.lists(ascii_texts, max_size=5), ascii_texts)
@settings(max_examples=200)
def test_context_rouge_l_recall_equals_rouge_score_on_joined_contexts(
    reference_rouge_l: Callable[[str, str], RougeScore], contexts: list[str], answer: str
) -> None:
    expected = reference_rouge_l("\n".join(contexts), answer).recall
    assert context_rouge_l_recall(contexts, answer) == expected


def test_context_rouge_l_recall_credits_an_answer_spread_over_two_contexts() -> None:
    contexts = ["Paris is the capital of France.", "France lies in Western Europe."]
    answer = "Paris is the capital; France lies in Western Europe"
    assert context_rouge_l_recall(contexts, answer) == 1.0
    # Either context alone covers only part of the answer.
    assert rouge_l_recall(contexts[0], answer) < 1.0
    assert rouge_l_recall(contexts[1], answer) < 1.0


def test_context_rouge_l_recall_edge_cases() -> None:
    assert context_rouge_l_recall([], "an answer") == 0.0
    assert context_rouge_l_recall(["", ""], "an answer") == 0.0
    assert context_rouge_l_recall(["some context"], "") == 0.0
    assert context_rouge_l_recall(["some context"], "?!") == 0.0


def test_context_rouge_l_recall_chinese() -> None:
    contexts = ["北雷丁位于马萨诸塞州。", "2020年人口普查显示，当地共有人口15554人。"]
    answer = "北雷丁共有人口15554人"
    # 北 雷 丁 共 有 人 口 15554 人: all nine tokens appear, in order, in the contexts.
    assert context_rouge_l_recall(contexts, answer) == 1.0
    assert 0 < context_rouge_l_recall(contexts[:1], answer) < 1


# --------------------------------------------------------------------------------------------------
# SQuAD token F1 and exact match
# --------------------------------------------------------------------------------------------------


@given(ascii_texts, ascii_texts)
@settings(max_examples=400)
def test_token_f1_equals_squad_v1_1_on_ascii(prediction: str, reference: str) -> None:
    both_empty = not squad_normalize_answer(prediction) and not squad_normalize_answer(reference)
    # v1.1 scores two empty answers 0; we follow SQuAD v2.0 there (1.0, consistent with EM).
    expected = 1.0 if both_empty else squad_f1_score(prediction, reference)
    assert token_f1(prediction, reference) == expected


@given(ascii_texts, ascii_texts)
@settings(max_examples=300)
def test_exact_match_equals_squad_v1_1_on_ascii(prediction: str, reference: str) -> None:
    assert exact_match(prediction, reference) == float(squad_exact_match_score(prediction, reference))


@given(ascii_texts)
def test_squad_tokens_are_the_official_normalisation(text: str) -> None:
    assert squad_tokens(text) == squad_normalize_answer(text).split()


@pytest.mark.parametrize(
    ("prediction", "reference", "f1"),
    [
        ("The Eiffel Tower", "eiffel tower!", 1.0),
        ("in Paris, France", "Paris", 2 * (1 / 3) * 1 / (1 / 3 + 1)),
        ("London", "Paris", 0.0),
        ("", "Paris", 0.0),
        ("Paris", "", 0.0),
        ("", "", 1.0),
        ("the", "a.", 1.0),  # both normalise to nothing
        ("cat cat cat", "cat", 0.5),  # bag of tokens: one shared "cat"
    ],
)
def test_token_f1_known_values(prediction: str, reference: str, f1: float) -> None:
    assert token_f1(prediction, reference) == pytest.approx(f1)


def test_token_f1_chinese_compares_characters() -> None:
    # Same characters in another order: bag-of-characters F1 is 1, exact match is not.
    assert token_f1("北京是中国的首都。", "中国的首都是北京") == 1.0
    assert exact_match("北京是中国的首都。", "中国的首都是北京") == 0.0
    assert token_f1("明宣宗朱瞻基", "明朝的宣宗皇帝朱瞻基") == pytest.approx(2 * 6 / (6 + 10))
    assert exact_match("1903年", "１９０３年！") == 1.0  # full width and Chinese punctuation
    assert squad_tokens("福特汽车公司，1903年") == ["福", "特", "汽", "车", "公", "司", "1903", "年"]


def test_token_f1_other_scripts() -> None:
    assert token_f1("Ça va très bien", "ça va bien") == pytest.approx(2 * 0.75 * 1 / 1.75)
    assert exact_match("«Où?»", "où") == 1.0
