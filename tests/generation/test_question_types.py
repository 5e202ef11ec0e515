"""Question types (issue 22), through the real CLI against the stand-in LLM: a build with a mix of
types, its re-run, and `qagen evaluate` of its set with the BM25 baseline; and the parts a type is
made of (shares, passage pickers, reply labels, the free check) as units."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from datasets import load_from_disk

from qagen.cli.app import main
from qagen.config import BuildConfig
from qagen.corpus.settings import CorpusSettings
from qagen.errors import ConfigError
from qagen.evaluate.metrics.scoring import deterministic_metrics
from qagen.evaluate.records import EvalItem, RagOutput
from qagen.generation.replies import parse_labelled_qa
from qagen.generation.tasks import BuildTasks
from qagen.llm.prompts import prompts_dir
from qagen.publish.card import CardContent, make_card
from qagen.question_types import (
    QUESTION_TYPES,
    QuestionTypeSpec,
    TypeCritic,
    draft_counts,
    parse_shares,
    register_question_type,
)
from qagen.question_types.pairs import shared_term_pairs
from qagen.question_types.pickers import one_chunk
from qagen.question_types.reworded import too_close
from qagen.question_types.unanswerable import ABSTENTION
from qagen.records import Chunk, Draft, Passages, RetrievedContext
from standins.corpus import write_corpus

ROOT_PROMPTS = prompts_dir()
MIX = "factoid=50,multi_hop=20,unanswerable=15,reworded=15"
DRAFTS = 40


def _invoke(*args: object) -> str:
    result = CliRunner().invoke(main, [str(arg) for arg in args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.slow
def test_a_build_of_mixed_types_then_its_evaluation(llm: Any, tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpus")
    run, evaluation = tmp_path / "run", tmp_path / "eval"
    model = ["--generator-model", "openai:stand-in", "--base-url", llm.base_url]
    build = ["build", corpus, "--out", run, *model, "-n", DRAFTS, "--chunk-size", "400", "--chunk-overlap", "40"]
    table = _invoke(*build, "--question-types", MIX, "-q")

    # Per-type counts within one draft of the requested shares of the drafts made.
    summary = json.loads((run / "summary.json").read_text())
    types = summary["question_types"]
    assert list(types) == ["factoid", "multi_hop", "unanswerable", "reworded"]
    made = sum(counts["drafted"] for counts in types.values())
    assert made == summary["funnel"]["drafted"] == DRAFTS
    for name, counts in types.items():
        assert abs(counts["drafted"] - counts["share"] / 100 * made) <= 1, name
        assert counts["requested"] == draft_counts(parse_shares(MIX), DRAFTS)[name]
        assert f"{name} ({counts['share']}%)" in table
    # Each type's own rejections are counted by what they show.
    assert types["multi_hop"]["rejected_by"].get("single_hop", 0) >= 1
    assert types["reworded"]["rejected_by"].get("too_close", 0) >= 1

    candidates, dataset = list(load_from_disk(str(run / "candidates"))), list(load_from_disk(str(run / "dataset")))
    assert {row["question_type"] for row in dataset} == set(types)
    for row in candidates:
        assert row["contexts"][0] == row["context"]
        # An unanswerable question has no retrieval target: no chunk is named where a target is read.
        target = None if row["question_type"] == "unanswerable" else row["chunk_ids"][0]
        assert row["chunk_id"] == target and row["source_doc"] == (target and row["source_docs"][0])
        if row["question_type"] == "multi_hop":  # every multi-hop row names two different chunks
            assert len(row["chunk_ids"]) == 2 and len(set(row["chunk_ids"])) == 2, row
            assert len(row["contexts"]) == len(row["source_docs"]) == len(row["start_indices"]) == 2
        else:
            assert len(row["chunk_ids"]) == 1
        if row["question_type"] == "unanswerable" and row["answer"] is not None:
            assert row["answer"] == ABSTENTION  # every unanswerable reference answer is an abstention
        if row["reason"].startswith("single_hop"):
            assert row["question_type"] == "multi_hop" and "needs_both=" in row["reason"]
        if row["reason"] == "too_close":
            assert row["question_type"] == "reworded" and row["groundedness_raw"] is None  # no critic paid
    assert sum(row["status"] == "kept" for row in candidates) == len(dataset) == summary["funnel"]["kept"]

    # A re-run makes no call.
    before = len(llm.log)
    _invoke(*build, "--question-types", MIX, "-q")
    assert len(llm.log) == before

    # The card shows the types and their counts.
    card = str(_card(summary))
    assert "| multi_hop | 20% |" in card and "`question_type` column" in card

    # `qagen evaluate` with the BM25 baseline: per-type scores, unanswerable questions by abstention.
    printed = _invoke(
        "evaluate", run, "--baseline", "bm25", "--corpus", corpus, "--reader-model", "openai:stand-in",
        "--base-url", llm.base_url, "--out", evaluation, "--chunk-size", "400",
        "--metrics", "correctness,retrieval,text", "-q",
    )  # fmt: skip
    assert "per question type:" in printed and "unanswerable" in printed
    result = json.loads((evaluation / "summary.json").read_text())
    kept = {name: sum(row["question_type"] == name for row in dataset) for name in types}
    assert result["question_types"] == {name: count for name, count in kept.items() if count}
    unanswerable = result["by_type"]["unanswerable"]
    # The stand-in's reader never declines: it fails every unanswerable question.
    assert unanswerable["abstention"]["mean"] == 0.0 and unanswerable["abstention"]["n"] == kept["unanswerable"]
    assert unanswerable["hit@7"]["n"] == 0 and unanswerable["hit@7"]["missing_by_reason"] == {
        "scored_by_abstention": kept["unanswerable"]
    }
    # Nor are the words of its answer scored: a refusal in other words is still a refusal.
    for column in ("token_f1", "context_rouge_l_recall"):
        assert unanswerable[column]["n"] == 0, column
        assert unanswerable[column]["missing_by_reason"] == {"scored_by_abstention": kept["unanswerable"]}
    assert result["metrics"]["abstention"]["missing_by_reason"] == {
        "not_its_question_type": len(dataset) - kept["unanswerable"]
    }
    assert result["by_type"]["multi_hop"]["passages_found@7"]["n"] == kept["multi_hop"]
    rows = [json.loads(line) for line in (evaluation / "results.jsonl").read_text().splitlines()]
    assert all(row["question_type"] in types for row in rows)


def _card(summary: dict[str, Any]) -> Any:
    kept = summary["funnel"]["kept"]
    content = CardContent(
        repo_id="alice/mixed", summary=summary, kept_rows=kept, candidate_rows=DRAFTS, languages=["en"],
        license="cc-by-4.0", prompts=[],
    )  # fmt: skip
    return make_card(content)


def test_shares_are_split_within_one_draft_and_refused_when_they_do_not_add_up() -> None:
    assert parse_shares(MIX) == {"factoid": 50, "multi_hop": 20, "unanswerable": 15, "reworded": 15}
    assert draft_counts(parse_shares(MIX), 41) == {"factoid": 21, "multi_hop": 8, "unanswerable": 6, "reworded": 6}
    assert draft_counts({"factoid": 34, "multi_hop": 33, "unanswerable": 33}, 10) == {
        "factoid": 4,
        "multi_hop": 3,
        "unanswerable": 3,
    }
    corpus = CorpusSettings(path="docs")
    with pytest.raises(ConfigError, match="adding up to 100"):
        BuildConfig(corpus=corpus, question_types={"factoid": 60, "multi_hop": 30})
    with pytest.raises(ConfigError, match="no question type"):
        BuildConfig(corpus=corpus, question_types={"factoid": 50, "trivia": 50})
    with pytest.raises(ConfigError, match="no share"):
        parse_shares("factoid=half")
    assert not BuildConfig(corpus=corpus).mixed and BuildConfig(corpus=corpus, question_types={"reworded": 100}).mixed


def test_a_type_named_twice_is_refused_naming_it_and_a_bare_name_is_the_whole_mix(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="names factoid twice"):
        parse_shares("factoid=50,factoid=50")
    # Collapsed, this one would add up to 100 and be taken silently as factoid=50,multi_hop=50.
    with pytest.raises(ConfigError, match="names factoid twice"):
        parse_shares("factoid=50, multi_hop=50,factoid=50")
    assert parse_shares("multi_hop") == {"multi_hop": 100}

    result = CliRunner().invoke(
        main, ["build", str(tmp_path), "--out", str(tmp_path / "run"), "--question-types", "factoid=50,factoid=50"]
    )
    assert result.exit_code == 2 and "names factoid twice" in result.output, result.output
    assert not (tmp_path / "run").exists()
    # The option's help says what a bare name means.
    help_text = " ".join(CliRunner().invoke(main, ["build", "--help"]).output.split())
    assert "a bare name is the whole mix (multi_hop: multi_hop=100)" in help_text


def test_a_corpus_with_nothing_to_pair_says_why_instead_of_an_empty_success(llm: Any, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "tides.txt").write_text("The keeper recorded the semidiurnal tides every morning with a brass rod.\n")
    model = ["--generator-model", "openai:stand-in", "--base-url", llm.base_url, "-n", "4", "-q"]

    def build(out: str, mix: str) -> Any:
        return CliRunner().invoke(
            main, ["build", str(corpus), "--out", str(tmp_path / out), *model, "--question-types", mix]
        )

    # Nothing but multi-hop drafts, and one chunk: no pair, so nothing to draft; a failure, said why.
    alone = build("alone", "multi_hop=100")
    assert alone.exit_code == 1, alone.output
    said = " ".join(alone.stderr.split())
    assert said.startswith(
        "error: Nothing could be drafted. The corpus (1 chunk) had passages for 0 of the 4 multi_hop"
    )
    assert "two chunks that share a rare term" in said and "--chunk-size" in said and "--question-types" in said
    assert "all of them" not in alone.output
    # A re-run with nothing new to do says it again rather than standing by the empty outputs.
    again = build("alone", "multi_hop=100")
    assert again.exit_code == 1 and "Nothing could be drafted" in again.stderr, again.output

    # Beside factoids the build keeps what it can, and says which drafts had no passages and why.
    mixed = build("mixed", "factoid=50,multi_hop=50")
    assert mixed.exit_code == 0, mixed.output
    assert (
        "sampled chunks       1 (the corpus had no passages for 2 of the drafts asked for: see below)" in mixed.stdout
    )
    assert "short of passages: The corpus (1 chunk) had passages for 0 of the 2 multi_hop drafts asked for" in (
        " ".join(mixed.stderr.split())
    )


def test_a_changed_mix_says_which_kept_questions_it_leaves_out_and_the_old_mix_brings_them_back(
    llm: Any, corpus: Path, tmp_path: Path
) -> None:
    run = tmp_path / "run"

    def build(mix: str) -> Any:
        args = ["build", corpus, "--out", run, "--generator-model", "openai:stand-in", "--base-url", llm.base_url]
        args += ["-n", 8]
        result = CliRunner().invoke(
            main, [str(arg) for arg in [*args, "--chunk-size", 400, "--question-types", mix, "-q"]]
        )
        assert result.exit_code == 0, result.output
        return result

    def kept_by_type() -> dict[str, int]:
        return {
            name: counts["kept"]
            for name, counts in json.loads((run / "summary.json").read_text())["question_types"].items()
        }

    build("factoid=50,unanswerable=50")
    before = kept_by_type()
    assert before["unanswerable"] >= 1  # else there is nothing to leave out and the test proves nothing
    narrowed = build("factoid=100")
    said = " ".join(narrowed.stderr.split())
    gone = before["unanswerable"]
    assert (
        f"The question types changed from factoid=50,unanswerable=50 to factoid=100: {gone} question"
        f"{'s' if gone != 1 else ''} kept before {'are' if gone != 1 else 'is'} left out of the dataset "
        f"(unanswerable {gone}). Their drafts and verdicts stay in the run: asking for factoid=50,unanswerable=50 "
        "again brings them back, with no call paid twice."
    ) in said
    assert all(row.get("question_type", "factoid") == "factoid" for row in load_from_disk(str(run / "dataset")))

    # The old mix again: its unanswerable questions come back without a call.
    llm.reset()
    build("factoid=50,unanswerable=50")
    assert kept_by_type() == before and not llm.log
    # An unchanged mix says nothing of the kind.
    assert "question types changed" not in build("factoid=50,unanswerable=50").stderr


def test_an_unanswerable_question_names_no_retrieval_target_and_the_profile_leaves_it_out(
    llm: Any, corpus: Path, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    args = ["build", corpus, "--out", run, "--generator-model", "openai:stand-in", "--base-url", llm.base_url, "-n", 12]
    _invoke(*args, "--chunk-size", 400, "--question-types", "factoid=50,unanswerable=50", "-q")
    kept = list(load_from_disk(str(run / "dataset")))
    unanswerable = [row for row in kept if row["question_type"] == "unanswerable"]
    answerable = [row for row in kept if row["question_type"] != "unanswerable"]
    assert unanswerable and answerable  # both kinds, or the test proves nothing
    for row in unanswerable:
        # No document answers it: no column names one, or a place in it.
        target = ("source_doc", "chunk_id", "start_index", "end_index", "bm25_rank")
        assert {column: row[column] for column in target} == dict.fromkeys(target), row
        # What it was drafted from is still said, in the columns that say so.
        assert row["contexts"] == [row["context"]] and len(row["source_docs"]) == len(row["chunk_ids"]) == 1
    for row in answerable:
        assert row["source_doc"] == row["source_docs"][0] and row["chunk_id"] == row["chunk_ids"][0]
        assert row["bm25_rank"] is not None and row["start_index"] == row["start_indices"][0]

    summary = json.loads((run / "summary.json").read_text())
    assert "An unanswerable question has no retrieval target: its `source_doc`" in " ".join(str(_card(summary)).split())
    profile = summary["profile"]
    assert profile["question_types"] == {"factoid": len(answerable), "unanswerable": len(unanswerable)}
    assert profile["easiness"]["bm25_rank"]["count"] == len(answerable)
    assert profile["easiness"]["ranked_first"] == sum(row["bm25_rank"] == 1 for row in answerable)
    assert profile["easiness"]["copied_share"]["count"] == sum(row["copied_share"] is not None for row in answerable)
    assert profile["coverage"]["documents_with_kept"] == len({row["source_doc"] for row in answerable})
    assert profile["coverage"]["chunks_with_kept"] == len({row["chunk_id"] for row in answerable})


def _chunk(chunk_id: str, source: str, start: int, text: str) -> Chunk:
    return Chunk(id=chunk_id, source=source, text=text, start_index=start, end_index=start + len(text))


def test_pairs_share_a_rare_term_prefer_their_own_document_and_never_overlap() -> None:
    common = "The service writes logs and reads settings. "
    chunks = [
        _chunk("a1", "a.txt", 0, common + "The zephyrine option sets the port."),
        _chunk("a2", "a.txt", 30, common + "The zephyrine option overlaps a1."),  # overlaps a1: never its partner
        _chunk("a3", "a.txt", 500, common + "Mention of quillwort and the zephyrine option in the same file."),
        _chunk("b1", "b.txt", 0, common + "Here zephyrine appears in another document."),
        _chunk("b2", "b.txt", 500, common + "And quillwort here too."),
        # Enough other chunks that a term in four of them is still rare.
        *(_chunk(f"c{i}", "c.txt", 1000 * i, common + f"Filler number {i}.") for i in range(100)),
    ]
    picked = shared_term_pairs("multi_hop")(lambda: chunks, 7, None)
    pairs = {frozenset(group.chunk_ids): group.link for group in picked.groups}
    assert frozenset(("a1", "a2")) not in pairs
    assert all(len(ids) == 2 and link for ids, link in pairs.items())
    # a1 and a3 share zephyrine in one document: a part of its own document before another document's.
    assert "zephyrine" in pairs[frozenset(("a1", "a3"))]
    # b1 and b2 share no term; each has partners only in a.txt.
    assert not any(frozenset(("b1", "b2")) <= ids for ids in pairs)
    # Asking for more than the corpus can pair says how many fell short.
    assert shared_term_pairs("multi_hop")(lambda: chunks, 7, 10).short == 10 - len(picked.groups)


TIDES = (
    "Semidiurnal tides bring two high waters and two low waters each lunar day, one every 12.42 hours. "
    "The tidal range at a semidiurnal station depends on the coastline's shape and the basin's resonance."
)


def test_a_document_and_its_near_copy_are_never_paired_without_embeddings() -> None:
    # The same section in two documents, one digit apart: either alone answers any question on both.
    chunks = [
        _chunk("tides", "tides.txt", 0, TIDES),
        _chunk("copy", "tides-2019.txt", 0, TIDES.replace("12.42", "12.43")),
        _chunk("moon", "moon.txt", 0, "The moon's pull raises the water: semidiurnal tides follow its transit."),
        *(_chunk(f"c{i}", "c.txt", 1000 * i, f"Filler number {i} about general things.") for i in range(100)),
    ]
    picked = shared_term_pairs("multi_hop")(lambda: chunks, 7, None)
    pairs = {frozenset(group.chunk_ids) for group in picked.groups}
    assert frozenset(("tides", "copy")) not in pairs
    # Each of the two still gets a partner that is not a copy of it.
    assert pairs == {frozenset(("tides", "moon")), frozenset(("copy", "moon"))}


def test_single_passage_orders_are_the_builds_for_factoids_and_a_types_own_for_the_others() -> None:
    chunks = [_chunk(f"c{i}", f"d{i % 3}.txt", i, f"Text {i}.") for i in range(30)]
    factoid = [group.chunk_ids for group in one_chunk(None)(lambda: chunks, 42, 10).groups]
    other = [group.chunk_ids for group in one_chunk("reworded")(lambda: chunks, 42, 10).groups]
    assert factoid != other
    # Asking for more extends the sample: the drafts already made stay in it.
    assert [g.chunk_ids for g in one_chunk("reworded")(lambda: chunks, 42, 15).groups][:10] == other


@pytest.mark.parametrize(
    ("reply", "label", "question", "answer"),
    [
        (
            "Multi-hop question: Which links A and B?\nAnswer: Both.",
            "Multi-hop question",
            "Which links A and B?",
            "Both.",
        ),
        ("**User question:** How do I?\n**Answer:** Like so.", "User question", "How do I?", "Like so."),
        # Another type's label is read (small models write it: 3 of SQLite's 30 drafts); prose is no label.
        ("Factoid question: Q?\nAnswer: A.", "User question", "Q?", "A."),
        ("Here is my question: Q?\nAnswer: A.", "User question", None, None),
    ],
)
def test_each_type_reads_its_own_label(reply: str, label: str, question: str | None, answer: str | None) -> None:
    parsed = parse_labelled_qa(reply, label)
    assert (parsed.question, parsed.answer) == (question, answer)


def test_reworded_drafts_that_copy_their_chunk_are_too_close() -> None:
    chunk = _chunk("c", "a.txt", 0, "The reflog records every update of a branch tip for ninety days by default.")
    item = Passages.of(chunk, "reworded")

    def draft(question: str) -> Draft:
        return Draft(id="d", chunk_id="c", model="m", prompt_hash="h", question=question, answer="90 days.")

    # Eight words in a row copied ("records every update of a branch tip for"): too close.
    assert too_close(draft("For how long does the reflog keep records every update of a branch tip for?"), item) == (
        "too_close"
    )
    # Seven in a row is a user's own phrase around the chunk's terms; so is every content word the chunk's.
    assert too_close(draft("Does the reflog keep every update of a branch tip for long?"), item) is None
    assert too_close(draft("What does the reflog record?"), item) is None
    assert too_close(draft("How long can I get back a commit I lost?"), item) is None


def test_a_type_is_asked_by_its_own_critics_with_its_own_prompts() -> None:
    shares = {name: 25 for name in QUESTION_TYPES.names()}
    config = BuildConfig(corpus=CorpusSettings(path="docs"), question_types=shares, vetting="cookbook")
    tasks = BuildTasks.for_config(config)
    asked = {name: [(c.criterion, c.prompt.name) for c in of.critics] for name, of in tasks.types.items()}
    assert ("groundedness", "critique_groundedness_multi_hop") in asked["multi_hop"]
    assert ("needs_both", "critique_needs_both") in asked["multi_hop"]
    assert [c for c, _ in asked["unanswerable"]] == ["standalone", "relevance", "not_in_corpus"]
    assert asked["reworded"] == asked["factoid"]
    assert {tasks.types[name].draft.prompt.name for name in shares} == {spec.draft_prompt for spec in QUESTION_TYPES}


def test_a_question_of_two_passages_hits_only_when_both_documents_are_retrieved() -> None:
    item = EvalItem(id="q", question="?", true_answer="A.", source_doc="a.txt", source_docs=("a.txt", "b.txt"))

    def scored(*sources: str) -> dict[str, float | None]:
        output = RagOutput(answer="A.", contexts=[RetrievedContext(text="t", source=source) for source in sources])
        return deterministic_metrics(item, output, 3, {"retrieval"})

    assert (scored("a.txt", "c.txt")["hit@k"], scored("a.txt", "c.txt")["passages_found@k"]) == (0.0, 0.5)
    assert (scored("c.txt", "b.txt", "a.txt")["hit@k"], scored("b.txt", "a.txt")["passages_found@k"]) == (1.0, 1.0)
    unanswerable = item.model_copy(update={"question_type": "unanswerable", "source_docs": ()})
    output = RagOutput(answer="A.", contexts=[RetrievedContext(text="t", source="a.txt")])
    assert deterministic_metrics(unanswerable, output, 3, {"retrieval"})["hit@k"] is None


def test_the_shares_are_a_config_key_with_the_flags_checks(tmp_path: Path) -> None:
    from qagen.cli.config_file import ConfigFileError, read_config

    config = tmp_path / "qagen.toml"
    config.write_text('[build]\nquestion_types = "factoid=50,reworded=50"\n', encoding="utf-8")
    assert read_config(config, "build") == {"question_types": "factoid=50,reworded=50"}
    config.write_text('[build]\nquestion_types = "factoid=50"\n', encoding="utf-8")
    with pytest.raises(ConfigFileError, match=r"`build\.question_types` is not valid: .*adding up to 100"):
        read_config(config, "build")


SHORT_PROMPT = (ROOT_PROMPTS / "qa_generation.txt").read_text(encoding="utf-8").replace("Factoid", "Short")
SHORT_CRITIC = (ROOT_PROMPTS / "critique_groundedness.txt").read_text(encoding="utf-8") + "\nBe strict.\n"


@pytest.fixture()
def short_type(tmp_path: Path) -> Iterator[QuestionTypeSpec]:
    """A question type registered in Python with a prompt folder of its own: its draft prompt and the
    prompt it asks groundedness with."""
    folder = tmp_path / "short_prompts"
    folder.mkdir()
    (folder / "qa_short.txt").write_text(SHORT_PROMPT, encoding="utf-8")
    (folder / "critique_groundedness_short.txt").write_text(SHORT_CRITIC, encoding="utf-8")
    spec = register_question_type(
        QuestionTypeSpec(
            name="short",
            help="a factoid in a few words",
            draft_prompt="qa_short",
            question_label="Short question",
            picker=one_chunk(None),
            critics=(TypeCritic("groundedness", "critique_groundedness_short"), TypeCritic("standalone")),
            prompt_folder=str(folder),
        )
    )
    yield spec
    QUESTION_TYPES.unregister("short")


def test_a_type_brings_its_own_prompt_folder(short_type: QuestionTypeSpec, tmp_path: Path) -> None:
    config = BuildConfig(corpus=CorpusSettings(path="docs"), question_types={"short": 100}, vetting="cookbook")
    short = BuildTasks.for_config(config).types["short"]
    assert (short.draft.prompt.name, short.draft.prompt.text) == ("qa_short", SHORT_PROMPT)
    asked = {critic.criterion: critic.prompt for critic in short.critics}
    assert asked["groundedness"].text == SHORT_CRITIC and asked["standalone"].name == "critique_standalone"
    # The run's prompts folder still replaces the type's own prompt, as it replaces a bundled one.
    replaced = tmp_path / "mine"
    replaced.mkdir()
    (replaced / "qa_short.txt").write_text(SHORT_PROMPT + "\n", encoding="utf-8")
    config = config.model_copy(update={"prompts_dir": str(replaced)})
    assert BuildTasks.for_config(config).types["short"].draft.prompt.text == SHORT_PROMPT + "\n"


def test_a_type_s_own_prompt_may_not_take_a_bundled_prompt_s_name(short_type: QuestionTypeSpec) -> None:
    folder = Path(short_type.prompt_folder or "")
    (folder / "qa_generation.txt").write_text(SHORT_PROMPT, encoding="utf-8")
    shadowing = dataclasses.replace(short_type, name="shadow", draft_prompt="qa_generation")
    with pytest.raises(ConfigError, match=r"brings its own qa_generation.txt, the name of one of qagen's bundled"):
        shadowing.load_prompt("qa_generation")


def test_a_draft_several_critics_reject_counts_once_in_its_types_funnel(llm: Any, tmp_path: Path) -> None:
    # Every critic asked, most rejecting: a draft rejected by several critics is still one rejected draft.
    llm.configure(pass_rate=0.3)
    corpus = write_corpus(tmp_path / "corpus")
    run = tmp_path / "run"
    model = ["--generator-model", "openai:stand-in", "--base-url", llm.base_url]
    _invoke("build", corpus, "--out", run, *model, "-n", 12, "--question-types", "factoid=50,multi_hop=50",
            "--vetting", "cookbook", "--all-critics", "--chunk-size", "400", "--chunk-overlap", "40", "-q")  # fmt: skip
    types = json.loads((run / "summary.json").read_text())["question_types"]
    candidates = list(load_from_disk(str(run / "candidates")))
    several = [row for row in candidates if row["status"] == "rejected" and row["reason"].count("<") > 1]
    assert several, "no draft was rejected by more than one critic: the test shows nothing"
    for name, counts in types.items():
        rejected = [row for row in candidates if row["question_type"] == name and row["status"] == "rejected"]
        assert counts["rejected"] == len(rejected) == sum(counts["rejected_by"].values()), name
        assert counts["rejected"] + counts["kept"] <= counts["drafted"], name
