"""A deterministic generated corpus, for tests and benchmarks that need many distinct documents."""

from __future__ import annotations

import random
from pathlib import Path

_TOPICS = [
    "lighthouse", "glacier", "violin", "volcano", "printing press", "honeybee", "compass", "coral reef",
    "telescope", "bicycle", "windmill", "penicillin", "silk road", "metronome", "sundial", "tidal pool",
]  # fmt: skip
_WORDS = [
    "engineers",
    "measured",
    "recorded",
    "built",
    "observed",
    "documented",
    "introduced",
    "replaced",
    "improved",
    "tested",
    "the",
    "a",
    "of",
    "in",
    "with",
    "during",
    "after",
    "before",
    "northern",
    "southern",
    "early",
    "modern",
    "first",
    "second",
    "third",
    "century",
    "year",
    "kilometre",
    "metres",
    "degrees",
    "tonnes",
    "workers",
    "village",
    "harbour",
    "station",
    "museum",
    "archive",
    "council",
    "river",
    "valley",
    "island",
]


def write_corpus(root: Path, documents: int = 24, paragraphs: int = 6) -> Path:
    """A deterministic corpus of distinct documents, some long and some short."""
    rng = random.Random(1234)
    root.mkdir(parents=True, exist_ok=True)
    for index in range(documents):
        topic = _TOPICS[index % len(_TOPICS)]
        count = paragraphs * (4 if index % 5 == 0 else 1)
        body = []
        for paragraph in range(count):
            sentence = " ".join(rng.choice(_WORDS) for _ in range(40))
            body.append(f"The {topic} report {index}-{paragraph} says that {sentence}. It was {rng.randint(1, 9999)}.")
        suffix = ".md" if index % 3 else ".txt"
        (root / f"doc {index:02d} {topic}{suffix}").write_text("\n\n".join(body), encoding="utf-8")
    return root
