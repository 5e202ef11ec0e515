"""`multi_hop`: a question that needs two passages, composed from a factoid of each.

The passages are two chunks that share a rare term (`pairs.shared_term_pairs`), two parts of one
document when it has such a pair, else from two documents. Each passage is drafted alone as a
factoid (the factoid's prompt, parser and free checks), then one call writes a question that asks
for both answers, its answer theirs joined (`qagen.generation.compose`): asked for the whole question
in one call, Qwen2.5-Coder-1.5B wrote none a reviewer keeps (0 of 44 over four prompts: wrong
answers, questions one passage answers, "passage 1"), while it composes two factoids faithfully.
Under checks vetting each factoid is asked `supported` (is its answer correct and in its passage?)
before the composing call, as a factoid build asks it (the same record): of 12 composed drafts a blind
reviewer kept none, about 5 of them for a part's wrong answer ("glob. glob.", "key and reverse.
`heap[0]`"), which the free checks cannot see; a part it rejects ends the draft as
`unsupported_answer`, and the composing call is not paid.

The groundedness critic reads both passages; one more critic, `needs_both`, confirms that neither
passage alone answers the question, and a draft it rates low is rejected as `single_hop`. Under
checks vetting a reader answers it from each passage alone (`first_alone`, `second_alone`): one that
gives the other passage's part of the answer rejects it as `single_hop`, before the later critics are
paid; `supported` reads the whole answer against both passages.
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


def _lone_reader(which: str) -> CriticSpec:
    """The reader given only the `which` (first, second) passage: it must not give the other passage's
    part of the answer (`CriticTask.expected_answer`)."""
    return CriticSpec(
        name=f"{which}_alone",
        prompt=f"critique_{which}_alone",
        order=26,
        help=f"a reader given only the {which} passage does not give the other passage's part of the answer",
        scale="lone_reader",
        rejects_as="single_hop",
    )


FIRST_ALONE, SECOND_ALONE = _lone_reader("first"), _lone_reader("second")

MULTI_HOP = QuestionTypeSpec(
    name="multi_hop",
    help="needs two passages that share a term: one question composed from a factoid of each",
    draft_prompt="qa_multi_hop_compose",
    question_label="Multi-hop question",
    picker=shared_term_pairs("multi_hop"),
    critics=(
        TypeCritic("groundedness", "critique_groundedness_multi_hop"),
        TypeCritic("relevance"),
        TypeCritic("standalone"),
        TypeCritic("needs_both"),
        # Under checks vetting: the question says what it is about; a reader given one passage alone does
        # not give the other part's answer. Each part's answer was checked in its passage, and `supported`
        # reads the whole answer against both: a reader of both, told to answer in a few words, would give
        # one part's answer and be read as disagreeing.
        TypeCritic("clear", vetting="checks"),
        TypeCritic("first_alone", vetting="checks"),
        TypeCritic("second_alone", vetting="checks"),
    ),
    own_critics=(NEEDS_BOTH, FIRST_ALONE, SECOND_ALONE),
    parts="factoid",
    passages_needed="two chunks that share a rare term (a name, an option, a command: a word few other chunks hold) "
    "and are not near copies of each other",
)
