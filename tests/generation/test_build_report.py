"""`qagen profile RUN` on a build's run directory: the test set's profile printed, written to
RUN/profile.md and drawn with --chart; the dataset card carries the same tables."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from qagen.cli.app import main
from qagen.generation.profile_report import profile_tables
from qagen.publish.card import CardContent, make_card, public_summary
from standins.llm.server import StandInLLM


def test_report_on_a_build_run_prints_writes_and_charts_the_profile(
    llm: StandInLLM, corpus: Path, tmp_path: Path
) -> None:
    llm.configure(rule_break_rate=0.2, duplicate_rate=0.1)
    out = tmp_path / "run"
    args = ["build", str(corpus), "--out", str(out), "--generator-model", "openai:stand-in", "--base-url", llm.base_url]
    args += ["-n", "40", "--chunk-size", "400", "--chunk-overlap", "40", "-q"]
    built = CliRunner().invoke(main, args, catch_exceptions=False)
    assert built.exit_code == 0, built.output

    chart = tmp_path / "profile.png"
    result = CliRunner().invoke(main, ["profile", str(out), "--chart", str(chart)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    for heading in (
        "| question type | kept |",
        "| documents with a kept question |",
        "| own chunk ranked first by BM25 |",
        "| question | ",
        "| check (every draft decided) | what was held to the cut: drafts by bin | cut | passed | rejected |",
        "| same words (lexical rule) |",
        "| by meaning | not checked: no embeddings model was asked for",
        "| question_points_at_source |",
    ):
        assert heading in result.output, heading
    assert (out / "profile.md").read_text(encoding="utf-8").count("| question type | kept |") == 1
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and chart.stat().st_size > 10_000
    assert f"chart: {chart}" in result.output

    # The dataset card carries the same tables.
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    card = make_card(
        CardContent(
            repo_id="alice/qa",
            summary=public_summary(summary),
            kept_rows=summary["funnel"]["kept"],
            candidate_rows=40,
            languages=["en"],
            license="unknown",
            prompts=[],
        )
    )
    tables = profile_tables(summary["profile"])
    assert "## Profile" in str(card) and tables in str(card) and tables in result.output

    # A build's run directory is no evaluation to compare: the command that profiles it is named.
    compared = CliRunner().invoke(main, ["compare", str(out)])
    assert compared.exit_code == 2 and f"`qagen profile {out}` prints its profile" in compared.stderr


def test_a_build_chart_with_a_matplotlib_that_cannot_be_imported_is_one_sentence(
    llm: StandInLLM, corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "run"
    args = ["build", str(corpus), "--out", str(out), "--generator-model", "openai:stand-in", "--base-url", llm.base_url]
    built = CliRunner().invoke(main, [*args, "-n", "6", "--chunk-size", "400", "--chunk-overlap", "40", "-q"])
    assert built.exit_code == 0, built.output
    # Installed (found) but broken: its pyplot fails to import, as with a numpy it was not built for.
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    chart = tmp_path / "profile.png"
    result = CliRunner().invoke(main, ["profile", str(out), "--chart", str(chart)], catch_exceptions=False)
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.startswith("error: The chart needs matplotlib, which is installed but cannot be imported (")
    assert result.stderr.endswith("): reinstall it with pip uninstall matplotlib, then pip install 'qagen[plot]'.\n")
    assert not chart.exists() and not (out / "profile.md").exists()  # refused before any work


def test_the_profile_chart_counts_in_whole_numbers() -> None:
    pytest.importorskip("matplotlib", reason="the chart needs the plot extra: pip install 'qagen[plot]'")
    from qagen.generation.profile_report import profile_figure
    from qagen.plotting import pyplot

    # Small counts, where matplotlib's default ticks fall between whole numbers (0.5 of a question).
    profile = {
        "checks_measured": {
            "supported": {"kind": "yes_no", "cut": 0.7, "bins": {"0.2": 1, "0.9": 2}, "passed": 2, "rejected": 1},
            "relevance": {"kind": "rating", "cut": 4, "bins": {"3": 1, "5": 2}, "passed": 2, "rejected": 1},
        },
        "easiness": {
            "copied_share_bins": {"<25%": 1, "25-50%": 2, ">50%": 0},
            "bm25_rank": {"count": 3},
            "ranked_first": 2,
            "ranked_top5_share": 1.0,
        },
        "coverage": {"kept_per_document": {"0": 0, "1": 1, "2": 1}},
    }
    figure = profile_figure(profile, "profile")
    try:
        for axis in figure.axes:
            figure.canvas.draw()
            ticks = [tick for tick in axis.get_yticks() if axis.get_ylim()[0] <= tick <= axis.get_ylim()[1]]
            assert ticks and all(float(tick).is_integer() for tick in ticks), (axis.get_ylabel(), ticks)
    finally:
        pyplot().close(figure)


def test_report_on_a_build_without_a_readable_summary_says_how_to_write_it_again(
    llm: StandInLLM, corpus: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    args = ["build", str(corpus), "--out", str(out), "--generator-model", "openai:stand-in", "--base-url", llm.base_url]
    built = CliRunner().invoke(main, [*args, "-n", "4", "--chunk-size", "400", "-q"])
    assert built.exit_code == 0, built.output
    summary_file = out / "summary.json"
    kept = json.loads(summary_file.read_text(encoding="utf-8"))["funnel"]["kept"]
    advice = (
        f"Write it again from the run's records with `qagen stage filter {out}` (no LLM call), or re-run the build's "
        "command: it resumes where it stopped and pays for no call twice.\n"
    )

    for broken, problem in (
        (None, "is missing (the build has not got that far, or the file was removed)"),
        ('{"funnel": ', "cannot be read (Expecting value: line 1 column 12 (char 11))"),
        ('{"metrics": {}}', "is no build's summary (it has no funnel)"),
    ):
        if broken is None:
            summary_file.unlink()
        else:
            summary_file.write_text(broken, encoding="utf-8")
        result = CliRunner().invoke(main, ["profile", str(out)])
        assert result.exit_code == 1
        assert result.stderr == f"error: {out} is a build's run directory, but its summary.json {problem}. {advice}"
        assert "qagen evaluate" not in result.output

    # The advice works: the summary is written again from the records, and the report reads it.
    llm.reset()
    assert CliRunner().invoke(main, ["stage", "filter", str(out)]).exit_code == 0 and not llm.log
    assert json.loads(summary_file.read_text(encoding="utf-8"))["funnel"]["kept"] == kept
    assert CliRunner().invoke(main, ["profile", str(out)]).exit_code == 0


def test_the_report_shows_every_question_type_of_the_build_and_says_coverage_in_words(
    llm: StandInLLM, tmp_path: Path
) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "tides.txt").write_text("The keeper recorded the semidiurnal tides every morning with a brass rod.\n")
    (corpus / "bells.txt").write_text("The bell founder cast the tenor bell in a pit beside the church tower.\n")
    out = tmp_path / "run"
    args = ["build", str(corpus), "--out", str(out), "--generator-model", "openai:stand-in", "--base-url", llm.base_url]
    # One chunk per document and no shared rare term: no multi-hop pair, so multi_hop keeps nothing.
    built = CliRunner().invoke(main, [*args, "-n", "4", "--question-types", "factoid=50,multi_hop=50", "-q"])
    assert built.exit_code == 0, built.output
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    factoids = summary["question_types"]["factoid"]["kept"]
    assert summary["question_types"]["multi_hop"]["kept"] == 0 and factoids >= 1

    result = CliRunner().invoke(main, ["profile", str(out)])
    assert result.exit_code == 0, result.output
    counted = f"{factoids} kept question{'' if factoids == 1 else 's'}."
    assert result.output.startswith(
        f"{counted}\n\n| question type | kept |\n|---|---|\n| factoid | {factoids} |\n| multi_hop | 0 |\n"
    )
    per_document = summary["profile"]["coverage"]["kept_per_document"]
    assert (
        f"| documents with 0 kept questions | {per_document['0']} |\n"
        f"| documents with 1 kept question | {per_document['1']} |\n"
        f"| documents with 2 kept questions | {per_document['2']} |\n"
        f"| documents with 3-5 kept questions | {per_document['3-5']} |\n"
        f"| documents with 6+ kept questions | {per_document['6+']} |\n"
    ) in result.output
    assert per_document["0"] + per_document["1"] + per_document["2"] == 2
    assert "documents by kept questions" not in result.output
