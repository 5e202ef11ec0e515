"""Scripts written without spaces between words, each character of which is a token of its own.

Han, Hiragana, Katakana, Bopomofo, Thai, Lao, Khmer and Myanmar: with no word segmenter, each of
their characters is one token, in ROUGE-L (`qagen.evaluate.metrics.text`) and in SQuAD token F1
(`qagen.corpus.squad`) alike. Hangul is written with spaces, so Korean is not one of them.
"""

from __future__ import annotations

# Code-point ranges of scripts written without spaces between words: each character is one token.
UNSEGMENTED_RANGES: tuple[tuple[int, int], ...] = (
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


def is_unsegmented(char: str) -> bool:
    """Whether `char` belongs to a script written without spaces between words (Han, Kana, Thai, ...)."""
    code = ord(char)
    return any(low <= code <= high for low, high in UNSEGMENTED_RANGES)
