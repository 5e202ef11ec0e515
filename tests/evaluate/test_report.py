"""`qagen compare` and `comparison_table`: labels, paired tests and their p-values, and a chart only
when asked."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from qagen.cli.app import main
from qagen.errors import QagenError
from qagen.evaluate.report import EvalRun, chart_metric, comparison_table, format_p_value, load_runs, report

# --------------------------------------------------------------------------- report


def _run(path: Path, means: dict[str, float | None], rows: list[dict[str, Any]]) -> Path:
    path.mkdir(parents=True)
    metrics = {
        name: {"mean": mean, "low": mean, "high": mean, "n": 1 if mean is not None else 0, "missing": 0}
        for name, mean in means.items()
    }
    (path / "summary.json").write_text(json.dumps({"k": 7, "metrics": metrics}))
    (path / "results.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_report_labels_chart_metric_and_paired_rows(tmp_path: Path) -> None:
    rows_a = [{"id": str(i), "correctness": 1 + i % 5, "reciprocal_rank@k": 1.0} for i in range(6)]
    rows_b = [{"id": str(i), "correctness": 5, "reciprocal_rank@k": None} for i in range(3, 9)]
    a = _run(tmp_path / "a" / "eval", {"correctness": 0.5, "mrr@7": 1.0}, rows_a)
    b = _run(tmp_path / "b" / "eval", {"correctness": 1.0, "mrr@7": None}, rows_b)
    runs = load_runs([a, b])
    assert [run.label for run in runs] == [str(a), str(b)]  # same directory names: told apart by path
    assert chart_metric(runs) == "correctness"
    table = comparison_table(runs)
    paired = [line for line in table.splitlines() if line.startswith("correctness") and " - " in line]
    # Shared ids 3, 4, 5: b - a = (1 - 3/4) + (1 - 1) + (1 - 0) over three questions.
    assert len(paired) == 1 and "+0.417 [" in paired[0] and paired[0].endswith("±0.500           3")
    assert not any(line.startswith("mrr") and " - " in line for line in table.splitlines())
    nothing = EvalRun(tmp_path, {"k": 7, "metrics": {"mrr@7": {"mean": None}}}, label="x")
    with pytest.raises(QagenError, match="No run has a value"):
        chart_metric([nothing])
    only_mrr = EvalRun(
        tmp_path, {"k": 7, "metrics": {"correctness": {"mean": None}, "mrr@7": {"mean": 0.5}}}, label="y"
    )
    assert chart_metric([only_mrr]) == "mrr@7"


@pytest.mark.parametrize("earlier", ["mrr", "chunk_mrr@7", "chunk_hit@7"])
def test_results_of_an_earlier_qagen_are_refused_with_the_way_forward(tmp_path: Path, earlier: str) -> None:
    old = _run(tmp_path / "old", {earlier: 0.5}, [{"id": "1", "reciprocal_rank": 0.5}])
    with pytest.raises(
        QagenError, match=rf"{old} was written by an earlier qagen \(its metrics {earlier} .*new `out` directory"
    ):
        load_runs([old])


@pytest.mark.parametrize(
    ("p_value", "n", "shown"),
    [
        (0.03125, 5, "0.0312"),  # 2^5 patterns counted: exact
        (1.0, 4, "1"),
        (1 / 10001, 20, "< 0.0003"),  # no random pattern reached it: below 3/R
        (5001 / 10001, 20, "0.500 ± 0.005"),
        (313 / 10001, 40, "0.031 ± 0.002"),
        (1.0, 30, "1"),  # every pattern reached it (no difference at all)
    ],
)
def test_p_values_show_the_digits_their_monte_carlo_error_allows(p_value: float, n: int, shown: str) -> None:
    assert format_p_value(p_value, n, 10_000) == shown


def test_paired_p_value_of_many_questions_carries_its_error(tmp_path: Path) -> None:
    rows_a = [{"id": str(i), "token_f1": 0.5} for i in range(30)]
    rows_b = [{"id": str(i), "token_f1": 0.5 + (0.1 if i % 3 else -0.1)} for i in range(30)]
    a = _run(tmp_path / "a", {"token_f1": 0.5}, rows_a)
    b = _run(tmp_path / "b", {"token_f1": 0.53}, rows_b)
    table = comparison_table(load_runs([a, b]))
    line = next(line for line in table.splitlines() if line.startswith("token_f1") and " - " in line)
    assert re.search(r" (0\.\d+ ± 0\.\d+|< 0\.0003) +±0\.\d{3} +30$", line), line
    assert "shown ± its standard error" in table


def test_report_from_python_returns_the_paired_differences_it_prints(tmp_path: Path) -> None:
    rows_a = [{"id": str(i), "token_f1": 0.5} for i in range(6)]
    rows_b = [{"id": str(i), "token_f1": 0.5 + 0.1 * (i % 2)} for i in range(1, 6)]
    a = _run(tmp_path / "a", {"token_f1": 0.5}, rows_a)
    b = _run(tmp_path / "b", {"token_f1": 0.56}, rows_b)
    compared = report([a, str(b)], chart=tmp_path / "chart.png")
    assert [run.label for run in compared.runs] == ["a", "b"]
    [difference] = compared.paired
    assert (difference.metric, difference.run, difference.baseline) == ("token_f1", "b", "a")
    assert difference.test.n == 5 and difference.test.mean_diff == pytest.approx(0.3 / 5)  # ids 1, 3, 5 gained 0.1
    assert f"{difference.test.mean_diff:+.3f} [" in compared.table and " b - a " in compared.table
    assert compared.table == comparison_table(load_runs([a, b]))
    assert compared.chart == tmp_path / "chart.png" and compared.chart.read_bytes().startswith(b"\x89PNG")


# --------------------------------------------------------------------------- qagen compare


def _report(*args: object) -> Any:
    return CliRunner().invoke(main, ["compare", *map(str, args)], catch_exceptions=False)


def test_report_writes_a_chart_only_when_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    run = _run(tmp_path / "eval", {"correctness": 0.5}, [{"id": "1", "correctness": 3}])
    result = _report(run)
    assert result.exit_code == 0, result.output
    assert "correctness" in result.stdout and "chart" not in result.stdout
    assert list(tmp_path.rglob("*.png")) == []
    result = _report(run, "--chart", tmp_path / "charts" / "c.png")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "charts" / "c.png").read_bytes().startswith(b"\x89PNG")
    result = _report(run, "--metric", "correctness")
    assert result.exit_code == 2 and "give --chart PATH too" in result.stderr


def test_a_chart_with_a_matplotlib_that_cannot_be_imported_is_one_sentence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)  # found, but its import fails
    run = _run(tmp_path / "eval", {"correctness": 0.5}, [{"id": "1", "correctness": 3}])
    result = _report(run, "--chart", tmp_path / "c.png")
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.startswith("error: The chart needs matplotlib, which is installed but cannot be imported (")
    assert not (tmp_path / "c.png").exists()


def test_a_chart_without_matplotlib_is_refused_before_any_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if it were not installed
    run = _run(tmp_path / "eval", {"correctness": 0.5}, [{"id": "1", "correctness": 3}])
    result = _report(run, "--chart", tmp_path / "c.png")
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr == "error: The chart needs matplotlib, which is not installed: pip install 'qagen[plot]'.\n"
    # Before any work: not even the directories are read.
    assert _report(tmp_path, "--chart", tmp_path / "c.png").stderr == result.stderr
    assert not (tmp_path / "c.png").exists()
    assert _report(run).exit_code == 0  # the table needs no matplotlib


def test_a_reader_that_stops_reading_ends_the_report_quietly(tmp_path: Path) -> None:
    """`qagen compare RUN | head`: no "Broken pipe" error, and the shell's code for a pipe left."""
    run = _run(tmp_path / "eval", {"correctness": 0.5}, [{"id": "1", "correctness": 3}])
    child = subprocess.Popen(
        [sys.executable, "-m", "qagen", "compare", str(run)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert child.stdout is not None and child.stderr is not None
    child.stdout.close()  # before the report is written: its first write finds no reader
    stderr = child.stderr.read().decode()
    assert child.wait(timeout=120) == 141
    assert stderr == ""


def test_the_report_says_the_scale_of_each_metric_that_is_no_plain_mean_of_its_column(tmp_path: Path) -> None:
    rows = [{"id": "1", "correctness": 2, "reciprocal_rank@k": 0.5, "hit@k": 1.0, "token_f1": 0.5}]
    run = _run(tmp_path / "eval", {"correctness": 0.25, "mrr@7": 0.5, "hit@7": 1.0, "token_f1": 0.5}, rows)
    table = comparison_table(load_runs([run]))
    scales = table.split("\nscales:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert scales == [
        "  correctness: 0 to 1, the mean of (score - 1) / 4 over the 1-5 scores in results.jsonl's `correctness`",
        "  mrr@7: 0 to 1, the mean of results.jsonl's `reciprocal_rank@k`",
        "  the others: 0 to 1, the mean of the results.jsonl column of their name (`@k` there for `@7`)",
    ]
    # A report of plain 0-1 means says nothing of scales.
    plain = _run(tmp_path / "plain", {"token_f1": 0.5}, rows)
    assert "scales:" not in comparison_table(load_runs([plain]))


@pytest.mark.parametrize("metric", ["correctness", "context_relevance", "evidence_mrr@7"])
def test_the_comparison_chart_title_fits_in_the_chart(tmp_path: Path, metric: str) -> None:
    pytest.importorskip("matplotlib", reason="the chart needs the plot extra: pip install 'qagen[plot]'")
    from qagen.evaluate.report import comparison_figure
    from qagen.plotting import pyplot

    runs = load_runs([_run(tmp_path / name, {metric: mean}, []) for name, mean in (("a", 0.5), ("b", 0.7))])
    figure = comparison_figure(runs, metric)
    try:
        figure.canvas.draw()
        title = figure.axes[0].title.get_window_extent(figure.canvas.get_renderer())
        assert title.x0 >= 0 and title.x1 <= figure.bbox.x1 and title.y1 <= figure.bbox.y1
        assert metric in figure.axes[0].get_title()
    finally:
        pyplot().close(figure)


def test_runs_at_different_k_are_said_so_and_each_reads_its_own_columns(tmp_path: Path) -> None:
    rows = [{"id": "1", "reciprocal_rank@k": 0.5, "hit@k": 1.0, "correctness": 2}]
    at_5 = _run(tmp_path / "five", {"correctness": 0.25, "mrr@5": 0.5, "hit@5": 1.0}, rows)
    at_7 = _run(tmp_path / "seven", {"correctness": 0.25, "mrr@7": 0.5, "hit@7": 1.0}, rows)
    summary = json.loads((at_5 / "summary.json").read_text())
    (at_5 / "summary.json").write_text(json.dumps({**summary, "k": 5}))
    table = comparison_table(load_runs([at_5, at_7]))
    assert "k differs (five k=5, seven k=7)" in table and "evaluate them at one `k`" in table
    # mrr@5 of the run at k=5 is its `reciprocal_rank@k`, not a column `mrr@5` no results.jsonl has.
    assert "results.jsonl's `mrr@5`" not in table and "results.jsonl's `hit@5`" not in table


def test_a_mean_of_few_questions_is_marked_as_such(tmp_path: Path) -> None:
    rows = [{"id": str(i), "hit@k": 1.0} for i in range(3)]
    few = _run(tmp_path / "few", {"hit@7": 1.0}, rows)
    summary = json.loads((few / "summary.json").read_text())
    summary["metrics"]["hit@7"]["n"] = 3
    (few / "summary.json").write_text(json.dumps(summary))
    table = comparison_table(load_runs([few]))
    assert "1.000 [1.000, 1.000] n=3 (few)" in table
    assert "(few): fewer than 20 questions; its interval is narrower than the uncertainty" in table
    summary["metrics"]["hit@7"]["n"] = 20
    (few / "summary.json").write_text(json.dumps(summary))
    assert "(few)" not in comparison_table(load_runs([few]))
