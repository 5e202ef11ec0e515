"""A byte that is not UTF-8 in a run's `labels.jsonl` or `critiques.jsonl` (an edit saved in another
encoding) stops every command that reads the file with the file, the line and how to repair it, as
the build says of any damaged line: never a traceback."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from qagen.review.labels import LABELS_FILE
from tests.review.conftest import invoke


def _spoil(path: Path, line: int) -> None:
    """Put a Latin-1 byte into line `line` (counted from 1) of `path`, as an editor saving in Latin-1 would."""
    lines = path.read_bytes().splitlines(keepends=True)
    lines[line - 1] = lines[line - 1].replace(b'":"', b'":"caf\xe9 ', 1)
    path.write_bytes(b"".join(lines))


def _said(output: str, path: Path, line: int) -> None:
    assert "Traceback" not in output
    assert f"{path} line {line} is not UTF-8 (byte 0xe9 at column" in output, output
    assert f"sed -i '{line}d' {path}" in output, output


@pytest.fixture()
def labelled(built_run: Path, tmp_path: Path) -> tuple[Path, Path]:
    """The run with a kept sample of 6 labelled (keep yes), and the sheet it was imported from."""
    sheet = tmp_path / "kept.csv"
    assert invoke("review", built_run, "--sample", "kept", "--export", sheet, "--size", "6").exit_code == 0
    with sheet.open(encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        row["keep"] = "yes"
    with sheet.open("w", encoding="utf-8-sig", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    imported = invoke("review", built_run, "--import", sheet, "--reviewer", "ana")
    assert imported.exit_code == 0, imported.output
    return built_run, sheet


@pytest.mark.parametrize(
    "command",
    [["profile", "{run}"], ["review", "{run}", "--import", "{sheet}", "--reviewer", "bo"], ["agreement", "{run}"],
     ["push", "{run}", "someone/set"]],
    ids=["profile", "review-import", "agreement", "push"],
)  # fmt: skip
def test_a_label_line_that_is_not_utf8_is_named_with_its_repair(
    labelled: tuple[Path, Path], command: list[str]
) -> None:
    run, sheet = labelled
    _spoil(run / LABELS_FILE, 2)
    result = invoke(*(part.format(run=run, sheet=sheet) for part in command))
    assert result.exit_code == 1, result.output
    _said(result.output, run / LABELS_FILE, 2)


def test_a_critique_line_that_is_not_utf8_is_named_by_qagen_status(built_run: Path) -> None:
    _spoil(built_run / "critiques.jsonl", 3)
    result = invoke("status", built_run)
    assert result.exit_code == 1, result.output
    _said(result.output, built_run / "critiques.jsonl", 3)
