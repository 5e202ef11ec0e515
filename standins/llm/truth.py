"""A hidden truth for certified acceptance's tests: each drafted question is good or not (by the hash of
its text), and the `supported` check's P(yes) is much higher for the good ones, as a score of AUC about
0.98 is. A test's reviewer labels from `is_good`, the truth the build never sees.

Good questions' P(yes) is uniform in [0.75, 1); the others' in [0.30, 0.82): at the check's default
cut 0.7, a draft pool 40% good keeps a set about 74% good; the AUC is about 0.98.
"""

from __future__ import annotations

from standins.llm.outcomes import unit_interval

TRUTH_CHECK = "supported"
"""The check whose P(yes) the hidden truth shapes."""

GOOD = (0.75, 1.0)
"""The range of a good question's P(yes)."""
BAD_LOW = 0.30
"""The lowest P(yes) of the other questions."""
BAD_HIGH = 0.82
"""The highest P(yes) of the other questions, by default (`ReplyPolicy.truth_bad_high`): 0.9 gives a weaker
score, of AUC about 0.92."""


def is_good(question: str, good_rate: float) -> bool:
    """Whether `question` is one a reviewer keeps, in a pool `good_rate` of which is good."""
    return unit_interval("hidden-truth", question.strip()) < good_rate


def p_yes(question: str, good_rate: float, bad_high: float = BAD_HIGH) -> float:
    """The `supported` check's P(yes) for `question` (see the module); the others' range up to `bad_high`."""
    low, high = GOOD if is_good(question, good_rate) else (BAD_LOW, bad_high)
    return low + (high - low) * unit_interval("hidden-p-yes", question.strip())
