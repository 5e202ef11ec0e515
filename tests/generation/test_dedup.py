from __future__ import annotations

import itertools
import math
import random
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from fractions import Fraction
from unittest import mock

from hypothesis import example, given, settings
from hypothesis import strategies as st

from qagen.generation import dedup as dedup_module
from qagen.generation.dedup import NearDuplicateFilter, jaccard, question_words


class QuadraticReference:
    """The first version, kept verbatim as the definition of the decisions: compare each question
    with every kept one whose size could reach the threshold, by size, then in the order kept."""

    def __init__(self, threshold: float = 0.9) -> None:
        self.threshold = threshold
        self._by_size: dict[int, list[tuple[frozenset[str], str]]] = {}

    def first_seen(self, question: str, item_id: str) -> str | None:
        words = question_words(question)
        size = len(words)
        low = int(size * self.threshold)
        high = int(size / self.threshold) + 1 if self.threshold > 0 else size
        for other_size in range(low, high + 1):
            for other_words, other_id in self._by_size.get(other_size, ()):
                if jaccard(words, other_words) >= self.threshold:
                    return other_id
        self._by_size.setdefault(size, []).append((words, item_id))
        return None


def decisions(dedup: NearDuplicateFilter | QuadraticReference, questions: list[str]) -> list[str | None]:
    return [dedup.first_seen(question, f"q{number}") for number, question in enumerate(questions)]


def assert_same_as_reference(questions: list[str], threshold: float) -> list[str | None]:
    expected = decisions(QuadraticReference(threshold), questions)
    assert decisions(NearDuplicateFilter(threshold), questions) == expected
    return expected


@contextmanager
def rebuilding_often() -> Iterator[None]:
    """Re-index after every few kept questions, so small inputs cross many re-orderings, and write the ranks
    of unseen words at once (else a few hundred wait in memory)."""
    with (
        mock.patch.object(dedup_module, "_FIRST_REBUILD", 2),
        mock.patch.object(dedup_module, "_WORK_PER_REBUILD", 0),
        mock.patch.object(dedup_module, "_PENDING_WORDS", 1),
    ):
        yield


def test_case_punctuation_and_order_do_not_matter() -> None:
    dedup = NearDuplicateFilter(0.9)
    assert dedup.first_seen("What is the default chunk size?", "a") is None
    assert dedup.first_seen("what is the default CHUNK size", "b") == "a"
    assert dedup.first_seen("What is the default overlap?", "c") is None


def test_threshold_controls_how_near() -> None:
    loose, strict = NearDuplicateFilter(0.7), NearDuplicateFilter(1.0)
    first = "Which port does the server listen on by default?"
    second = "Which port does the web server listen on by default?"
    for dedup in (loose, strict):
        dedup.first_seen(first, "a")
    assert loose.first_seen(second, "b") == "a"
    assert strict.first_seen(second, "b") is None


def test_chinese_is_split_into_characters() -> None:
    assert question_words("长城有多长？") == frozenset("长城有多")
    dedup = NearDuplicateFilter(0.9)
    assert dedup.first_seen("长城有多长？", "a") is None
    assert dedup.first_seen("长城有多长", "b") == "a"


def test_the_earliest_by_size_then_order_kept_is_named() -> None:
    # Both kept questions match the third; the smaller one is named though it was kept later.
    questions = ["one two three four five", "one two three six", "one two three four six"]
    assert assert_same_as_reference(questions, 0.6) == [None, None, "q1"]


def test_a_dropped_question_causes_no_later_drop() -> None:
    # q1 is a near-duplicate of q0 and is dropped; q2 is near q1 only, so it is kept.
    base = [f"w{n}" for n in range(10)]
    questions = [" ".join(base), " ".join([*base, "x"]), " ".join([*base[1:], "x", "y"])]
    assert jaccard(question_words(questions[1]), question_words(questions[2])) >= 0.8
    assert assert_same_as_reference(questions, 0.8) == [None, "q0", None]


def test_threshold_outside_zero_to_one_is_refused() -> None:
    for threshold in (0.0, -0.5, 1.5, math.nan):
        try:
            NearDuplicateFilter(threshold)
        except ValueError as error:
            assert "(0, 1]" in str(error)
        else:
            raise AssertionError(f"threshold {threshold} was accepted")


_VOCABULARY = [*"abcdefghij", "Ünïcödé", "ﬁle", "ＦＵＬＬ", "Straße", "长", "城"]
_question = st.lists(st.sampled_from(_VOCABULARY), max_size=9).map(" ".join)
_threshold = st.sampled_from([0.9, 1.0, 0.5, 0.75, 2 / 3, 0.8, 0.1]) | st.floats(0.01, 1.0)


@settings(max_examples=300, deadline=None)
@given(st.lists(_question, max_size=120), _threshold, st.booleans())
@example(["a b c d e f g h i j", "a b c d e f g h i", "a b c d e f g h i j"], 0.9, False)
def test_same_decisions_as_the_quadratic_version(questions: list[str], threshold: float, often: bool) -> None:
    if often:
        with rebuilding_often():
            assert_same_as_reference(questions, threshold)
    else:
        assert_same_as_reference(questions, threshold)


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 2**32), st.sampled_from([0.9, 0.8, 0.6]))
def test_same_decisions_on_realistic_questions_past_many_rebuilds(seed: int, threshold: float) -> None:
    # 12-13 words from a Zipfian vocabulary, with planted near-duplicates: one word changed.
    rng = random.Random(seed)
    vocabulary = [f"w{rank}" for rank in range(400)]
    weights = [1 / (rank + 1) for rank in range(400)]
    questions: list[str] = []
    for _ in range(600):
        if questions and rng.random() < 0.2:
            words = rng.choice(questions).split()
            words[rng.randrange(len(words))] = rng.choice(vocabulary)
        else:
            words = rng.choices(vocabulary, weights, k=rng.choice([12, 13, 14]))
        questions.append(" ".join(words))
    with mock.patch.object(dedup_module, "_PENDING_WORDS", 7):  # unseen words' ranks written between rebuilds
        assert_same_as_reference(questions, threshold)


def _pair(shared: int, only_first: int, only_second: int) -> list[str]:
    # The shared words sort after the others, so the smallest shared word is as late in each
    # question's order as it can be: a prefix one word too short misses it.
    common = [f"z{n}" for n in range(shared)]
    return [
        " ".join([*(f"a{n}" for n in range(only_first)), *common]),
        " ".join([*(f"b{n}" for n in range(only_second)), *common]),
    ]


def test_float_boundaries_decide_as_before() -> None:
    # Every overlap/union up to 30, at the threshold equal to that float ratio and one float either
    # side of it. Where the float ratio is rounded up past the true ratio, the float test still
    # calls the pair a duplicate: the index must find such pairs too.
    rounded_up_and_accepted = 0
    for union in range(1, 31):
        for overlap in range(1, union + 1):
            ratio = overlap / union
            for threshold in {ratio, math.nextafter(ratio, 0.0), min(1.0, math.nextafter(ratio, 1.0))}:
                # The words only one question has all in the first, split evenly, or all in the second: the
                # prefixes' extremes and their middle (every split took five times as long, 14,850 filters).
                for only_first in sorted({0, (union - overlap) // 2, union - overlap}):
                    questions = _pair(overlap, only_first, union - overlap - only_first)
                    outcome = assert_same_as_reference(questions, threshold)
                    if outcome[1] is not None and Fraction(overlap, union) < Fraction(threshold):
                        rounded_up_and_accepted += 1
    assert rounded_up_and_accepted > 0


def test_at_exactly_the_default_threshold() -> None:
    nine_of_ten = _pair(9, 0, 1)  # Jaccard 9/10 == 0.9: a duplicate
    eighteen_of_twenty = _pair(18, 1, 1)  # 18/20
    just_below = _pair(17, 1, 1)  # 17/19 < 0.9
    assert assert_same_as_reference(nine_of_ten, 0.9) == [None, "q0"]
    assert assert_same_as_reference(eighteen_of_twenty, 0.9) == [None, "q0"]
    assert assert_same_as_reference(just_below, 0.9) == [None, None]


def test_empty_and_one_word_questions() -> None:
    questions = ["", "?", "a", "A.", "b", "!!! ...", "a b", "_", "a", "B?"]
    for threshold in (0.9, 0.5, 1.0, 0.3):
        assert_same_as_reference(questions, threshold)
    assert decisions(NearDuplicateFilter(0.9), questions) == [
        None,
        "q0",
        None,
        "q2",
        None,
        "q0",
        None,
        "q0",
        "q2",
        "q4",
    ]


def test_unicode_normalisation_and_scripts() -> None:
    questions = [
        "Wie groß ist die Straße?",
        "WIE GROSS IST DIE STRASSE",  # casefold: ß -> ss
        "ﬁle ＦＵＬＬ width?",
        "file FULL width",  # NFKC: ligature and full-width letters
        "Ünïcödé naïve café",
        "unicode naive cafe",  # accents are letters of their own: not the same words
        "東京タワーの高さは？",
        "東京タワーの高さは",
        "서울의 인구는?",
        "서울의 인구는",
    ]
    expected = [None, "q0", None, "q2", None, None, None, "q6", None, "q8"]
    assert assert_same_as_reference(questions, 0.9) == expected


def test_very_long_questions() -> None:
    rng = random.Random(7)
    base = [f"w{n}" for n in range(2000)]
    questions = [" ".join(base)]
    for _ in range(25):
        words = list(base)
        for _ in range(rng.randrange(0, 250)):
            words[rng.randrange(len(words))] = f"z{rng.randrange(10_000)}"
        questions.append(" ".join(words))
    for threshold in (0.9, 0.95, 0.99):
        assert_same_as_reference(questions, threshold)


def test_many_identical_questions_compare_once_each() -> None:
    questions = ["What is the default chunk size?"] * 5000
    dedup = NearDuplicateFilter(0.9)
    assert decisions(dedup, questions) == [None] + ["q0"] * 4999
    assert dedup.comparisons == 4999


def test_distinct_questions_sharing_frequent_words_are_not_compared() -> None:
    # Every question shares 11 words with every other and has one of its own (Jaccard 11/13), and
    # some are one word shorter: a word index that lists the shared words meets n² pairs.
    frequent = [f"common{n}" for n in range(11)]
    questions = [" ".join([*frequent, f"own{n}"]) for n in range(3000)]
    questions += [" ".join([*frequent[: 10 - n % 3], *frequent[11 - n % 3 :], f"short{n}"]) for n in range(1000)]
    dedup = NearDuplicateFilter(0.9)
    outcome = decisions(dedup, questions)
    assert outcome == [None] * 4000
    assert dedup.comparisons <= len(questions)
    assert outcome[:300] == decisions(QuadraticReference(0.9), questions[:300])


def _zipfian_questions(count: int, seed: int) -> list[str]:
    """12-13 distinct words each from a Zipfian vocabulary; a tenth repeat an earlier question with
    one word added or dropped (Jaccard 12/13 or 11/12: near-duplicates at 0.9)."""
    rng = random.Random(seed)
    vocabulary = [f"w{rank}" for rank in range(5000)]
    cumulative = list(itertools.accumulate(1 / (rank + 1) for rank in range(5000)))
    questions: list[str] = []
    for _ in range(count):
        if questions and rng.random() < 0.1:
            words = rng.choice(questions).split()
            if rng.random() < 0.5:
                words.pop(rng.randrange(len(words)))
            else:
                words.append(f"extra{rng.randrange(100)}")
        else:
            words, distinct = [], rng.choice([12, 13])
            while len(set(words)) < distinct:
                words += rng.choices(vocabulary, cum_weights=cumulative)
        questions.append(" ".join(words))
    return questions


def test_realistic_questions_need_about_one_comparison_each() -> None:
    # The rarest words lead each question's prefix; ranked the other way round (frequent first),
    # the same 4,000 questions take millions of comparisons.
    questions = _zipfian_questions(4000, seed=3)
    dedup = NearDuplicateFilter(0.9)
    outcome = decisions(dedup, questions)
    assert 200 < outcome.count(None) < 3900  # near-duplicates were planted and found
    assert dedup.comparisons <= 2 * len(questions)


def test_the_kept_questions_are_indexed_on_disk() -> None:
    # A build's questions: a template's words, a few of the passage's, and a word of their own.
    rng = random.Random(5)
    vocabulary = [f"w{rank}" for rank in range(100)]
    questions = [
        f"Which fact about {' '.join(rng.sample(vocabulary, 3))} is recorded under ref r{number}?"
        for number in range(6000)
    ]
    dedup = NearDuplicateFilter(0.9)
    tracemalloc.start()
    try:
        assert decisions(dedup, questions[:1000]).count(None) == 1000
        held = tracemalloc.get_traced_memory()[0]
        assert [dedup.first_seen(question, f"q{number}") for number, question in enumerate(questions[1000:], 1000)] == [
            None
        ] * 5000
        grown = tracemalloc.get_traced_memory()[0] - held
    finally:
        tracemalloc.stop()
    # In memory, 5,000 more kept questions took about 4.5 MB (0.9 KB each).
    assert grown < 100_000
    assert dedup.first_seen(questions[4321].upper(), "again") == "q4321"
