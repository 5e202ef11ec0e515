"""A filled CSV is checked whole: a bad cell stops the import with its line and stores nothing;
an empty cell is "not labelled"; a score compares at the run's threshold."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from qagen.review.labels import LABELS_FILE, LabelStore
from tests.review.conftest import invoke


def _export(run: Path, sheet: Path) -> list[dict[str, str]]:
    assert invoke("review", run, "--export", sheet, "--size", "6").exit_code == 0
    with sheet.open(encoding="utf-8-sig", newline="") as handle:
        return list(csv.DictReader(handle))


def _write(sheet: Path, rows: list[dict[str, str]], columns: list[str] | None = None) -> None:
    with sheet.open("w", encoding="utf-8-sig", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns or list(rows[0]), extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


def test_bad_cells_stop_the_import_with_their_lines_and_store_nothing(built_run: Path, tmp_path: Path) -> None:
    sheet = tmp_path / "labels.csv"
    rows = _export(built_run, sheet)
    rows[0]["chunk"] = "a chunk\nover two lines"  # the next rows start a line later
    rows[0]["relevance"] = "pass"
    rows[1]["keep"] = "maybe"
    rows[2]["id"] = "no-such-draft"
    rows[2]["keep"] = "yes"
    rows[3]["groundedness"] = "6"
    _write(sheet, rows)
    result = invoke("review", built_run, "--import", sheet, "--reviewer", "ana")
    assert result.exit_code == 1
    assert "line 4: keep is 'maybe'; write yes or no." in result.output
    assert "line 5: id 'no-such-draft' is not an item of this directory" in result.output
    assert "line 6: groundedness is '6'; write pass, fail or a score 1-5." in result.output
    assert "nothing of it was stored" in result.output and "Fix those cells and import it again." in result.output
    assert not (built_run / LABELS_FILE).exists()

    _write(sheet, rows, ["id", "relevance", "keeep"])
    result = invoke("review", built_run, "--import", sheet)
    assert result.exit_code == 1 and "'keeep', which qagen does not read" in result.output


def test_empty_cells_are_not_labels_and_scores_compare_at_the_run_threshold(built_run: Path, tmp_path: Path) -> None:
    sheet = tmp_path / "labels.csv"
    rows = _export(built_run, sheet)
    rows[0].update(groundedness="4", relevance="3", standalone="", keep="", note="")
    rows[1].update(note="unsure about this one")
    _write(
        sheet,
        rows[:2] + [{"id": row["id"]} for row in rows[2:]],
        ["id", "groundedness", "relevance", "standalone", "keep", "note"],
    )
    result = invoke("review", built_run, "--import", sheet, "--reviewer", "ana")
    assert result.exit_code == 0, result.output
    assert "imported 2 labels" in result.output and "4 rows without a label" in result.output
    labels = {label.item_id: label for label in LabelStore(built_run).read().values()}
    first = labels[rows[0]["id"]]
    assert set(first.criteria) == {"groundedness", "relevance"} and first.keep is None  # empty: not labelled
    assert (first.criteria["groundedness"].passed, first.criteria["groundedness"].score) == (True, 4)
    assert (first.criteria["relevance"].passed, first.criteria["relevance"].score) == (False, 3)  # 3 < 4
    assert labels[rows[1]["id"]].note == "unsure about this one" and labels[rows[1]["id"]].empty
    assert "generation" in first.prompt_hashes and first.via == "csv"
    # The same file again stores nothing new.
    again = invoke("review", built_run, "--import", sheet, "--reviewer", "ana")
    assert "imported 0 labels" in again.output and "2 unchanged" in again.output
    assert len((built_run / LABELS_FILE).read_text().splitlines()) == 2


def test_a_semicolon_separated_file_is_read_as_a_spreadsheet_in_such_a_locale_saves_it(
    built_run: Path, tmp_path: Path
) -> None:
    sheet = tmp_path / "labels.csv"
    rows = _export(built_run, sheet)
    rows[0].update(relevance="fail", note="deux; trois")  # a semicolon inside a quoted cell stays in it
    with sheet.open("w", encoding="utf-8-sig", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), delimiter=";")
        writer.writeheader()
        writer.writerows(rows)
    result = invoke("review", built_run, "--import", sheet, "--reviewer", "ana")
    assert result.exit_code == 0, result.output
    [label] = LabelStore(built_run).read().values()
    assert label.item_id == rows[0]["id"] and label.note == "deux; trois"
    assert label.criteria["relevance"].passed is False


def test_two_rows_of_one_item_and_reviewer_that_differ_stop_the_import(built_run: Path, tmp_path: Path) -> None:
    sheet = tmp_path / "labels.csv"
    rows = _export(built_run, sheet)
    rows[0]["relevance"] = "pass"
    rows[1]["relevance"] = "pass"
    twice = {**rows[0], "relevance": "fail"}
    same = dict(rows[1])  # an identical copy says nothing new: no problem
    _write(sheet, [*rows, twice, same])
    result = invoke("review", built_run, "--import", sheet, "--reviewer", "ana")
    assert result.exit_code == 1
    assert f"line 8: ana's label of id {rows[0]['id']!r} differs from the one on line 2" in result.output
    assert "line 9" not in result.output
    assert not (built_run / LABELS_FILE).exists()


FORMULAS = {
    "question": '=HYPERLINK("http://127.0.0.1/x","click")',
    "reference": "+1 more than the rest",
    "answer": "@SUM(A1:A9)",
}


def _evaluation_with_formulas(tmp_path: Path) -> Path:
    """An evaluation whose question, reference and answer (and id) each begin as a formula does:
    third-party documents can carry such text, and a model can write it."""
    from qagen.evaluate.api import evaluate
    from qagen.evaluate.config import EvalConfig
    from qagen.evaluate.systems.answers_file import AnswersFileSystem

    row = {"id": "-7", "question": FORMULAS["question"], "answer": FORMULAS["reference"]}
    testset = tmp_path / "set.jsonl"
    testset.write_text(json.dumps(row) + "\n", encoding="utf-8")
    answers = tmp_path / "answers.jsonl"
    answers.write_text(json.dumps({**row, "answer": FORMULAS["answer"]}) + "\n", encoding="utf-8")
    evaluate(
        EvalConfig(testset=testset, metrics=["text"]), AnswersFileSystem(answers), tmp_path / "eval", progress=False
    )
    return tmp_path / "eval"


def test_cells_that_a_spreadsheet_would_run_as_formulas_are_escaped_and_read_back(tmp_path: Path) -> None:
    evaluation = _evaluation_with_formulas(tmp_path)
    sheet = tmp_path / "answers.csv"
    assert invoke("review", evaluation, "--export", sheet).exit_code == 0
    with sheet.open(encoding="utf-8-sig", newline="") as handle:
        (row,) = list(csv.DictReader(handle))
    # Written as text: a leading apostrophe, which spreadsheets read as "this cell is text".
    assert {name: row[name] for name in FORMULAS} == {name: f"'{text}" for name, text in FORMULAS.items()}
    assert row["id"] == "'-7"
    # Read back without the apostrophe, in every cell the import reads (one a spreadsheet saved
    # escaped, one the reviewer typed plain).
    row.update(correct="no", note="'- too short", reviewer="@ana")
    _write(sheet, [row])
    result = invoke("review", evaluation, "--import", sheet)
    assert result.exit_code == 0, result.output
    (label,) = LabelStore(evaluation).read().values()
    assert (label.item_id, label.correct, label.note, label.reviewer) == ("-7", False, "- too short", "@ana")


def test_a_note_over_the_pages_cap_stops_the_import_with_its_line(built_run: Path, tmp_path: Path) -> None:
    from qagen.review.labels import MAX_NOTE_CHARS

    sheet = tmp_path / "labels.csv"
    rows = _export(built_run, sheet)
    rows[0]["keep"] = "yes"
    rows[1]["note"] = "x" * (MAX_NOTE_CHARS + 1)
    _write(sheet, rows)
    result = invoke("review", built_run, "--import", sheet, "--reviewer", "ana")
    assert result.exit_code == 1
    assert "line 3: the note has 10,001 characters; a note keeps at most 10,000" in result.output
    assert not (built_run / LABELS_FILE).exists()


def test_a_sheet_with_its_keep_column_deleted_and_no_label_is_refused_saying_so(
    built_run: Path, tmp_path: Path
) -> None:
    sheet = tmp_path / "labels.csv"
    rows = _export(built_run, sheet)
    _write(sheet, rows, [name for name in rows[0] if name != "keep"])
    result = invoke("review", built_run, "--import", sheet, "--reviewer", "ana")
    assert result.exit_code == 1, result.output
    assert f"{sheet} holds no label, and has no keep column, which the export wrote (deleted?)" in result.output
    assert not (built_run / LABELS_FILE).exists()
    # Every column there and none filled in: nothing to import, as it says (the file is as exported).
    _write(sheet, rows)
    result = invoke("review", built_run, "--import", sheet, "--reviewer", "ana")
    assert result.exit_code == 0 and "imported 0 labels" in result.output and "6 rows without a label" in result.output


def test_sample_options_given_with_import_are_refused_not_ignored(built_run: Path, tmp_path: Path) -> None:
    sheet = tmp_path / "labels.csv"
    rows = _export(built_run, sheet)
    rows[0]["keep"] = "yes"
    _write(sheet, rows)
    result = invoke("review", built_run, "--import", sheet, "--size", "20", "--seed", "3")
    assert result.exit_code == 2
    assert "--size, --seed choose the sample to export or show, not what --import reads" in result.output
    assert not (built_run / LABELS_FILE).exists()
    imported = invoke("review", built_run, "--import", sheet, "--reviewer", "ana")
    assert (
        imported.exit_code == 0 and "imported 1 label into" in imported.output and "5 rows without" in imported.output
    )


def test_an_export_to_a_folder_that_does_not_exist_says_so(built_run: Path, tmp_path: Path) -> None:
    sheet = tmp_path / "no-such-folder" / "labels.csv"
    result = invoke("review", built_run, "--export", sheet, "--size", "6")
    assert result.exit_code == 1
    assert f"Cannot write {sheet}: its folder {sheet.parent} does not exist" in result.output
    assert "no label is lost" in result.output and "finished record" not in result.output


def test_keep_decisions_given_before_a_kept_sample_is_drawn_are_said_by_the_profile(
    built_run: Path, tmp_path: Path
) -> None:
    sheet = tmp_path / "labels.csv"
    rows = _export(built_run, sheet)
    for row in rows[:3]:
        row["keep"] = "yes"
    _write(sheet, rows)
    assert invoke("review", built_run, "--import", sheet, "--reviewer", "ana").exit_code == 0
    profiled = invoke("profile", built_run)
    assert profiled.exit_code == 0, profiled.output
    assert "not estimated (no sample of the kept questions is labelled)" in profiled.output
    assert "nobody has labelled" not in profiled.output  # three decisions are there
    assert "(3 keep decisions given already, to a sample of the drafts" in profiled.output
