"""SQuAD token F1 and exact match, extended beyond ASCII.

Both use the SQuAD v1.1 normalisation (see `squad_tokens`), not the ROUGE-L tokenizer of
`qagen.evaluate.metrics.text`: on ASCII text it is the official script's, and elsewhere it also
removes Unicode punctuation and splits characters of the space-less scripts
(`qagen.corpus.spaceless_scripts`), as the MLQA evaluation script does for Chinese.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter

from qagen.corpus.spaceless_scripts import is_unsegmented

__all__ = ["exact_match", "squad_tokens", "token_f1"]

_ASCII_PUNCTUATION = frozenset(string.punctuation)
_DROP_ASCII_PUNCTUATION = str.maketrans("", "", string.punctuation)
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
        if is_unsegmented(char):
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
    if text.isascii():
        text = text.lower().translate(_DROP_ASCII_PUNCTUATION)
    else:
        text = unicodedata.normalize("NFKC", text).casefold()
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
