"""The checks that stay honest with a small model, through a whole build against the stand-in server:
the reader (answering the question from the passages alone), the yes/no checks read as P(yes), and the
fallback when a server sends no token probabilities."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from datasets import load_from_disk

from qagen.config import BuildConfig, ChunkSettings, CorpusSettings
from qagen.generation.pipeline import NO_TOKEN_PROBABILITIES, build
from qagen.llm.backends import ModelSettings
from qagen.records import Critique

CHECKS = ("clear", "reader", "supported")


def _config(corpus: Path, llm: Any, **settings: Any) -> BuildConfig:
    model = ModelSettings(spec="openai:stand-in", base_url=llm.base_url)
    return BuildConfig(
        corpus=CorpusSettings(path=str(corpus)),
        chunking=ChunkSettings(chunk_size=400, chunk_overlap=40),
        n_generations=settings.pop("n_generations", 12),
        generator=model,
        critic=model,
        critics=CHECKS,
        dedup_embeddings=None,
        # The checks beside the cookbook's critics, unless a test asks for the checks vetting alone.
        vetting=settings.pop("vetting", "cookbook"),
        **settings,
    )


def _critiques(run: Path) -> list[Critique]:
    lines = (run / "critiques.jsonl").read_text(encoding="utf-8").splitlines()
    return [Critique.model_validate_json(line) for line in lines]


def _asked(llm: Any, question: str) -> list[str]:
    """The critics the stand-in was asked about a question, in order."""
    return [entry["criterion"] for entry in llm.log if entry.get("question") == question and entry.get("criterion")]


def test_a_reader_that_answers_otherwise_rejects_before_any_later_critic(
    corpus: Path, llm: Any, tmp_path: Path
) -> None:
    llm.configure(reader_mismatch_rate=1.0, pass_rate=1.0, logprobs=True)
    run = tmp_path / "run"
    build(_config(corpus, llm), run, progress=False)
    candidates = list(load_from_disk(str(run / "candidates")))
    mismatched = [row for row in candidates if row["reason"].startswith("answer_mismatch")]
    assert mismatched and not load_from_disk(str(run / "dataset")).num_rows
    for row in mismatched:
        # Asked in their order, the reader stops the chain: neither `supported` nor groundedness is paid.
        assert _asked(llm, row["question"]) == ["standalone", "clear", "relevance", "reader"], row["question"]
        assert row["reason"] == "answer_mismatch (reader agreement=0.00<0.50) (supported, groundedness not asked)"
    readers = [record for record in _critiques(run) if record.criterion == "reader"]
    assert readers and all(record.agreement is not None and record.agreement < 0.5 for record in readers)
    assert all(record.rationale and "Something else" in record.rationale for record in readers)


def test_a_reader_that_finds_no_answer_rejects_as_not_answered(corpus: Path, llm: Any, tmp_path: Path) -> None:
    llm.configure(reader_unanswered_rate=1.0, pass_rate=1.0)
    run = tmp_path / "run"
    build(_config(corpus, llm, n_generations=6), run, progress=False)
    reasons = {row["reason"] for row in load_from_disk(str(run / "candidates")) if row["status"] == "rejected"}
    assert reasons == {"not_answered_by_passage (reader: no answer found) (supported, groundedness not asked)"}


def test_an_unanswerable_question_the_corpus_answers_is_rejected_before_its_corpus_critic(
    corpus: Path, llm: Any, tmp_path: Path
) -> None:
    llm.configure(pass_rate=1.0, answerable_rate=0.5)
    run = tmp_path / "run"
    config = _config(corpus, llm, n_generations=16, question_types={"factoid": 50, "unanswerable": 50})
    build(config, run, progress=False)
    rows = [row for row in load_from_disk(str(run / "candidates")) if row["question_type"] == "unanswerable"]
    answerable = [row for row in rows if row["reason"].startswith("answerable (reader")]
    kept = [row for row in rows if row["status"] == "kept"]
    assert answerable and kept  # the reader answered about half of them from the corpus search
    for row in answerable:
        assert "not_in_corpus" not in _asked(llm, row["question"]) and "supported" not in _asked(llm, row["question"])
    for row in kept:  # what the search found did not answer them; `supported` is never asked of an abstention
        assert _asked(llm, row["question"])[-2:] == ["reader", "not_in_corpus"]


def test_verdicts_are_read_as_probabilities_when_the_server_sends_them(corpus: Path, llm: Any, tmp_path: Path) -> None:
    llm.configure(logprobs=True)
    run = tmp_path / "run"
    build(_config(corpus, llm), run, progress=False)
    records = [record for record in _critiques(run) if record.ok]
    rated = [record for record in records if record.criterion in ("standalone", "relevance", "groundedness")]
    yes_no = [record for record in records if record.criterion in ("clear", "supported")]
    assert rated and yes_no
    for record in rated:  # the stand-in's alternatives: 0.9 of the written rating d, 0.1 of d + 1
        assert record.score is not None and record.probability == pytest.approx(min(5.0, record.score + 0.1))
    for record in yes_no:  # P(yes): 0.9 for a yes and 0.1 for a no
        assert record.probability == pytest.approx(0.9 if record.score == 5 else 0.1)


def test_a_server_without_token_probabilities_falls_back_with_one_sentence(
    corpus: Path, llm: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    llm.configure(logprobs=False)
    run = tmp_path / "run"
    build(_config(corpus, llm, n_generations=6), run, progress=False)
    said = capsys.readouterr().err
    assert said.count(NO_TOKEN_PROBABILITIES) == 1
    assert all(record.probability is None for record in _critiques(run))
    summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    assert summary["funnel"]["drafted"] == 6
    # Asked not to ask, the build does not ask (a server that would send them sends none) nor say anything.
    llm.configure(logprobs=True)
    other = tmp_path / "other"
    config = _config(corpus, llm, n_generations=6)
    quiet = config.model_copy(update={"critic": config.critic.model_copy(update={"top_logprobs": 0})})
    build(quiet, other, progress=False)
    assert NO_TOKEN_PROBABILITIES not in capsys.readouterr().err
    assert _critiques(other) and all(record.probability is None for record in _critiques(other))


def test_a_rerun_pays_for_no_reader_call(corpus: Path, llm: Any, tmp_path: Path) -> None:
    llm.configure(logprobs=True)
    run = tmp_path / "run"
    config = _config(corpus, llm, n_generations=8)
    build(config, run, progress=False)
    calls = len(llm.log)
    assert any(entry.get("criterion") == "reader" for entry in llm.log)
    build(config, run, progress=False)
    assert len(llm.log) == calls


def test_a_model_that_refuses_token_probabilities_is_asked_without_them(
    corpus: Path, llm: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    llm.configure(refuse_logprobs=True)
    run = tmp_path / "run"
    build(_config(corpus, llm, n_generations=4, concurrency=1), run, progress=False)
    refused = [entry for entry in llm.log if entry.get("kind") == "error"]
    assert len(refused) == 1  # once, one call at a time: the critics' later calls do not ask again
    records = _critiques(run)
    assert records and all(record.ok and record.probability is None for record in records)
    assert capsys.readouterr().err.count(NO_TOKEN_PROBABILITIES) == 1


def test_checks_vetting_asks_the_yes_no_checks_in_place_of_the_cookbook_critics(
    corpus: Path, llm: Any, tmp_path: Path
) -> None:
    llm.configure(logprobs=True, pass_rate={"supported": 0.5})
    run = tmp_path / "run"
    config = _config(corpus, llm, n_generations=12).model_copy(update={"vetting": "checks", "critics": ()})
    build(config, run, progress=False)
    asked = {entry["criterion"] for entry in llm.log if entry.get("criterion")}
    assert asked == {"supported"}  # of factoids: `clear` and the reader are asked of the other types alone
    rows = list(load_from_disk(str(run / "candidates")))
    kept = [row for row in rows if row["status"] == "kept"]
    rejected = [row for row in rows if row["reason"].startswith("unsupported_answer (supported P(yes)=")]
    assert kept and rejected
    for row in kept:  # the cookbook's columns are there, empty: no such critic was asked
        assert row["groundedness_score"] is None and row["standalone_score"] is None
        assert {verdict["name"] for verdict in row["extra_critics"]} == {"supported"}


def test_checks_vetting_asks_clear_of_the_types_that_list_it_and_of_every_type_when_named(corpus: Path) -> None:
    from qagen.generation.tasks import BuildTasks

    every = {"factoid": 25, "multi_hop": 25, "unanswerable": 25, "reworded": 25}
    config = BuildConfig(corpus=CorpusSettings(path=str(corpus)), question_types=every, vetting="checks")

    def asked(config: BuildConfig) -> dict[str, list[str]]:
        return {
            name: [t.criterion for t in tasks.critics] for name, tasks in BuildTasks.for_config(config).types.items()
        }

    assert asked(config) == {
        "factoid": ["supported"],
        "multi_hop": ["clear", "first_alone", "second_alone", "supported", "needs_both"],
        "unanswerable": ["clear", "reader", "not_in_corpus"],
        "reworded": ["supported"],
    }
    named = asked(config.model_copy(update={"critics": ("clear",)}))
    assert all(critics[0] == "clear" for critics in named.values()), named


def test_the_funnel_says_duplicates_by_meaning_were_not_looked_for_without_a_model(
    corpus: Path, llm: Any, tmp_path: Path
) -> None:
    from qagen.generation.write import funnel_table

    result = build(_config(corpus, llm, n_generations=4), tmp_path / "run", progress=False)
    line = next(line for line in funnel_table(result.summary).splitlines() if "same meaning" in line)
    assert line.split()[-1] != "0" and "not looked for" in line


def test_a_multi_hop_question_one_passage_answers_is_rejected_as_single_hop_before_supported(
    corpus: Path, llm: Any, tmp_path: Path
) -> None:
    llm.configure(pass_rate=1.0, logprobs=True, single_hop_rate=0.5)
    run = tmp_path / "run"
    config = _config(corpus, llm, n_generations=16, question_types={"multi_hop": 100}, vetting="checks")
    # The stand-in's questions one passage answers carry every part's answer, encoded (its lone readers give
    # them): longer than a question may be.
    build(config.model_copy(update={"critics": (), "max_question_chars": 5000}), run, progress=False)
    rows = list(load_from_disk(str(run / "candidates")))
    single = [row for row in rows if row["reason"].startswith("single_hop (first_alone")]
    kept = [row for row in rows if row["status"] == "kept"]
    assert single and kept  # about half: one passage alone answers them
    for row in single:  # the first passage alone gives the second part's answer too: rejected before `supported`
        assert _asked(llm, row["question"]) == ["clear", "first_alone"], row["question"]
    for row in kept:  # neither passage alone answers: both lone readers found nothing, then the later critics
        assert _asked(llm, row["question"])[-4:] == ["first_alone", "second_alone", "supported", "needs_both"]
    lone = [record for record in _critiques(run) if record.criterion in ("first_alone", "second_alone")]
    assert {record.score for record in lone} == {1, 5}
    assert all(record.agreement is not None for record in lone if record.score == 1)


def test_a_resumed_run_reads_each_stored_verdict_as_the_first_run_did(corpus: Path, llm: Any, tmp_path: Path) -> None:
    # A "Yes" at P(yes) 0.55 is a no: the first run stops that draft's critics there, and a resumed run,
    # reading the stored verdicts, must stop at the same place and so make no call.
    llm.configure(logprobs=True, pass_rate=1.0, doubtful_yes_rate=0.5)
    run = tmp_path / "run"
    config = _config(corpus, llm, n_generations=10)
    build(config, run, progress=False)
    doubted = [record for record in _critiques(run) if record.score == 5 and (record.probability or 1.0) < 0.6]
    assert doubted, "no yes/no verdict was written yes and read as no"
    calls = len(llm.log)
    # As a run stopped before its outputs were written: no stamp says the build has nothing to do.
    (run / "outputs.stamp.json").unlink()
    build(config, run, progress=False)
    assert len(llm.log) == calls
