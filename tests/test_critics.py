"""The critic registry (`qagen.critics`): declared once, read by the build, the settings and the stand-in."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from qagen.config import BuildConfig
from qagen.corpus.settings import CorpusSettings
from qagen.critics import CRITICS, register_critic
from qagen.errors import ConfigError
from qagen.generation.tasks import BuildTasks
from qagen.records import CandidateRow, DatasetRow
from standins.llm.prompt_recognition import classify_prompt

CLARITY = """You will be given a question.
Your task is to rate how clearly worded this question is, from 1 (garbled) to 5 (crystal clear).

Answer:::
Evaluation: (your rationale for the rating, as a text)
Total rating: (your rating, as a number between 1 and 5)

<question>
Question: {question}
</question>

Answer:::"""


@pytest.fixture()
def clarity(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / "critique_clarity.txt").write_text(CLARITY, encoding="utf-8")
    register_critic("clarity", help="worded clearly", prompt_folder=tmp_path, threshold=3)
    yield tmp_path
    CRITICS.remove("clarity")


def _config(**fields: object) -> BuildConfig:
    # The registry's mechanics, shown on the cookbook's three critics (the checks vetting asks others).
    return BuildConfig.model_validate({"corpus": CorpusSettings(path="x"), "vetting": "cookbook", **fields})


def test_the_cookbook_critics_are_declared_once_with_their_columns() -> None:
    assert CRITICS.names() == ("groundedness", "relevance", "standalone")
    # Cheapest first: the two that read only the question before the one that reads the chunk.
    assert [spec.name for spec in CRITICS.asked()] == ["standalone", "relevance", "groundedness"]
    for spec in CRITICS:
        assert spec.own_columns
        assert {f"{spec.name}_score", f"{spec.name}_eval", f"{spec.name}_prompt_hash"} <= set(DatasetRow.model_fields)
        assert f"{spec.name}_raw" in CandidateRow.model_fields
    assert _config().thresholds() == {"groundedness": 4, "relevance": 4, "standalone": 4}


def test_a_critic_registered_in_python_is_asked_last_with_its_threshold_and_recognised(clarity: Path) -> None:
    config = _config(min_score=4)
    tasks = BuildTasks.for_config(config)
    assert [task.criterion for task in tasks.critics] == ["standalone", "relevance", "groundedness", "clarity"]
    assert config.thresholds()["clarity"] == 3  # its own default, not min_score
    assert _config(min_scores={"clarity": 5}).threshold("clarity") == 5
    # The stand-in LLM tells its prompt from the others' by the registry alone.
    prompt = tasks.critic("clarity").prompt.render(question="What is the tide?")
    info = classify_prompt(prompt)
    assert (info.kind, info.criterion, info.question) == ("critique", "clarity", "What is the tide?")
    other = tasks.critic("standalone").prompt.render(question="What is the tide?")
    assert classify_prompt(other).criterion == "standalone"


def test_a_name_taken_or_unknown_and_a_prompt_reading_nothing_are_refused(tmp_path: Path, clarity: Path) -> None:
    with pytest.raises(ConfigError, match="registered already"):
        register_critic("clarity", help="again")
    with pytest.raises(ConfigError, match="`min_scores` names beauty"):
        _config(min_scores={"beauty": 3})
    with pytest.raises(ConfigError, match="`prompts_dir`"):
        _config(critics=["specificity"])
    with pytest.raises(ConfigError, match="registered already"):
        _config(critics=["clarity"], prompts_dir=str(tmp_path))
    folder = tmp_path / "own"
    folder.mkdir()
    (folder / "critique_vague.txt").write_text("Rate it. Total rating:", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"critique_vague.txt of the critic vague lacks \{question\}"):
        BuildTasks.for_config(_config(critics=["vague"], prompts_dir=str(folder)))
    (folder / "critique_vague.txt").write_text("Rate {question} by {reference}. Total rating:", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"vague has unknown placeholders \['reference'\]"):
        BuildTasks.for_config(_config(critics=["vague"], prompts_dir=str(folder)))
    (folder / "critique_vague.txt").unlink()
    with pytest.raises(ConfigError, match=r"has no critique_missing\.txt"):
        BuildTasks.for_config(_config(critics=["missing"], prompts_dir=str(folder)))


def test_a_verdict_read_from_probabilities_is_what_the_cut_applies_to() -> None:
    from qagen.critics import BUNDLED_OPT_IN
    from qagen.generation.vetting import decide
    from qagen.records import Critique

    def critique(score: int, probability: float | None) -> Critique:
        return Critique(
            id="k", model="m", draft_id="d", criterion="x", prompt_hash="h", score=score, probability=probability
        )

    relevance = CRITICS.get("relevance")
    # A written 4 whose rating tokens hold much of 2: its expectation decides, and the verdict shows it.
    verdict = decide(relevance, critique(4, 3.62), 4)
    assert verdict is not None and not verdict.passed
    assert (verdict.written, verdict.measured_as, verdict.measurement, verdict.cut) == (4, "expected_rating", 3.62, 4)
    assert verdict.why == "relevance=3.62<4"
    written = decide(relevance, critique(4, None), 4)
    assert written is not None and written.passed and written.measured_as == "written"  # no probabilities
    # A yes/no critic: P(yes) against its cut, whatever was written.
    clear = BUNDLED_OPT_IN.get("clear")
    assert all(v and v.passed for v in [decide(clear, critique(1, 0.72), 0.7), decide(clear, critique(5, None), 0.7)])
    rejected = decide(clear, critique(5, 0.69), 0.7)
    assert rejected is not None and not rejected.passed and rejected.measurement == 0.69
    assert rejected.why == "not_standalone (clear P(yes)=0.69<0.70)"
    said_no = decide(clear, critique(1, None), 0.7)
    assert said_no is not None and not said_no.passed and said_no.measurement is None
    assert said_no.why == "not_standalone (clear=no)"


def test_a_readers_agreement_is_judged_when_filtering() -> None:
    from qagen.critics import BUNDLED_OPT_IN
    from qagen.generation.vetting import READER_AGREEMENT, decide
    from qagen.records import Critique

    reader = BUNDLED_OPT_IN.get("reader")

    def read(score: int, agreement: float | None, answer: str | None) -> Critique:
        return Critique(
            id="k", model="m", draft_id="d", criterion="reader", prompt_hash="h", score=score, agreement=agreement,
            rationale=answer,
        )  # fmt: skip

    def passed(critique: Critique) -> bool:
        verdict = decide(reader, critique, READER_AGREEMENT)
        assert verdict is not None
        return verdict.passed

    assert passed(read(1, READER_AGREEMENT, "git gc"))  # the stored score does not decide
    assert not passed(read(5, READER_AGREEMENT - 0.01, "git gc"))
    assert not passed(read(1, None, None))  # no answer found: its written verdict


def test_a_vetter_decides_as_vet_with_each_builds_cuts() -> None:
    """`Vetter` (the final write's, each check's spec and cut found once) against `vet` itself, critique by
    critique, under settings that move the cuts; one vetter per settings."""
    from qagen.generation.vetting import Vetter, vet
    from qagen.records import Critique

    critiques = [
        Critique(
            id=f"c{n}", model="m", draft_id="d", criterion=criterion, prompt_hash="h", score=score,
            probability=probability, agreement=agreement, rationale="git gc",
        )
        for n, (criterion, score, probability, agreement) in enumerate([
            ("supported", 5, 0.63, None), ("supported", 1, 0.81, None), ("supported", 5, None, None),
            ("reader", 5, None, 0.2), ("reader", 1, None, 0.7), ("clear", 5, 0.69, None),
            ("relevance", 4, 3.62, None), ("relevance", 3, None, None), ("groundedness", 4, None, None),
        ])
    ]  # fmt: skip
    for changes in ({}, {"cuts": {"supported": 0.9, "reader": 0.1}, "min_scores": {"relevance": 3}}):
        config = _config(critics=["reader", "clear", "supported"], **changes)
        vetter = Vetter(config)
        for critique in critiques * 2:  # (the second time from what the first found)
            assert vetter.vet(critique) == vet(config, critique), (changes, critique.id)
            assert vetter.spec(critique.criterion) == config.critic_registry().get(critique.criterion)
