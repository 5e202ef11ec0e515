"""Lexical metrics: ROUGE-L and context ROUGE-L recall (SQuAD token F1 and EM: `squad_metrics`).

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
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Hashable, Sequence
from functools import lru_cache
from typing import NamedTuple

from qagen.corpus.spaceless_scripts import is_unsegmented

__all__ = [
    "RougeScore",
    "context_rouge_l_recall",
    "lcs_length",
    "rouge_l",
    "rouge_l_recall",
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

_WORD, _SOLO, _MARK, _SEPARATOR = range(4)


@lru_cache(maxsize=65536)
def _char_class(char: str) -> int:
    # Cached: a text repeats few distinct characters, and unicodedata lookups dominate otherwise.
    major = unicodedata.category(char)[0]
    if major in "LN":
        return _SOLO if is_unsegmented(char) else _WORD
    if major == "M":
        return _MARK
    return _SEPARATOR


_ASCII_TOKEN_RE = re.compile(r"[a-z0-9]+")
# The same tokens, faster (a 10,000-question evaluation tokenizes 70,000 contexts): every other
# ASCII character becomes a space, then split.
_ASCII_NON_TOKEN = str.maketrans({chr(c): " " for c in range(128) if not _ASCII_TOKEN_RE.fullmatch(chr(c))})


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
        return text.lower().translate(_ASCII_NON_TOKEN).split()
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
    # Tokens absent from the shorter sequence leave v unchanged (u == 0): skipped in one pass.
    for token_mask in [mask for mask in map(match.get, longer) if mask is not None]:
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
