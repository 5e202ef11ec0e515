"""`unanswerable`: a question on the corpus' subject, in its words, that the corpus does not answer.

Drafted from one chunk (its subject): what reference documentation does not say (speed or memory in
numbers, comparisons with tools outside it, design history, the choice for one user's own situation).
Its reference answer is an abstention (`ABSTENTION`), whatever the generator wrote after `Answer:`
(its reason stays in the raw reply). That the corpus does not answer it is verified, not assumed:
the top chunks BM25 finds for the question in the whole corpus (`{retrieved}`) go to the critic
`not_in_corpus`, and a draft it does not confirm is rejected as `answerable`. The evaluator scores
such questions by whether the system declines to answer (the `abstention` judge) and leaves them
out of the retrieval metrics.
"""

from __future__ import annotations

from qagen.critics import CriticSpec
from qagen.question_types.pickers import one_chunk
from qagen.question_types.spec import QuestionTypeSpec, TypeCritic

ABSTENTION = "The documents do not answer this question."
"""Every unanswerable question's reference answer."""

NOT_IN_CORPUS = CriticSpec(
    name="not_in_corpus",
    prompt="critique_not_in_corpus",
    order=40,
    help="none of the passages a search finds for it answers it",
    rejects_as="answerable",
)

UNANSWERABLE = QuestionTypeSpec(
    name="unanswerable",
    help="on the corpus' subject but not answered by it (speed, comparisons, history: what documentation omits)",
    draft_prompt="qa_unanswerable",
    question_label="Unanswerable question",
    picker=one_chunk("unanswerable"),
    critics=(
        TypeCritic("relevance"),
        TypeCritic("standalone"),
        TypeCritic("not_in_corpus"),
        # Under checks vetting: the question says what it is about; the reader reads what a search of
        # the whole corpus finds, and must not answer.
        TypeCritic("clear", vetting="checks"),
        TypeCritic("reader", "critique_reader_corpus", vetting="checks"),
    ),
    own_critics=(NOT_IN_CORPUS,),
    not_vetted_by=("supported",),
    reference_answer=lambda drafted: ABSTENTION,
    answer_drafted=False,
    answer_in_passages=False,
    scoring="abstention",
)
