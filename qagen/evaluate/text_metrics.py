"""Lexical metrics: ROUGE-L, context ROUGE-L recall, SQuAD token F1 and exact match.

Tokenisation
------------
`tokenize` (used by ROUGE-L) has two paths:

- **ASCII text** goes through exactly the steps of the `rouge-score` package's default tokenizer
  (`rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)`): lowercase, every character outside
  `[a-z0-9]` is a separator, empty pieces dropped. On ASCII input our ROUGE-L therefore equals
  `rouge-score`'s, to the last bit.
- **Any other text** is NFKC-normalised and case-folded (so full-width `ＡＢＣ１` reads as `abc1`),
  then split into runs of letters and digits *of every script*; combining marks stay with the
  letter they modify. `rouge-score` instead drops every non-ASCII character, which turns a Chinese
  answer into zero tokens and `café` into `caf`. Characters of scripts written without spaces
  between words (Han, Hiragana, Katakana, Bopomofo, Thai, Lao, Khmer, Myanmar) are each a token of
  their own, the usual character-level ROUGE for Chinese and Japanese, since we have no word
  segmenter. Hangul is written with spaces, so Korean is split at spaces like English.

Both paths give the same tokens on ASCII text (the second reduces to the first there), so which
path a string takes never changes a score; the ASCII path exists for speed and to make the
equivalence with `rouge-score` evident.

SQuAD token F1 and exact match use the SQuAD v1.1 normalisation instead (see `squad_tokens`), which
on ASCII text is the official script's and elsewhere also removes Unicode punctuation and splits
characters of the space-less scripts above, as the MLQA evaluation script does for Chinese.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from collections.abc import Hashable, Sequence
from functools import lru_cache
from typing import NamedTuple

__all__ = [
    "RougeScore",
    "context_rouge_l_recall",
    "exact_match",
    "lcs_length",
    "rouge_l",
    "rouge_l_recall",
    "squad_tokens",
    "token_f1",
    "tokenize",
]


class RougeScore(NamedTuple):
    """ROUGE-L of a candidate against a reference (same fields as `rouge_score.scoring.Score`)."""

    precision: float
    recall: float
    fmeasure: float


# --------------------------------------------------------------------------------------------------
# Tokenisation
# --------------------------------------------------------------------------------------------------

# Code-point ranges of scripts written without spaces between words: each character is one token.
_UNSEGMENTED_RANGES: tuple[tuple[int, int], ...] = (
    (0x0E00, 0x0E7F),  # Thai
    (0x0E80, 0x0EFF),  # Lao
    (0x1000, 0x109F),  # Myanmar
    (0x1780, 0x17FF),  # Khmer
    (0x2E80, 0x2FDF),  # CJK radicals, Kangxi radicals
    (0x3005, 0x3007),  # 々 〆 〇 (iteration mark, closing mark, ideographic zero)
    (0x3021, 0x3029),  # Hangzhou numerals
    (0x3038, 0x303C),  # more Hangzhou numerals, masu mark
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x3100, 0x312F),  # Bopomofo
    (0x31A0, 0x31FF),  # Bopomofo extended, CJK strokes, Katakana phonetic extensions
    (0x3400, 0x4DBF),  # CJK Unified Ideographs Extension A
    (0x4E00, 0x9FFF),  # CJK Unified Ideographs
    (0xF900, 0xFAFF),  # CJK Compatibility Ideographs
    (0xFF66, 0xFF9F),  # half-width Katakana (NFKC maps them to full width anyway)
    (0x20000, 0x3FFFF),  # CJK Unified Ideographs Extensions B and later, compatibility supplement
)


def _is_unsegmented(char: str) -> bool:
    code = ord(char)
    return any(low <= code <= high for low, high in _UNSEGMENTED_RANGES)


_WORD, _SOLO, _MARK, _SEPARATOR = range(4)


@lru_cache(maxsize=65536)
def _char_class(char: str) -> int:
    # Cached: a text repeats few distinct characters, and unicodedata lookups dominate otherwise.
    major = unicodedata.category(char)[0]
    if major in "LN":
        return _SOLO if _is_unsegmented(char) else _WORD
    if major == "M":
        return _MARK
    return _SEPARATOR


_ASCII_TOKEN_RE = re.compile(r"[a-z0-9]+")


def _unicode_tokens(text: str) -> list[str]:
    tokens: list[str] = []
    current: list[str] = []
    # True while `current` holds one character of a space-less script (plus its marks): the next
    # letter starts a new token.
    solo = False
    for char in text:
        kind = _char_class(char)
        if kind == _WORD:
            if solo:
                tokens.append("".join(current))
                current = []
                solo = False
            current.append(char)
        elif kind == _SOLO:
            if current:
                tokens.append("".join(current))
            current = [char]
            solo = True
        elif kind == _MARK:
            # A combining mark belongs to the letter before it (Thai vowels, Devanagari matras); one
            # with nothing before it has nothing to modify and is dropped.
            if current:
                current.append(char)
        else:
            if current:
                tokens.append("".join(current))
                current = []
            solo = False
    if current:
        tokens.append("".join(current))
    return tokens


def tokenize(text: str) -> list[str]:
    """ROUGE tokens of `text`: `rouge-score`'s default tokenizer on ASCII (module docstring)."""
    if text.isascii():
        return _ASCII_TOKEN_RE.findall(text.lower())
    return _unicode_tokens(unicodedata.normalize("NFKC", text).casefold())


# --------------------------------------------------------------------------------------------------
# Longest common subsequence and ROUGE-L
# --------------------------------------------------------------------------------------------------


def lcs_length(a: Sequence[Hashable], b: Sequence[Hashable]) -> int:
    """Length of the longest common subsequence of two token sequences.

    Bit-parallel dynamic programming (Allison & Dix 1986; Hyyrö 2004): the row of the classic
    `len(a) x len(b)` LCS table is kept as the differences between neighbouring cells, one bit per
    token of the shorter sequence, packed in one Python int `v`; processing a token of the longer
    sequence updates the whole row with a handful of big-int operations,

        u = v & match[token];  v = (v + u) | (v - u)

    and the LCS length is the number of zero bits of `v` at the end. Same result as the O(n*m)
    table (the tests check it against one), in O(n * ceil(m / 64)) machine-word operations and O(m)
    bits of state for m = the shorter length, n = the longer; the match masks take at most one m-bit
    integer per distinct token of the shorter sequence. A 2,000-token context against a 100-token
    answer takes well under a millisecond, against tens of milliseconds for the cell-by-cell loop in
    Python.
    """
    longer, shorter = (a, b) if len(a) >= len(b) else (b, a)
    width = len(shorter)
    if width == 0:
        return 0
    # match[token] has bit i set where shorter[i] == token.
    match: dict[Hashable, int] = {}
    for position, token in enumerate(shorter):
        match[token] = match.get(token, 0) | (1 << position)
    all_ones = (1 << width) - 1
    v = all_ones
    for token in longer:
        token_mask = match.get(token)
        if token_mask is None:
            continue  # u == 0 leaves v unchanged
        u = v & token_mask
        # `& all_ones` drops the carry out of the top bit of the addition.
        v = ((v + u) | (v - u)) & all_ones
    return width - v.bit_count()


def _fmeasure(precision: float, recall: float) -> float:
    # The same expression as rouge_score.scoring.fmeasure, so the floats match bit for bit.
    if precision + recall > 0:
        return 2 * precision * recall / (precision + recall)
    return 0.0


def _rouge_l_tokens(candidate: Sequence[str], reference: Sequence[str]) -> RougeScore:
    # rouge-score scores 0 when either side has no tokens, including when both are empty.
    if not candidate or not reference:
        return RougeScore(0.0, 0.0, 0.0)
    lcs = lcs_length(candidate, reference)
    precision = lcs / len(candidate)
    recall = lcs / len(reference)
    return RougeScore(precision, recall, _fmeasure(precision, recall))


def rouge_l(candidate: str, reference: str) -> RougeScore:
    """Sentence-level ROUGE-L (Lin 2004) of `candidate` against `reference`.

        P = LCS(c, r) / |c|,   R = LCS(c, r) / |r|,   F = 2PR / (P + R)

    over the token sequences `c = tokenize(candidate)`, `r = tokenize(reference)`; all three are 0.0
    when either has no tokens. On ASCII text this equals
    `RougeScorer(["rougeL"], use_stemmer=False).score(target=reference, prediction=candidate)`.
    """
    return _rouge_l_tokens(tokenize(candidate), tokenize(reference))


def rouge_l_recall(candidate: str, reference: str) -> float:
    """`rouge_l(candidate, reference).recall`: the share of the reference's tokens, in order, that
    the candidate reproduces."""
    return rouge_l(candidate, reference).recall


def context_rouge_l_recall(contexts: Sequence[str], reference_answer: str) -> float:
    """How much of the reference answer the retrieved contexts contain: ROUGE-L recall.

        R = LCS(c_1 ⧺ c_2 ⧺ ... ⧺ c_n, answer) / |answer|

    where `c_1 ... c_n` are the token sequences of the retrieved contexts in rank order,
    concatenated (the same tokens as for `"\\n".join(contexts)`), and `|answer|` is the number of
    tokens of the reference answer.

    This is seed 003's "context ROUGE-L recall": the LCS of the retrieved contexts and the
    ground-truth answer over the *answer's* length, which measures how well the contexts cover the
    answer. Its ROUGE-L precision is deliberately not offered here: contexts are sized by a token
    budget and so are much longer than any answer, which makes precision low for good and bad
    retrievers alike (the seed's own remark). (The seed calls the F-measure a geometric mean of P
    and R; `rouge_l` follows `rouge-score` and the ROUGE paper: the harmonic mean.)

    The contexts are concatenated rather than scored one by one and the best taken, so an answer
    that draws on two retrieved chunks gets credit for both. Because an LCS keeps order, parts of
    the answer found in the contexts in the reverse order of the answer count only once.

    0.0 when there are no contexts or the answer has no tokens.
    """
    candidate: list[str] = []
    for context in contexts:
        candidate.extend(tokenize(context))
    return _rouge_l_tokens(candidate, tokenize(reference_answer)).recall


# --------------------------------------------------------------------------------------------------
# SQuAD token F1 and exact match
# --------------------------------------------------------------------------------------------------

_ASCII_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES_RE = re.compile(r"\b(a|an|the)\b")


def _is_punctuation(char: str) -> bool:
    # ASCII: the official script's string.punctuation (which includes symbols such as $ + < = >
    # ^ ` | ~); elsewhere any Unicode punctuation (category P*), e.g. ，。「」, as MLQA does.
    if char.isascii():
        return char in _ASCII_PUNCTUATION
    return unicodedata.category(char).startswith("P")


def _split_unsegmented(token: str) -> list[str]:
    if token.isascii():
        return [token]
    pieces: list[str] = []
    current: list[str] = []
    for char in token:
        if _is_unsegmented(char):
            if current:
                pieces.append("".join(current))
                current = []
            pieces.append(char)
        else:
            current.append(char)
    if current:
        pieces.append("".join(current))
    return pieces


def squad_tokens(text: str) -> list[str]:
    """Tokens after SQuAD v1.1's `normalize_answer`, extended to other scripts.

    The official steps, in the official order: lowercase; remove punctuation; replace the English
    articles `a`, `an`, `the` (whole words) by spaces; split on whitespace. On ASCII text this is
    exactly the official script. Beyond ASCII the text is first NFKC-normalised and case-folded,
    Unicode punctuation is removed too, and every character of a space-less script (Han, Kana, Thai,
    ...) becomes its own token, so Chinese and Japanese answers are compared character by character.
    """
    # Lowercase as the official script does; beyond ASCII, also fold width and case variants.
    text = text.lower() if text.isascii() else unicodedata.normalize("NFKC", text).casefold()
    text = "".join(char for char in text if not _is_punctuation(char))
    text = _ARTICLES_RE.sub(" ", text)
    return [piece for token in text.split() for piece in _split_unsegmented(token)]


def exact_match(prediction: str, reference: str) -> float:
    """1.0 if the two normalise to the same tokens (`squad_tokens`), else 0.0."""
    return 1.0 if squad_tokens(prediction) == squad_tokens(reference) else 0.0


def token_f1(prediction: str, reference: str) -> float:
    """SQuAD token F1: harmonic mean of bag-of-tokens precision and recall.

        common = |multiset(p) ∩ multiset(r)|,  P = common / |p|,  R = common / |r|,
        F1 = 2PR / (P + R)   (0.0 when common == 0)

    over `p = squad_tokens(prediction)`, `r = squad_tokens(reference)`: the SQuAD v1.1 official
    formula, with one exception: when *both* normalise to no tokens (e.g. both are "The."), this
    returns 1.0, as SQuAD v2.0's script does, where v1.1 returns 0.0; an answer that matches exactly
    (`exact_match` 1.0) should not get F1 0.0. One empty side scores 0.0 in both versions.
    """
    predicted = squad_tokens(prediction)
    expected = squad_tokens(reference)
    if not predicted and not expected:
        return 1.0
    common = sum((Counter(predicted) & Counter(expected)).values())
    if common == 0:
        return 0.0
    precision = common / len(predicted)
    recall = common / len(expected)
    return (2 * precision * recall) / (precision + recall)
