from __future__ import annotations

from qagen.generation.dedup import NearDuplicateFilter, question_words


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
