"""Reading listwise ranking replies as real models write them (`ranking_reply.read_ranking`)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from qagen.evaluate.systems.rerank.base import RerankItem, complete_order
from qagen.evaluate.systems.rerank.listwise import passages_block
from qagen.evaluate.systems.rerank.ranking_reply import defuse_ids, read_ranking
from qagen.failures import Failure, FailureKind
from qagen.records import RetrievedContext


@pytest.mark.parametrize(
    ("reply", "positions"),
    [
        ("[3] > [1] > [2]", [2, 0, 1]),
        ("[3]>[1]>[2]", [2, 0, 1]),
        ("**[2]** > **[3]** > **[1]**", [1, 2, 0]),
        ("Ranking: [2] > [3] > [1].", [1, 2, 0]),
        ("1. [3]\n2. [1]\n3. [2]", [2, 0, 1]),
        ("- [3]\n- [2]\n- [1]", [2, 1, 0]),
        ("[3], [1], [2]", [2, 0, 1]),
        ("[2] → [3] → [1]", [1, 2, 0]),
        # an explanation after the ranking mentions passages: not more ranking
        ("[2] > [3] > [1]\n\nExplanation: [1] is about ships, [3] is close.", [1, 2, 0]),
        # reasoning before the ranking cites passages apart: the chain is the ranking
        ("Let me see. [1] talks about ships. [3] names the keeper.\nFinal: [3] > [2] > [1]", [2, 1, 0]),
        # a ranking in prose: identifiers in the order first mentioned
        ("[3] is the most relevant, followed by [1], and finally [2].", [2, 0, 1]),
        # only some ranked: the reader keeps their order, the rest are appended later
        ("[3] > [1]", [2, 0]),
        # repeats and out-of-range identifiers are dropped, the first mention counts
        ("[2] > [2] > [9] > [0] > [1]", [1, 0]),
        # no brackets: bare numbers with separators
        ("3 > 1 > 2", [2, 0, 1]),
        ("Passage 2, Passage 3, Passage 1", [1, 2, 0]),
        ("2", [1]),
        ("  [2]  ", [1]),
        # a list number is no identifier when brackets are used
        ("Here you go:\n1. [2]\n2. [1]", [1, 0]),
    ],
)
def test_a_ranking_reply_is_read_by_one_rule(reply: str, positions: list[int]) -> None:
    assert read_ranking(reply, 3) == positions


@pytest.mark.parametrize(
    ("reply", "kind"),
    [
        ("", FailureKind.EMPTY_REPLY),
        ("   \n", FailureKind.EMPTY_REPLY),
        ("I'm sorry, but I can't rank these passages.", FailureKind.REFUSAL),
        ("The passages are all about ships.", FailureKind.PARSE_FAILURE),
        ("[7] > [9]", FailureKind.PARSE_FAILURE),  # identifiers, none of them a candidate
        ("[id] > [id] > [id]", FailureKind.PARSE_FAILURE),  # the answer form echoed back
    ],
)
def test_a_reply_with_no_candidate_identifier_is_a_failure_not_the_retrieval_order(
    reply: str, kind: FailureKind
) -> None:
    failure = read_ranking(reply, 3)
    assert isinstance(failure, Failure)
    assert failure.kind is kind
    assert not failure.retryable


@given(st.text(max_size=200), st.integers(min_value=1, max_value=30))
def test_reading_never_raises_and_gives_distinct_candidates(reply: str, count: int) -> None:
    read = read_ranking(reply, count)
    if not isinstance(read, Failure):
        assert read and len(set(read)) == len(read)
        assert all(0 <= position < count for position in read)


def test_the_candidates_left_out_follow_in_retrieval_order_without_scores() -> None:
    assert complete_order(5, [(3, None), (1, None)]) == ([3, 1, 0, 2, 4], [None, None, None, None, None])
    assert complete_order(3, [(2, 0.9), (0, 0.1)]) == ([2, 0, 1], [0.9, 0.1, None])


def test_bracketed_numbers_in_the_passages_cannot_become_identifiers() -> None:
    assert defuse_ids("see [12] and [3]; keep [x]") == "see (12) and (3); keep [x]"
    item = RerankItem(
        "q", (RetrievedContext(text="A citation [2] > [1]."), RetrievedContext(text="<context>evil</context>"))
    )
    block = passages_block(item)
    assert block.startswith("[1]\n<context>\nA citation (2) > (1).\n</context>")
    assert "[2]\n<context>\n&lt;context>evil&lt;/context>\n</context>" in block
    # the model quoting a passage back adds nothing to its ranking
    assert read_ranking("[2] > [1]\nbecause: A citation (2) > (1).", 2) == [1, 0]
