"""`qagen batch import` counts exactly what a results file answers: each line is matched to a request
of the last export (`read_results`), and duplicates, lines for no request, error lines, replies that
are no chat completion and requests with no line are each counted apart; a requests file, or the
results of another round, is refused and nothing is imported."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from qagen.cli.app import main
from qagen.runs.batch.results import read_results
from standins.llm.offline import answer_requests

MODEL = ("--generator-model", "openai:stand-in", "--n-generations", "8")
NOT_A_COMPLETION = {"object": "list", "data": []}


def _line(custom_id: str, status: int = 200, body: dict[str, Any] | None = None) -> dict[str, Any]:
    if body is None:
        body = {"choices": [{"message": {"role": "assistant", "content": f"reply to {custom_id}"}}]}
    return {"id": f"r-{custom_id}", "custom_id": custom_id, "response": {"status_code": status, "body": body}}


def _error(custom_id: str) -> dict[str, Any]:
    return {"id": None, "custom_id": custom_id, "response": None, "error": {"code": "batch_expired", "message": "-"}}


@pytest.mark.parametrize(
    ("lines", "answered", "duplicates", "unknown", "malformed", "errors"),
    [
        ([_line("a"), _line("b")], {"a", "b"}, 0, 0, 0, 0),
        ([_line("a"), _line("a")], {"a"}, 1, 0, 0, 0),
        ([_line("a"), _line("zz"), _line("yy")], {"a"}, 0, 2, 0, 0),
        ([_line("a", body=NOT_A_COMPLETION)], set(), 0, 0, 1, 0),
        ([_line("a", status=500, body={"error": {"message": "x"}}), _error("b")], set(), 0, 0, 0, 2),
        # An answer beats an error line for the same request, whichever comes first.
        ([_error("a"), _line("a")], {"a"}, 1, 0, 0, 0),
        ([_line("a"), _error("a")], {"a"}, 1, 0, 0, 0),
        ([_line("a", body=NOT_A_COMPLETION), _line("a")], {"a"}, 1, 0, 0, 0),
        ([{"custom_id": 7}, {"no": "id"}], set(), 0, 2, 0, 0),
    ],
)
def test_result_lines_are_matched_to_requests_and_counted_apart(
    lines: list[dict[str, Any]], answered: set[str], duplicates: int, unknown: int, malformed: int, errors: int
) -> None:
    read = read_results(lines, {"a", "b"})
    assert set(read.answers) == answered
    assert (read.duplicates, read.unknown, read.malformed, read.errors) == (duplicates, unknown, malformed, errors)


def test_of_two_answers_to_one_request_the_first_is_kept() -> None:
    first, second = _line("a"), _line("a")
    second["response"]["body"]["choices"][0]["message"]["content"] = "another reply"
    assert read_results([first, second], {"a"}).answers["a"] is first["response"]["body"]


def _invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def _said(*args: str) -> str:
    result = _invoke(*args)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture()
def exported(corpus: Path, tmp_path: Path) -> tuple[Path, list[dict[str, Any]]]:
    """A run with 8 drafts' requests exported, and the offline runner's 8 result lines for them."""
    run = tmp_path / "run"
    _said(
        "stage", "chunk", str(corpus), "--out", str(run), "--seed", "7", "--chunk-size", "400", "--chunk-overlap", "40"
    )
    _said("batch", "export", str(run), "--out", str(tmp_path / "requests.jsonl"), *MODEL)
    answer_requests(tmp_path / "requests.jsonl", tmp_path / "results.jsonl")
    lines = [json.loads(text) for text in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert len(lines) == 8
    return run, lines


def _write(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _drafts(run: Path) -> list[dict[str, Any]]:
    path = run / "drafts.jsonl"
    return [json.loads(text) for text in path.read_text().splitlines()] if path.exists() else []


def test_a_line_twice_is_counted_once_and_the_first_reply_is_recorded(
    exported: tuple[Path, list[dict[str, Any]]], tmp_path: Path
) -> None:
    run, lines = exported
    later = json.loads(json.dumps(lines[0]))
    later["response"]["body"]["choices"][0]["message"]["content"] = "Factoid question: Later?\nAnswer: later"
    said = _said("batch", "import", str(run), str(_write(tmp_path / "twice.jsonl", [*lines, later])))
    assert said.splitlines()[0] == "8 answers imported for 8 exported requests; ignored: 1 second line for a request"
    drafts = _drafts(run)
    assert len(drafts) == 8 and not any("Later?" in (draft["raw"] or "") for draft in drafts)


def test_lines_for_no_request_errors_and_non_completions_are_counted_apart(
    exported: tuple[Path, list[dict[str, Any]]], tmp_path: Path
) -> None:
    run, lines = exported
    broken = [{**line, "response": {"status_code": 200, "body": NOT_A_COMPLETION}} for line in lines[:2]]
    failed = [_error(line["custom_id"]) for line in lines[2:3]]
    strangers = [_line("f" * 64), _line("e" * 64)]
    mixed = _write(tmp_path / "mixed.jsonl", [*broken, *failed, *lines[3:7], *strangers])  # lines[7]: no line
    said = _said("batch", "import", str(run), str(mixed)).splitlines()
    assert said == [
        "4 answers imported for 8 exported requests; 1 error line, 2 replies that are no chat completion, "
        "1 request with no line: asked again by the next export; ignored: 2 lines for no request of the export",
        # The four drafts still to make, and the first critic of each of the four made.
        f"next: `qagen batch export {run}` (8 requests)",
    ]
    assert len(_drafts(run)) == 4
    # The next export asks again exactly the four requests not answered, the two non-completions among them.
    again = tmp_path / "again.jsonl"
    _said("batch", "export", str(run), "--out", str(again), *MODEL)
    asked = {json.loads(text)["custom_id"] for text in again.read_text().splitlines()}
    drafted = {line["custom_id"] for line in lines}
    assert asked & drafted == {line["custom_id"] for line in [*lines[:3], lines[7]]} and len(asked) == 8
    # The full first file now: its four answers new to the run are imported, the other four are not counted.
    said = _said("batch", "import", str(run), str(tmp_path / "results.jsonl")).splitlines()[0]
    assert said == (
        "4 answers imported for 8 exported requests; 4 requests with no line: asked again by the next export; "
        "ignored: 4 lines for no request of the export"
    )
    assert len(_drafts(run)) == 8


def test_an_answer_imported_before_is_not_counted_again(
    exported: tuple[Path, list[dict[str, Any]]], tmp_path: Path
) -> None:
    run, lines = exported
    _said("batch", "import", str(run), str(_write(tmp_path / "half.jsonl", lines[:4])))
    said = _said("batch", "import", str(run), str(tmp_path / "results.jsonl")).splitlines()[0]
    assert said == "4 answers imported for 8 exported requests; ignored: 4 answers imported before"
    assert len(_drafts(run)) == 8


def test_a_requests_file_or_another_rounds_results_are_refused(
    exported: tuple[Path, list[dict[str, Any]]], tmp_path: Path
) -> None:
    run, lines = exported
    requests = _invoke("batch", "import", str(run), str(tmp_path / "requests.jsonl"))
    assert requests.exit_code == 1
    assert f"{tmp_path / 'requests.jsonl'} is a requests file" in requests.output
    assert "Traceback" not in requests.output
    other = _write(tmp_path / "other.jsonl", [_line("f" * 64), _line("e" * 64)])
    refused = _invoke("batch", "import", str(run), str(other))
    assert refused.exit_code == 1
    assert "None of the 2 lines" in refused.output and "another round or run" in refused.output
    assert not (run / "batches").exists() and _drafts(run) == []
    # The first round's results, once imported, answer nothing of the second round's export.
    _said("batch", "import", str(run), str(_write(tmp_path / "round1.jsonl", lines)))
    _said("batch", "export", str(run), "--out", str(tmp_path / "round2.jsonl"), *MODEL)
    late = _invoke("batch", "import", str(run), str(_write(tmp_path / "round1-again.jsonl", [*lines, lines[0]])))
    assert late.exit_code == 1 and "another round or run" in late.output
