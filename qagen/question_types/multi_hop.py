"""`multi_hop`: a question that needs two passages, a bridge from one to the other or a comparison.

The passages are two chunks that share a rare term (`pairs.shared_term_pairs`), from two documents
when the corpus has such a pair. The groundedness critic reads both passages; one more critic,
`needs_both`, confirms that neither passage alone answers the question, and a draft it rates low is
rejected as `single_hop`.
"""

from __future__ import annotations

from qagen.critics import CriticSpec
from qagen.question_types.pairs import shared_term_pairs
from qagen.question_types.spec import QuestionTypeSpec, TypeCritic

NEEDS_BOTH = CriticSpec(
    name="needs_both",
    prompt="critique_needs_both",
    order=40,
    help="needs both passages: neither alone answers it",
    rejects_as="single_hop",
)

MULTI_HOP = QuestionTypeSpec(
    name="multi_hop",
    help="needs two passages that share a term: a bridge from one to the other, or a comparison",
    draft_prompt="qa_multi_hop",
    question_label="Multi-hop question",
    picker=shared_term_pairs("multi_hop"),
    critics=(
        TypeCritic("groundedness", "critique_groundedness_multi_hop"),
        TypeCritic("relevance"),
        TypeCritic("standalone"),
        TypeCritic("needs_both"),
        # Under checks vetting: a reader given both passages must answer as the draft does.
        TypeCritic("reader", vetting="checks"),
    ),
    own_critics=(NEEDS_BOTH,),
    passages_needed="two chunks that share a rare term (a name, an option, a command: a word few other chunks hold) "
    "and are not near copies of each other",
)
