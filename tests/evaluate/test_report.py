"""`qagen report` and `comparison_table`: labels, names old and new, paired tests and their p-values,
and a chart only when asked."""

from __future__ import annotations

import json
import re
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
    assert len(paired) == 1 and "+0.417 [" in paired[0] and paired[0].endswith(" 3")
    assert not any(line.startswith("mrr") and " - " in line for line in table.splitlines())
    nothing = EvalRun(tmp_path, {"k": 7, "metrics": {"mrr@7": {"mean": None}}}, label="x")
    with pytest.raises(QagenError, match="No run has a value"):
        chart_metric([nothing])
    only_mrr = EvalRun(
        tmp_path, {"k": 7, "metrics": {"correctness": {"mean": None}, "mrr@7": {"mean": 0.5}}}, label="y"
    )
    assert chart_metric([only_mrr]) == "mrr@7"


def test_report_reads_results_written_when_mrr_had_no_cutoff_in_its_name(tmp_path: Path) -> None:
    # Before the rename a summary said `mrr` / `chunk_mrr` and rows `reciprocal_rank`; the values
    # were MRR@k all along, so they are read as `mrr@7`, and paired with a run written since.
    old_rows = [{"id": str(i), "reciprocal_rank": 1 / (1 + i), "chunk_reciprocal_rank": 0.5} for i in range(4)]
    old = _run(tmp_path / "old", {"mrr": 0.52, "chunk_mrr": 0.5}, old_rows)
    new_rows = [{"id": str(i), "reciprocal_rank@k": 1.0, "chunk_reciprocal_rank@k": 1.0} for i in range(4)]
    new = _run(tmp_path / "new", {"mrr@7": 1.0, "chunk_mrr@7": 1.0}, new_rows)
    runs = load_runs([old, new])
    assert list(runs[0].summary["metrics"]) == ["mrr@7", "chunk_mrr@7"]
    assert runs[0].values("mrr@7") == {str(i): 1 / (1 + i) for i in range(4)}
    assert runs[0].values("chunk_mrr@7") == {str(i): 0.5 for i in range(4)}
    table = comparison_table(runs)
    assert not any(line.split()[0] in ("mrr", "chunk_mrr") for line in table.splitlines() if line.strip())
    paired = {line.split()[0]: line for line in table.splitlines() if "new - old" in line}
    assert paired["mrr@7"].endswith(" 4") and paired["chunk_mrr@7"].endswith(" 4")


def test_chunk_metrics_of_the_rule_before_evidence_are_read_under_their_own_names(tmp_path: Path) -> None:
    # Results written when a chunk hit meant covering half of the reference chunk (`chunk_hit@7`...)
    # still load and show, but are never paired with the evidence metrics: they measured another thing.
    old_rows = [{"id": str(i), "chunk_hit@k": 0.0, "chunk_reciprocal_rank@k": 0.0} for i in range(4)]
    old = _run(tmp_path / "old", {"chunk_hit@7": 0.0, "chunk_mrr@7": 0.0}, old_rows)
    new_rows = [{"id": str(i), "evidence_hit@k": 1.0, "evidence_reciprocal_rank@k": 0.5} for i in range(4)]
    new = _run(tmp_path / "new", {"evidence_hit@7": 1.0, "evidence_mrr@7": 0.5}, new_rows)
    runs = load_runs([old, new])
    assert runs[0].values("chunk_mrr@7") == {str(i): 0.0 for i in range(4)}
    assert runs[1].values("evidence_mrr@7") == {str(i): 0.5 for i in range(4)}
    table = comparison_table(runs)
    shown = {line.split()[0] for line in table.splitlines() if line.strip()}
    assert {"chunk_hit@7", "chunk_mrr@7", "evidence_hit@7", "evidence_mrr@7"} <= shown
    assert not any("new - old" in line for line in table.splitlines())  # no metric the two runs share


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
    assert re.search(r" (0\.\d+ ± 0\.\d+|< 0\.0003) +30$", line), line
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


# --------------------------------------------------------------------------- qagen report


def _report(*args: object) -> Any:
    return CliRunner().invoke(main, ["report", *map(str, args)], catch_exceptions=False)


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
