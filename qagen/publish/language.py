"""Which language(s) a set of texts is in, for the dataset card's `language` field.

Cheap, deterministic and conservative: it names a language only when the evidence is clear and
returns nothing otherwise, because a missing `language` field is harmless while a wrong one
misleads every search on the Hub. The rule, per text (a row's question and context):

1. Count the letters of each script. A script owns the text when it has at least 60% of them.
2. Scripts used by one language decide it: Hangul -> ko, Greek -> el, Hebrew -> he, Thai -> th.
   Han and kana together -> ja when kana are at least 20% of them (Japanese mixes both), else zh.
3. Scripts shared by several languages (Latin, Cyrillic, Arabic) are decided by counting common
   function words ("the", "der", "le", "и", "في", ...) of each candidate language. The language
   with most hits wins if it has at least 3 hits and 1.5 times the runner-up's; otherwise the text
   stays undecided. Languages that are not candidates (Devanagari scripts, Vietnamese, ...) stay
   undecided rather than being mistaken for a near neighbour.

Over the whole set: no language when fewer than half of the texts were decided; else every
language of at least 10% of the texts, most frequent first (ties by code).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from functools import cache

_SCRIPT_SHARE = 0.6
_KANA_SHARE_FOR_JA = 0.2
_MIN_HITS = 3
_MARGIN = 1.5
_MIN_DECIDED = 0.5
_MIN_LANGUAGE_SHARE = 0.1

# Code point ranges of the scripts we recognise (letters only; digits and punctuation are ignored).
_SCRIPTS: dict[str, tuple[tuple[int, int], ...]] = {
    "latin": ((0x41, 0x5A), (0x61, 0x7A), (0xC0, 0x24F), (0x1E00, 0x1EFF)),
    "cyrillic": ((0x400, 0x52F),),
    "greek": ((0x370, 0x3FF), (0x1F00, 0x1FFF)),
    "hebrew": ((0x590, 0x5FF),),
    "arabic": ((0x600, 0x6FF), (0x750, 0x77F), (0xFB50, 0xFDFF), (0xFE70, 0xFEFF)),
    "thai": ((0xE00, 0xE7F),),
    "hangul": ((0x1100, 0x11FF), (0x3130, 0x318F), (0xAC00, 0xD7AF)),
    "kana": ((0x3040, 0x30FF), (0x31F0, 0x31FF), (0xFF66, 0xFF9F)),
    "han": ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF)),
}
_SINGLE_LANGUAGE_SCRIPTS = {"hangul": "ko", "greek": "el", "hebrew": "he", "thai": "th"}

# Frequent function words, chosen to tell the candidates of one script apart.
_STOPWORDS: dict[str, dict[str, frozenset[str]]] = {
    "latin": {
        code: frozenset(words.split())
        for code, words in {
            "en": "the and of to is in that it was for with as are on this by be from which what who how "
            "an at or were has have does did when where why not",
            "de": "der die das und ist nicht ein eine zu den mit von sich des auf für im dem auch wird "
            "wie was wer welche sind wurde oder bei aus einer",
            # "l", "d", "qu": the elided l', d', qu' (the apostrophe splits the word).
            "fr": "le la les et est des une un du de que qui dans pour pas sur au avec ce il elle sont par "
            "quel quelle comment pourquoi été aux ne se l d qu à ces cette leur où mais plus sous entre depuis très "
            "était ont",
            "es": "el la los las y es de que en un una por con para del se no su al lo como qué cuál "
            "cómo está son fue pero más",
            "it": "il la di che e è un una per non sono del della con si gli le da nel come cosa quale anche ma più",
            "pt": "o a os as de que e é um uma para com não do da em no na se por mais como qual são foi dos das",
            "nl": "de het een en van is dat op te zijn niet met voor die er aan ook wat wie hoe welke wordt werd bij",
        }.items()
    },
    "cyrillic": {
        code: frozenset(words.split())
        for code, words in {
            "ru": "и в не на что с по это как к из у от за для о же был была было который которые "
            "кто где почему его она он они",
            "uk": "і в не на що з як це до та й від для є був була які який хто де чому його вона",
            "bg": "и в не на е са това че се да за от като към ще съм бе който които",
        }.items()
    },
    "arabic": {
        code: frozenset(words.split())
        for code, words in {
            "ar": "في من على إلى أن هذا هذه التي الذي عن مع ما هو هي كان لا",
            "fa": "در از به که این را با است برای آن می بود شد هم یک",
            "ur": "کے میں کی ہے اور سے کو کا نے پر یہ",
        }.items()
    },
}
_WORD = re.compile(r"[^\W\d_]+")


@cache  # texts repeat the same few hundred characters; the range scan runs once per character
def _script_of(char: str) -> str | None:
    point = ord(char)
    for script, ranges in _SCRIPTS.items():
        if any(low <= point <= high for low, high in ranges):
            return script
    return None


def text_language(text: str) -> str | None:
    """The language of one text by the rule in the module docstring, or None when unclear."""
    scripts = Counter(script for script in map(_script_of, text) if script is not None)
    total = sum(scripts.values())
    if total == 0:
        return None
    cjk = scripts["han"] + scripts["kana"]
    if cjk >= _SCRIPT_SHARE * total:
        return "ja" if scripts["kana"] >= _KANA_SHARE_FOR_JA * cjk else "zh"
    script, count = scripts.most_common(1)[0]
    if count < _SCRIPT_SHARE * total:
        return None
    if script in _SINGLE_LANGUAGE_SCRIPTS:
        return _SINGLE_LANGUAGE_SCRIPTS[script]
    candidates = _STOPWORDS.get(script)
    if candidates is None:
        return None
    words = [word.lower() for word in _WORD.findall(text)]
    hits = Counter({code: sum(word in stopwords for word in words) for code, stopwords in candidates.items()})
    (best, best_hits), (_, second_hits) = sorted(hits.items(), key=lambda item: (-item[1], item[0]))[:2]
    if best_hits >= _MIN_HITS and best_hits >= _MARGIN * second_hits:
        return best
    return None


def detect_languages(texts: Iterable[str]) -> list[str]:
    """ISO 639-1 codes of the set's language(s), most frequent first; [] when unclear or empty."""
    decided: Counter[str] = Counter()
    count = 0
    for text in texts:
        count += 1
        language = text_language(text)
        if language is not None:
            decided[language] += 1
    if count == 0 or sum(decided.values()) < _MIN_DECIDED * count:
        return []
    ranked = sorted(decided.items(), key=lambda item: (-item[1], item[0]))
    return [code for code, hits in ranked if hits >= _MIN_LANGUAGE_SHARE * count]
