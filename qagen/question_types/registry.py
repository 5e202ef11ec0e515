"""The question types, one line each: the registry the build and the evaluator read.

A type is one module (its `QuestionTypeSpec`) plus its prompt files; registering it here (or with
`register_question_type` from your own code, or as an entry point of an installed package) makes it
a value of `question_types`, a row's `question_type`, a line of the funnel, the card and the review,
and a group of the evaluator's per-type scores.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

from qagen.errors import ConfigError
from qagen.question_types.factoid import FACTOID
from qagen.question_types.multi_hop import MULTI_HOP
from qagen.question_types.reworded import REWORDED
from qagen.question_types.spec import QuestionTypeSpec
from qagen.question_types.unanswerable import UNANSWERABLE
from qagen.registry import Registry

DEFAULT_TYPE = "factoid"
"""The type of every draft of a build that names none, and of every test-set row without a `question_type`."""


QUESTION_TYPES: Registry[QuestionTypeSpec] = Registry(
    "question_types",
    QuestionTypeSpec,
    noun="question type",
    specs=(FACTOID, MULTI_HOP, UNANSWERABLE, REWORDED),
)
"""Every question type: qagen's, those registered in Python, and those installed packages bring
(entry points `qagen.question_types`, each naming a `QuestionTypeSpec` with its `prompt_folder`)."""


def scoring_of(question_type: str | None) -> str:
    """How the evaluator scores a question of this type (`QuestionTypeSpec.scoring`); None: the default type."""
    return QUESTION_TYPES.get(question_type or DEFAULT_TYPE).scoring


def register_question_type(spec: QuestionTypeSpec) -> QuestionTypeSpec:
    """Add a question type to every build and evaluation from now on."""
    return QUESTION_TYPES.register(spec)


def parse_shares(text: str) -> dict[str, int]:
    """`factoid=60,multi_hop=20,...` as shares by type (`question_types` written as text); a bare name
    (`multi_hop`) is a share of 100, the whole mix. A type named twice is refused, not collapsed: which
    of its shares was meant cannot be told."""
    shares: dict[str, int] = {}
    for part in (piece.strip() for piece in text.split(",")):
        if not part:
            continue
        name, equals, value = (piece.strip() for piece in part.partition("="))
        if not equals:
            value = "100"
        if name in shares:
            raise ConfigError(
                f"`question_types` names {name} twice ({text.strip()!r}): give each type once, with its share of "
                "the drafts, e.g. factoid=60,multi_hop=40.",
                settings=("question_types",),
            )
        try:
            shares[name] = int(value)
        except ValueError:
            raise ConfigError(
                f"`question_types` has {part!r}, which is no share: write each type as name=percent, e.g. "
                "factoid=60,multi_hop=40.",
                settings=("question_types",),
            ) from None
    return shares


def check_shares(shares: Mapping[str, int]) -> None:
    """Refuse shares that name an unknown type, are not whole percents above 0, or do not add up to 100."""
    unknown = [name for name in shares if name not in QUESTION_TYPES]
    if unknown:
        raise ConfigError(
            f"`question_types` names {', '.join(unknown)}, which is no question type; the types are "
            f"{', '.join(QUESTION_TYPES.names())}.",
            settings=("question_types",),
        )
    if not shares or any(share <= 0 for share in shares.values()) or sum(shares.values()) != 100:
        given = ",".join(f"{name}={share}" for name, share in shares.items()) or "nothing"
        raise ConfigError(
            f"`question_types` gives {given}: the shares are percents of the drafts, each above 0, adding up "
            "to 100 (e.g. factoid=60,multi_hop=20,unanswerable=20).",
            settings=("question_types",),
        )


def draft_counts(shares: Mapping[str, int], total: int) -> dict[str, int]:
    """`total` drafts split by the shares (`apportion`: each type within one draft of its share)."""
    return apportion(total, shares)


def apportion(total: int, weights: Mapping[str, int]) -> dict[str, int]:
    """`total` split in proportion to the weights by largest remainder: each part within one of its
    exact share, the parts adding up to `total`; ties go to the name given first."""
    whole = sum(weights.values())
    exact = {name: Fraction(total * weight, whole) for name, weight in weights.items()}
    counts = {name: int(value) for name, value in exact.items()}
    left = total - sum(counts.values())
    by_remainder = sorted(weights, key=lambda name: -(exact[name] - counts[name]))
    for name in by_remainder[:left]:
        counts[name] += 1
    return counts
