"""`factoid`: one fact from one chunk, asked as a search-engine query (the cookbook's questions).

The cookbook's prompt and protocol (`Factoid question: ...` then `Answer: ...`), vetted by the
cookbook's three critics, drafted from the build's own sampling order: a build of factoids alone
makes the very requests, records and rows every build made before question types.
"""

from __future__ import annotations

from qagen.question_types.pickers import one_chunk
from qagen.question_types.spec import QuestionTypeSpec, TypeCritic

FACTOID = QuestionTypeSpec(
    name="factoid",
    help="one fact from one chunk, asked as a search query (the cookbook's questions)",
    draft_prompt="qa_generation",
    question_label="Factoid question",
    pairs_prompt="qa_generation_pairs",
    picker=one_chunk(None),
    critics=(TypeCritic("groundedness"), TypeCritic("relevance"), TypeCritic("standalone")),
)
