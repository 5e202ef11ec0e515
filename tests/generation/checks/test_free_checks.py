"""The free checks: each rule rejects what it names, in the languages qagen drafts in, and lets
ordinary questions through."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from qagen.generation.checks import rules
from qagen.generation.checks.rules import (
    ANSWER_IN_QUESTION,
    ANSWER_NOT_GROUNDED,
    ANSWER_POINTING,
    CODE_NOT_IN_PASSAGES,
    FREE_CHECK_NAMES,
    FREE_CHECKS,
    SOURCE_POINTING,
    answer_in_question,
    answer_points_at_source,
    code_not_in_passages,
    failed_check,
    points_at_source,
    says_not_grounded,
)


@pytest.mark.parametrize(
    "question",
    [
        "What is the purpose of the inflate program in the given context?",
        "According to the passage, which branch is rebased?",
        "What is the name of the tutorial introduced in this manual page?",
        "What branch did the author originally checkout from?",
        "How many commits are in the situation described?",
        "Which options are described above?",
        "Selon le texte, quelle commande crée une étiquette ?",
        "Was beschreibt der Autor im Abschnitt über Tags?",
        "¿Según el documento, qué comando crea una etiqueta?",
        # Multi-hop drafts of Qwen2.5-1.5B (SQLite's and git's documentation).
        "According to the first passage, what happens to a lock when the transaction ends?",
        "Based on the information provided in both passages, what is the typical maintenance effort?",
        "In the second passage, what change caused the corruption of a packfile?",
        "What does the context of the example above say?",
    ],
)
def test_questions_pointing_at_their_source(question: str) -> None:
    assert points_at_source(question)


@pytest.mark.parametrize(
    "question",
    [
        "What command creates a lightweight tag in Git?",
        "How do you refresh the Git index file after copying a repository?",
        "What is the context switch cost on Linux?",  # "context" as a word of the subject
        "Which text encoding does git log use by default?",
        "Quelle commande crée une étiquette dans Git ?",
        # The idiom, which a reviewer keeps (PostgreSQL's documentation): not a pointer at a passage.
        "In the context of foreign key constraints, what is the purpose of the REFERENCES clause?",
        "In the case of a deferred constraint, when is it checked?",
    ],
)
def test_standalone_questions_pass(question: str) -> None:
    assert not points_at_source(question)


@pytest.mark.parametrize(
    ("question", "points"),
    [
        ("根据上下文，哪个分支被变基了？", True),
        ("根据文章，潮汐每天出现几次？", True),
        ("文中提到的命令是什么？", True),
        ("本文介绍了哪种潮汐？", True),
        ("段落中描述的茶叶产自哪里？", True),
        ("この文章によると、タグを作るコマンドは何ですか？", True),
        ("上記の文章で説明されているコマンドは何ですか？", True),
        ("筆者が最初に使ったブランチは何ですか？", True),
        ("本文中で紹介されている潮汐の種類は？", True),
        # Standalone: the same words about the subject itself.
        ("上下文切换在Linux上的开销是多少？", False),
        ("如何在Git中创建轻量标签？", False),
        ("如何在Word文档中插入表格？", False),
        ("半日周潮每天出现几次？", False),
        ("Gitで軽量タグを作るコマンドは何ですか？", False),
        ("ファイルの文字コードを変えるには？", False),
    ],
)
def test_chinese_and_japanese_questions_pointing_at_their_source(question: str, points: bool) -> None:
    assert points_at_source(question) is points


def test_an_answer_inside_its_question_is_trivial() -> None:
    question = "What is the name of the file created by `git bundle create` with the tag 'cve-xxx.bundle'?"
    assert answer_in_question(question, "cve-xxx.bundle")
    assert answer_in_question("Which command, git gc or git fsck, packs objects?", "`git gc`")
    assert not answer_in_question("Which command packs loose objects?", "git gc")
    assert not answer_in_question("What does git gc do?", "the")  # no content word: nothing to say


@pytest.mark.parametrize(
    ("answer", "rejected"),
    [
        ("The context does not mention the default port.", True),
        ("The purpose is to export it.\n\nThe context provided does not specify the path.", True),
        ("Based on general knowledge, it is 9418.", True),
        ("This is not mentioned in the text.", True),
        ("Le texte ne précise pas la valeur.", True),
        ("No se menciona en el documento.", True),
        ("The default port is 9418.", False),
        ("It does not mention the branch name in the commit message.", False),
    ],
)
def test_answers_that_say_the_context_lacks_them(answer: str, rejected: bool) -> None:
    assert says_not_grounded("What is the default port?", answer) is rejected


def test_the_table_names_each_check_once_with_its_own_reason() -> None:
    assert len(set(FREE_CHECK_NAMES)) == len(FREE_CHECKS)
    assert {check.reason for check in FREE_CHECKS} == {
        SOURCE_POINTING, ANSWER_IN_QUESTION, ANSWER_NOT_GROUNDED, ANSWER_POINTING, CODE_NOT_IN_PASSAGES
    }  # fmt: skip
    both = failed_check("What is in the context?", "The context does not mention it.", set(FREE_CHECK_NAMES), ())
    assert both is not None and both.reason == SOURCE_POINTING  # the first in the table
    off = failed_check("What is in the context?", "x", {"ungrounded_answer"}, ())
    assert off is None  # a check turned off rejects nothing


def test_the_setting_names_the_same_checks_in_the_same_order() -> None:
    """`free_checks` (and the checks on by default) are declared with the settings, each check's rule here:
    the two tables name the same checks, in the order they are tried."""
    from qagen.config import FREE_CHECK_DEFAULTS, BuildConfig
    from qagen.corpus.settings import CorpusSettings

    assert tuple(FREE_CHECK_DEFAULTS) == FREE_CHECK_NAMES
    config = BuildConfig(corpus=CorpusSettings(path="docs"))
    assert config.enabled_checks() == {check.name for check in FREE_CHECKS if check.default_on}


def test_a_one_word_answer_is_in_its_question_only_with_its_own_case() -> None:
    from qagen.generation.checks.rules import answer_in_question

    # Python's docs: the exception `Full` is not given away by "a full queue" (a reviewer keeps the draft).
    assert not answer_in_question("What exception does put raise on a full queue?", "Full")
    assert answer_in_question("What does the glob function of glob return?", "glob")
    assert answer_in_question("Which Full exception does put raise?", "Full")
    assert answer_in_question("Is the default mode read only?", "read only")  # several words: case aside


@pytest.mark.parametrize(
    ("answer", "rejected"),
    [
        # Answers of Qwen2.5-1.5B that a reviewer rejects (git's and Python's documentation).
        ("To make it easier, the context provides information about how to use old and new.", True),
        ("The default timeout is 600 seconds, as mentioned in the passage about weakrefs.", True),
        ("In the first passage, it states that the archive is written.", True),
        ("This is used in Passage 2 to order the nodes.", True),
        # Ordinary answers: a context manager, a CSV writer, the idiom "in the context of".
        ("Use the object as a context manager in a with statement.", False),
        ("The writer object's writerow() method writes one row.", False),
        ("In the context of foreign keys, REFERENCES names the parent table.", False),
        ("The text is wrapped at 70 columns.", False),
    ],
)
def test_answers_that_talk_about_their_passage(answer: str, rejected: bool) -> None:
    assert answer_points_at_source("What does it do?", answer) is rejected


GIT_TAG_CHUNK = "Tag objects (created with -a, -s, or -u) are called annotated tags; see git-commit(1)."


@pytest.mark.parametrize(
    ("answer", "passages", "rejected"),
    [
        # The command is not in the chunk: the model's memory, not the document (a reviewer rejects it).
        ("`git tag`", (GIT_TAG_CHUNK,), True),
        (
            "The `timefunc` and `sleepfunc` functions.",
            ("scheduler(timefunc=time.monotonic, delayfunc=time.sleep)",),
            True,
        ),
        ("The default is ``False``.", ("doublequote: the default is True.",), True),  # letter case kept
        # The chunk holds it, as man pages and reference pages write it.
        ("Pass `-a`.", (GIT_TAG_CHUNK,), False),
        ("Run `git commit`.", (GIT_TAG_CHUNK,), False),  # git-commit(1)
        ("Use the `b16encode()` function.", ("base64.b16encode(s): encode the bytes-like object s",), False),
        ("`$ git --bare init`", ("$ git --bare init\nInitialized empty Git repository",), False),
        # A multi-hop answer may take its code from either passage.
        ("`-a` or `b16encode`", (GIT_TAG_CHUNK, "base64.b16encode(s)"), False),
        ("No code at all.", (GIT_TAG_CHUNK,), False),
    ],
)
def test_answers_writing_code_their_passages_do_not_hold(
    answer: str, passages: tuple[str, ...], rejected: bool
) -> None:
    assert code_not_in_passages("Which command?", answer, passages) is rejected


# --------------------------------------------------------------------------- the searches, as written

_PHRASE_LISTS = {
    "source_pointing": (rules._SOURCE_POINTING_PHRASES, rules._SOURCE_POINTING),
    "answer_pointing": (rules._ANSWER_POINTING_PHRASES, rules._ANSWER_POINTING),
    "not_grounded": (rules._NOT_GROUNDED_PHRASES, rules._NOT_GROUNDED),
}
# The phrases' own words, and what may stand between or inside them: texts that come near a phrase.
_WORDS = sorted(
    {word for phrases, _ in _PHRASE_LISTS.values() for word in re.findall(r"[^\W\d_]+'?", " ".join(phrases))}
    - {"b", "s", "w"}
)
# Phrases as drafts write them, for the texts to hold whole, cut, or glued to what stands around them.
_SAID = [
    "in the given context", "from this passage", "by the following text", "the first passage", "both excerpts",
    "passage 2", "according to the author", "this manual page", "the situation described", "mentioned above",
    "the writer", "selon le texte", "l'auteur", "im Text", "laut dem Abschnitt", "der Verfasser",
    "según el documento", "nel testo", "no trecho", "the context provides", "the passages also state",
    "the context does not mention", "The provided text doesn't explicitly say", "not mentioned in the passage",
    "based on general knowledge", "no information is given about", "cannot be determined from",
    "le texte ne précise pas", "n'est pas mentionnée dans", "wird im Kontext nicht", "no se menciona",
    "non è menzionato", "não está especificada",
]  # fmt: skip
_TEXTS = st.lists(
    st.one_of(
        st.sampled_from(_SAID),
        st.builds(
            lambda said, start, end: said[start:end], st.sampled_from(_SAID), st.integers(0, 9), st.integers(3, 40)
        ),
        st.sampled_from(_WORDS),
        st.sampled_from(_WORDS).map(str.upper),
        st.sampled_from([" ", "  ", "\n", "\t", ",", ".", "'", "-", "_", "x", "3", "É", "ſ", "İ", "ß", "文"]),
        st.text(max_size=3),
    ),
    max_size=10,
).map("".join)


@pytest.mark.parametrize("name", sorted(_PHRASE_LISTS))
@given(text=_TEXTS)
def test_each_phrase_begins_a_word(name: str, text: str) -> None:
    """A `\\b` and then a word's character: what `rules._WordPhrases` relies on."""
    phrases, _ = _PHRASE_LISTS[name]
    assert all(phrase.startswith(r"\b") for phrase in phrases)
    if not re.match(r"\w", text):
        assert not any(re.match(phrase[2:], text, re.IGNORECASE) for phrase in phrases)


@pytest.mark.parametrize("name", sorted(_PHRASE_LISTS))
@given(text=_TEXTS)
def test_a_search_finds_what_the_plain_alternation_finds(name: str, text: str) -> None:
    """Searched only where a word begins, an ASCII text lower-cased (`rules._WordPhrases`): the same
    match as every position tried case-blind."""
    phrases, search = _PHRASE_LISTS[name]
    every_position = re.compile("|".join(phrases), re.IGNORECASE)
    for written in (text, text.upper(), text.title()):
        plain = every_position.search(written)
        assert search.span(written) == (plain and plain.span())


def test_a_question_in_ascii_never_points_at_its_source_in_chinese_or_japanese() -> None:
    """Why `points_at_source` skips that search for ASCII questions: the pattern's ASCII is only its
    grouping, so every character it matches is one of its literals, none ASCII, and it matches no empty text."""
    pattern = rules._SOURCE_POINTING_CJK
    assert set(re.sub(r"[^\x00-\x7f]", "", pattern.pattern)) <= set("(?:|)")
    assert pattern.search("") is None


@pytest.mark.parametrize("phrase", [r"\bcontext\S", r"\b(?-i:Context)", r"\bpaſſage", r"\bİn the text"])
def test_a_phrase_that_lower_cased_would_mean_something_else_is_refused(phrase: str) -> None:
    # `\S` lower-cased is `\s`; `ſ` and `İ` match `s` and `i` case-blind, not once lower-cased.
    with pytest.raises(ValueError, match="write the phrases"):
        rules._WordPhrases((phrase,))
