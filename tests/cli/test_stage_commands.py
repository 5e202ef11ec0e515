"""The stage commands (`chunk`, `generate`, `critique`, `filter`): their own options, values that do
not stick, re-filtering that tells "not asked" from "failed", and the traps of a first hour."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result
from datasets import load_from_disk

from qagen.cli.app import main
from qagen.cli.build_settings import PER_INVOCATION, config_from_options
from qagen.cli.stages import stage
from qagen.config import BuildConfig
from qagen.corpus.settings import ChunkSettings, CorpusSettings
from qagen.llm.backends import ModelSettings

SMALL = ["--chunk-size", "400", "--chunk-overlap", "40", "--seed", "7"]


def _invoke(*args: object) -> Result:
    return CliRunner().invoke(main, [str(arg) for arg in args], catch_exceptions=False)


def _build(llm: Any, corpus: Path, out: Path, *extra: object, n: int = 40) -> Result:
    model = ["--generator-model", "openai:stand-in", "--base-url", llm.base_url]
    return _invoke("build", corpus, "--out", out, *model, "-n", n, *SMALL, "-q", *extra)


def _candidates(run: Path) -> list[dict[str, Any]]:
    return list(load_from_disk(str(run / "candidates")))


def _summary(run: Path) -> dict[str, Any]:
    summary: dict[str, Any] = json.loads((run / "summary.json").read_text())
    return summary


def _critic_calls(llm: Any) -> int:
    return sum(1 for entry in llm.log if entry["kind"] == "critique")


# --- re-filtering ---------------------------------------------------------------------------------
def test_refiltering_lower_reports_undecided_drafts_not_failures_and_the_default_returns(
    llm: Any, corpus: Path, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    # The 1-5 ratings: a 3 stops the critics at threshold 4 and passes at 3 (a yes/no check has no 3).
    assert _build(llm, corpus, run, "--vetting", "cookbook").exit_code == 0
    built, built_summary = _candidates(run), _summary(run)

    lowered = _invoke("stage", "filter", run, "--min-score", "3")
    assert lowered.exit_code == 0, lowered.output
    funnel = _summary(run)["funnel"]
    assert funnel["critique_failed"] == {} and "not_critiqued_yet" not in lowered.output
    undecided = [row for row in _candidates(run) if row["status"] == "undecided"]
    # Drafts whose critics a 3 stopped at threshold 4: at 3 they pass and need the critics never asked.
    assert undecided and funnel["undecided"] == {"generation": 0, "critique": len(undecided)}
    for row in undecided:
        assert row["reason"].startswith("critique:") and row["reason"].endswith(":not_asked")
        assert 3 in {row["standalone_score"], row["relevance_score"]}
    calls = funnel["undecided_calls"]["critique"]
    assert calls == sum(row["reason"].count("not_asked") for row in undecided)
    assert f"undecided {len(undecided)} (critique {len(undecided)})" in " ".join(lowered.output.split())
    assert f"`qagen stage critique {run} --min-score 3` decides them (up to {calls} calls)." in lowered.output

    # No sticky threshold: without the option, filter applies the 4 its --help shows.
    again = _invoke("stage", "filter", run)
    assert again.exit_code == 0 and "decides them" not in again.output
    assert _summary(run)["thresholds"] == {"groundedness": 4, "relevance": 4, "standalone": 4}
    assert _summary(run)["funnel"] == built_summary["funnel"] and _candidates(run) == built

    # The critique the sentence names decides them, asking only the critics never asked ...
    before = _critic_calls(llm)
    assert _invoke("stage", "critique", run, "--min-score", "3", "-q").exit_code == 0
    assert 0 < _critic_calls(llm) - before <= calls
    assert _invoke("stage", "filter", run, "--min-score", "3").exit_code == 0
    assert _summary(run)["funnel"]["undecided"] == {"generation": 0, "critique": 0}
    assert max(llm.requests_by_body().values()) == 1  # no call paid twice in the run directory
    # ... to exactly what a build at 3 gives.
    assert _build(llm, corpus, tmp_path / "at3", "--min-score", "3", "--vetting", "cookbook").exit_code == 0
    assert _candidates(run) == _candidates(tmp_path / "at3")


def test_per_invocation_settings_take_their_default_and_run_settings_stay(tmp_path: Path) -> None:
    stored = BuildConfig(
        corpus=CorpusSettings(path="/docs"),
        n_generations=30,
        generator=ModelSettings(spec="openai:g", base_url="http://127.0.0.1:1/v1", timeout=5, rpm=10),
        critic=ModelSettings(spec="openai:c", base_url="http://127.0.0.1:2/v1", timeout=5, rpm=10),
        min_score=2,
        min_scores={"relevance": 5},
        max_answer_chars=10,
        concurrency=2,
        max_tokens=100,
        all_critics=True,
        price_input=1.0,
    )
    for command in ("generate", "critique", "filter"):
        context = stage.commands[command].make_context(command, [str(tmp_path)])
        options = {key: value for key, value in context.params.items() if key not in {"run_dir", "quiet"}}
        config = config_from_options(context, options, stored=stored, fixed=("generator", "critic"))
        defaults = BuildConfig(corpus=stored.corpus)
        for field in ("min_score", "min_scores", "max_answer_chars", "concurrency", "max_tokens", "all_critics"):
            assert getattr(config, field) == getattr(defaults, field), (command, field)
        assert (config.generator.timeout, config.critic.rpm) == (120.0, None), command
        # The run's own settings: the sample, the models and their servers, the prices.
        assert (config.n_generations, config.price_input) == (30, 1.0), command
        assert (config.generator.spec, config.critic.spec) == ("openai:g", "openai:c"), command
        assert config.critic.base_url == "http://127.0.0.1:2/v1", command


def test_a_run_setting_given_by_set_or_a_config_file_is_given(tmp_path: Path) -> None:
    """On a stage command, `--set` (or `--config`) gives a run setting as its flag does; not given, it stays."""
    stored = BuildConfig(corpus=CorpusSettings(path="/docs"), generator=ModelSettings(spec="openai:g"), audience="ops")
    config_file = tmp_path / "q.toml"
    config_file.write_text('[build]\naudience = "students"\n', encoding="utf-8")
    for command, given, field, expected in (
        ("generate", ["--set", "generator.spec=openai:other"], "generator", "openai:other"),
        ("generate", [], "generator", "openai:g"),
        ("critique", ["--set", "build.audience=admins"], "audience", "admins"),
        ("critique", ["--config", str(config_file)], "audience", "students"),
        ("critique", [], "audience", "ops"),
    ):
        context = stage.commands[command].make_context(command, [str(tmp_path), *given])
        options = {key: value for key, value in context.params.items() if key not in {"run_dir", "quiet"}}
        config = config_from_options(context, options, stored=stored, fixed=("generator", "critic"))
        value = config.generator.spec if field == "generator" else config.audience
        assert value == expected, (command, given)


@pytest.mark.parametrize("command", ["stage generate", "batch export"])
def test_a_new_question_type_mix_replaces_the_stored_one_as_build_does(command: str, tmp_path: Path) -> None:
    stored = BuildConfig(corpus=CorpusSettings(path="/docs"), question_types={"factoid": 50, "multi_hop": 50})
    click_command: click.Command = main
    for name in command.split():
        assert isinstance(click_command, click.Group)
        click_command = click_command.commands[name]
    for given, expected in (
        (["--question-types", "multi_hop=100"], {"multi_hop": 100}),
        (["--question-types", "factoid=20,unanswerable=80"], {"factoid": 20, "unanswerable": 80}),
        ([], {"factoid": 50, "multi_hop": 50}),  # not given: the run's own
    ):
        context = click_command.make_context(command, [str(tmp_path), *given])
        options = {key: value for key, value in context.params.items() if key not in {"run_dir", "quiet", "out"}}
        config = config_from_options(context, options, stored=stored, fixed=())
        assert config.question_types == expected, given


def test_each_per_invocation_option_shows_the_librarys_default() -> None:
    """What `--help` shows is what a stage command applies: the click default is the library's."""
    config, model = BuildConfig(corpus=CorpusSettings(path="x")), ModelSettings(spec="m")
    names = {"min_groundedness", "min_relevance", "min_standalone", "min_critic", "cut"}  # overrides: none by default
    for command in (main.commands["build"], *(stage.commands[name] for name in ("generate", "critique", "filter"))):
        for parameter in command.params:
            if parameter.name in PER_INVOCATION and parameter.name not in names:
                library = getattr(config, parameter.name, None)
                if parameter.name in {"rpm", "max_retries", "timeout"}:
                    library = getattr(model, parameter.name)
                assert parameter.default == library, (command.name, parameter.name)


# --- each command, its own options ----------------------------------------------------------------
OWN_OPTIONS = {
    "chunk": {"--out", "--hf-dataset", "--split", "--text-column", "--source-column", "--chunk-size",
              "--chunk-overlap", "--length-unit", "--encoding", "--seed", "--update-corpus", "--quiet"},
    "generate": {"--n-generations", "--per-chunk", "--question-types", "--pair-embeddings", "--generator-model",
                 "--model", "--base-url", "--api-key-env",
                 "--temperature", "--max-output-tokens", "--prompts", "--concurrency", "--rpm", "--max-retries",
                 "--timeout", "--max-failure-rate", "--max-tokens", "--max-cost", "--price-input", "--price-output",
                 "--price-cached-input", "--quiet"},
    "critique": {"--critic-model", "--critic-base-url", "--critic-api-key-env", "--critic-temperature",
                 "--critic-max-output-tokens", "--audience", "--prompts", "--vetting", "--critic", "--concurrency",
                 "--rpm", "--max-retries", "--timeout", "--max-failure-rate", "--all-critics", "--min-score",
                 "--min-groundedness", "--min-relevance", "--min-standalone", "--min-critic", "--cut",
                 "--max-answer-chars", "--max-question-chars", "--free-checks", "--evidence-check",
                 "--max-copied-share", "--max-tokens", "--max-cost", "--price-input", "--price-output",
                 "--price-cached-input", "--quiet"},
    "filter": {"--min-score", "--min-groundedness", "--min-relevance", "--min-standalone", "--min-critic", "--cut",
               "--precision", "--confidence", "--certify-on", "--max-answer-chars", "--max-question-chars",
               "--dedup-threshold",
               "--free-checks", "--evidence-check", "--max-copied-share", "--dedup-embeddings",
               "--semantic-dedup-threshold"},
}  # fmt: skip


@pytest.mark.parametrize("command", sorted(OWN_OPTIONS))
def test_stage_commands_take_only_the_options_that_apply(command: str) -> None:
    params = stage.commands[command].params
    flags = {flag for p in params if isinstance(p, click.Option) for flag in p.opts if flag.startswith("--")}
    assert flags == {*OWN_OPTIONS[command], "--config", "--set"}  # the settings of a file, or one at a time
    # Run settings say where their value comes from; per-invocation ones show their default.
    help_text = " ".join(_invoke("stage", command, "--help").output.split())
    if command in {"generate", "critique"}:
        assert "--prompts DIR Folder of your own prompt files" in help_text
        assert help_text.count("[default: the run's") >= 5


@pytest.mark.parametrize(
    ("command", "option"),
    [("filter", "-n"), ("filter", "--generator-model"), ("generate", "--critic-model"), ("generate", "--min-score"),
     ("critique", "--generator-model"), ("critique", "-n"), ("critique", "--dedup-threshold")],
)  # fmt: skip
def test_an_option_that_does_not_apply_is_wrong_usage(command: str, option: str, tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["stage", command, str(tmp_path), option, "3"])
    assert result.exit_code == 2 and "No such option" in result.output


def test_staged_critics_are_chosen_by_critique_not_fixed_by_generate(llm: Any, corpus: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert _invoke("stage", "chunk", corpus, "--out", run, *SMALL, "-q").exit_code == 0
    assert (
        _invoke(
            "stage", "generate", run, "--generator-model", "openai:stand-in", "--base-url", llm.base_url, "-n", 6, "-q"
        ).exit_code
        == 0
    )
    fingerprint = json.loads((run / "run.json").read_text())["fingerprint"]
    assert fingerprint["generator_model"] == "openai:stand-in" and fingerprint["critic_model"] is None
    assert fingerprint["prompts"]["qa_generation"] and fingerprint["prompts"]["critique_supported"] is None
    # The critics' model is given to `critique`; their server is the generator's, from the run.
    result = _invoke("stage", "critique", run, "--critic-model", "openai:stand-in-critic", "-q")
    assert result.exit_code == 0, result.output
    assert {e["model"] for e in llm.log if e["kind"] in ("critique", "check")} == {"stand-in-critic"}
    fingerprint = json.loads((run / "run.json").read_text())["fingerprint"]
    assert fingerprint["critic_model"] == "openai:stand-in-critic" and fingerprint["prompts"]["critique_supported"]
    # Fixed now: another critic model is refused, and a later generate keeps the critics' prompts.
    refused = CliRunner().invoke(main, ["stage", "critique", str(run), "--critic-model", "openai:other"])
    assert refused.exit_code == 1 and "critic_model" in refused.output
    assert _invoke("stage", "generate", run, "-q").exit_code == 0
    assert json.loads((run / "run.json").read_text())["fingerprint"] == fingerprint


def test_a_staged_multi_hop_build_asks_its_parts_supported_in_the_critique_stage(
    llm: Any, corpus: Path, tmp_path: Path
) -> None:
    """`generate` has no critic: it composes every draft whose parts pass their free checks, and `critique`
    asks the parts' verdicts before a composed draft's own critics; the outcome is the one-shot build's."""
    staged, built = tmp_path / "staged", tmp_path / "built"
    model, types = (
        ["--generator-model", "openai:stand-in", "--base-url", llm.base_url],
        ["--question-types", "multi_hop"],
    )
    assert _invoke("stage", "chunk", corpus, "--out", staged, *SMALL, "-q").exit_code == 0
    assert _invoke("stage", "generate", staged, *model, "-n", 12, *types, "-q").exit_code == 0
    assert not [entry for entry in llm.log if entry["kind"] in ("critique", "check", "reader")]
    composed = {draft["id"]: draft for draft in map(json.loads, (staged / "drafts.jsonl").read_text().splitlines())}
    assert _invoke("stage", "critique", staged, "-q").exit_code == 0
    assert _invoke("stage", "filter", staged).exit_code == 0
    ended = [
        row for row in _candidates(staged) if row["reason"].startswith("unsupported_answer (") and not row["question"]
    ]
    assert ended and all(composed[row["id"]]["parts"] for row in ended)  # composed, then ended by a part
    asked = {entry["question"] for entry in llm.log if entry["kind"] in ("critique", "check", "reader")}
    assert not any(composed[row["id"]]["question"] in asked for row in ended)  # no critic of its own
    assert _build(llm, corpus, built, *types, n=12).exit_code == 0
    assert _candidates(staged) == _candidates(built)


# --- traps of a first hour ------------------------------------------------------------------------
def test_critique_before_generate_says_there_are_no_drafts(corpus: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert _invoke("stage", "chunk", corpus, "--out", run, *SMALL, "-q").exit_code == 0
    result = CliRunner().invoke(main, ["stage", "critique", str(run), "-q"])
    assert result.exit_code == 1 and "saved" not in result.output
    assert result.stderr == (
        f"error: {run} has no drafts yet, so there is nothing to critique; make them with "
        f"`qagen stage generate {run}` (or run every stage with `qagen build`).\n"
    )
    # Nothing was fixed by the command that did nothing: a critic model can still be chosen.
    assert json.loads((run / "run.json").read_text())["fingerprint"]["critic_model"] is None


def test_more_generations_than_chunks_is_said_in_one_line(llm: Any, tmp_path: Path) -> None:
    corpus = tmp_path / "docs"
    corpus.mkdir()
    for name in ("a", "b", "c"):
        (corpus / f"{name}.txt").write_text(f"The harbour of {name} opens at nine. " * 12, encoding="utf-8")
    result = _build(llm, corpus, tmp_path / "run", n=20)
    assert result.exit_code == 0, result.output
    summary = _summary(tmp_path / "run")
    chunks = summary["corpus"]["chunks"]
    assert chunks < 20 and summary["funnel"]["requested"] == 20 and summary["funnel"]["sampled"] == chunks
    assert f"sampled chunks {chunks} (all of them: 20 were asked for)" in " ".join(result.output.split())
    # Asked for no more than there are: the plain count.
    assert "were asked for" not in _build(llm, corpus, tmp_path / "few", n=2).output


@pytest.mark.parametrize(
    ("size", "unit", "smallest"), [("1", "characters", 50), ("49", "characters", 50), ("11", "tokens", 12)]
)
def test_a_chunk_size_too_small_to_hold_a_fact_is_refused(
    size: str, unit: str, smallest: int, corpus: Path, tmp_path: Path
) -> None:
    args = ["stage", "chunk", str(corpus), "--out", str(tmp_path / "run"), "--chunk-size", size, "--chunk-overlap", "0"]
    result = CliRunner().invoke(main, [*args, "--length-unit", unit])
    assert result.exit_code == 1
    assert result.stderr == (
        f"error: --chunk-size {size} is too small for a chunk to hold a fact to ask about; the smallest "
        f"accepted is {smallest} {unit} (the default: 2000).\n"
    )
    assert not (tmp_path / "run").exists()  # refused before anything was written
    assert ChunkSettings(chunk_size=smallest, chunk_overlap=0, length_unit=unit).chunk_size == smallest  # type: ignore[arg-type]


def test_a_capped_generate_stops_with_exit_3_and_filter_names_what_decides_the_rest(
    llm: Any, corpus: Path, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    assert _invoke("stage", "chunk", corpus, "--out", run, *SMALL, "-q").exit_code == 0
    model = ["--generator-model", "openai:stand-in", "--base-url", llm.base_url, "-n", 30, "--concurrency", 2, "-q"]
    capped = CliRunner().invoke(main, ["stage", "generate", str(run), *map(str, model), "--max-tokens", "3000"])
    assert capped.exit_code == 3 and "--max-tokens 3,000" in capped.stderr and "saved" not in capped.stdout
    drafted = len(llm.log)
    filtered = _invoke("stage", "filter", run)
    funnel = _summary(run)["funnel"]
    missing = funnel["undecided"]["generation"]
    assert missing == 30 - drafted and funnel["generation_failed"] == {}
    assert funnel["undecided"]["critique"] == 30 - missing  # drafted, no critic asked yet
    assert (
        f"{missing} sampled chunks have no draft yet (undecided, not failed): `qagen stage generate {run}` ({missing} "
        f"calls), then `qagen stage critique {run}`, decides them." in filtered.output
    )
    # The cap was for that invocation: the next generate has none, and finishes the sample.
    assert _invoke("stage", "generate", run, "-q").exit_code == 0
    assert len(llm.log) == 30
