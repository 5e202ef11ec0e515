"""Question types, each declared once, as data: how it picks its passages, which prompt drafts it,
how its reply is read, which critics vet it (with which prompts), and how the evaluator scores it.

A type is one module with its `QuestionTypeSpec` (`spec.py` says what each field does) plus its
prompt files, and one line in `registry.QUESTION_TYPES` (or `register_question_type` from your own
code, or an entry point of an installed package: docs/extending.md). Everything else reads the
registry: the setting `BuildConfig.question_types`, sampling, drafting, the critics, the filter, the
rows' `question_type`, the funnel, summary, card and review, and the evaluator's per-type scores.
"""

from qagen.question_types.registry import (
    DEFAULT_TYPE,
    QUESTION_TYPES,
    apportion,
    check_shares,
    draft_counts,
    parse_shares,
    register_question_type,
    scoring_of,
)
from qagen.question_types.spec import (
    PassagePicker,
    Picked,
    PickedPassages,
    QuestionTypeSpec,
    TextEmbedder,
    TypeCritic,
)

__all__ = [
    "DEFAULT_TYPE",
    "QUESTION_TYPES",
    "PassagePicker",
    "Picked",
    "PickedPassages",
    "QuestionTypeSpec",
    "TextEmbedder",
    "TypeCritic",
    "apportion",
    "check_shares",
    "draft_counts",
    "parse_shares",
    "register_question_type",
    "scoring_of",
]
