"""The review page's server: labels saved at once, verdicts only after answering, resume, and refusals."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from qagen.review.labels import Label, LabelKey, LabelStore
from qagen.review.server import ReviewServer
from qagen.review.session import ReviewSession, open_items
from tests.review.page_fixtures import Reviewed, build_and_evaluate, call, labels

SAMPLE = 10


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Reviewed]:
    with build_and_evaluate(tmp_path_factory.mktemp("server")) as built:
        yield built


def _serve(directory: Path, reviewer: str = "ana") -> ReviewServer:
    items, thresholds = open_items(directory, size=SAMPLE, seed=0)
    return ReviewServer(ReviewSession(directory, items, reviewer=reviewer, thresholds=thresholds)).start()


@pytest.fixture()
def run_server(reviewed: Reviewed, tmp_path: Path) -> Iterator[ReviewServer]:
    copy = shutil.copytree(reviewed.run, tmp_path / "run")  # labels of one test only
    with _serve(copy) as server:
        yield server


def _label(server: ReviewServer, index: int, reviewer: str, **fields: Any) -> tuple[int, Any]:
    item_id = server.session.items[index].id
    return call(f"{server.url}api/labels", {"index": index, "item_id": item_id, "reviewer": reviewer, **fields})


def test_a_label_is_saved_at_once_and_only_then_are_the_critics_shown(run_server: ReviewServer) -> None:
    url, session = run_server.url, run_server.session
    assert url.startswith("http://127.0.0.1:")  # loopback only: nothing off the machine reaches it
    status, state = call(f"{url}api/state?reviewer=ana")
    assert status == 200
    assert (state["kind"], state["total"], state["labelled"], state["position"]) == ("draft", SAMPLE, 0, 0)
    assert state["thresholds"] == {"groundedness": 4, "relevance": 4, "standalone": 4}
    status, shown = call(f"{url}api/items/0?reviewer=ana")
    assert status == 200 and shown["label"] is None and "verdicts" not in shown["item"]
    assert shown["item"]["question"] == session.items[0].question

    criteria = {"relevance": {"pass": False, "score": 2}, "standalone": {"pass": True, "score": None}}
    status, saved = _label(run_server, 0, "ana", criteria=criteria, keep=False, note="  too vague ")
    assert status == 200, saved
    item = session.items[0]
    assert saved["item"]["verdicts"] == [verdict.model_dump(mode="json") for verdict in item.verdicts]
    assert (saved["state"]["labelled"], saved["state"]["position"]) == (1, 1)
    [line] = labels(session.directory)
    assert {key: line[key] for key in ("schema", "kind", "item_id", "reviewer", "keep", "correct", "note", "via")} == {
        "schema": 1,
        "kind": "draft",
        "item_id": item.id,
        "reviewer": "ana",
        "keep": False,
        "correct": None,
        "note": "too vague",
        "via": "page",
    }
    assert line["criteria"] == criteria and line["prompt_hashes"] == item.prompt_hashes
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", line["time"])

    # Another reviewer labels the same items, from the start, without seeing the critics.
    assert call(f"{url}api/state?reviewer=ben")[1]["position"] == 0
    assert "verdicts" not in call(f"{url}api/items/0?reviewer=ben")[1]["item"]
    assert "verdicts" in call(f"{url}api/items/0?reviewer=ana")[1]["item"]
    assert _label(run_server, 0, "ben", keep=True)[0] == 200
    # A changed mind is one more line; the latest label counts.
    assert _label(run_server, 0, "ana", keep=True)[0] == 200
    assert len(labels(session.directory)) == 3 and session.saved == 3
    latest = LabelStore(session.directory).read()
    assert latest[LabelKey("ana", "draft", item.id)].keep is True
    assert latest[LabelKey("ben", "draft", item.id)].keep is True
    assert call(f"{url}api/state?reviewer=ana")[1]["labelled"] == 1


def test_a_new_session_resumes_at_the_first_item_not_labelled(run_server: ReviewServer) -> None:
    for index in (0, 1, 3):
        assert _label(run_server, index, "ana", keep=index != 1)[0] == 200
    run_server.close()
    with LabelStore(run_server.session.directory) as store:  # a label of a draft of another sample
        store.append(Label(kind="draft", item_id="f" * 20, reviewer="ana", keep=True, via="csv"))
    with _serve(run_server.session.directory) as again:
        state = call(f"{again.url}api/state?reviewer=ana")[1]
        assert (state["labelled"], state["position"]) == (3, 2)
        assert call(f"{again.url}api/items/1?reviewer=ana")[1]["label"]["keep"] is False


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({}, "Nothing is labelled"),
        ({"criteria": {"beauty": {"pass": True}}}, "beauty"),
        ({"criteria": {"relevance": {"pass": True, "score": 7}}}, "less than or equal to 5"),
        ({"correct": True}, "criteria and keep, not `correct`"),
        ({"keep": "yes"}, "keep"),
        ({"keep": True, "reviewer": "  "}, "reviewer's name"),
        ({"keep": True, "item_id": "0" * 20}, "reload the page"),
        ({"keep": True, "index": 99}, "no item 100"),
    ],
)
def test_a_bad_label_is_refused(run_server: ReviewServer, fields: dict[str, Any], message: str) -> None:
    body = {"index": 0, "item_id": run_server.session.items[0].id, "reviewer": "ana", **fields}
    status, answer = call(f"{run_server.url}api/labels", body)
    assert status == 400 and message in answer["error"]
    assert labels(run_server.session.directory) == []


def test_requests_from_other_sites_are_refused(run_server: ReviewServer) -> None:
    url = run_server.url
    # A page that rebinds its own name to 127.0.0.1 sends its own Host header.
    assert call(f"{url}api/state", headers={"Host": "attacker.example:80"})[0] == 403
    body = {"index": 0, "item_id": run_server.session.items[0].id, "keep": True}
    assert call(f"{url}api/labels", body, headers={"Host": "attacker.example:80"})[0] == 403
    # A cross-site form can post, but not as JSON.
    form = b"index=0&keep=true"
    assert call(f"{url}api/labels", form, headers={"Content-Type": "application/x-www-form-urlencoded"})[0] == 415
    assert call(f"{url}api/items/x")[0] == 404
    assert labels(run_server.session.directory) == []


def test_the_page_loads_nothing_from_elsewhere(run_server: ReviewServer) -> None:
    import urllib.request

    for path, kind in (("", "text/html"), ("review.js", "text/javascript"), ("review.css", "text/css")):
        with urllib.request.urlopen(f"{run_server.url}{path}", timeout=10) as response:
            body = response.read().decode("utf-8")
            assert response.headers.get_content_type() == kind
            assert "default-src 'none'" in response.headers["Content-Security-Policy"]
        assert not re.search(r"(https?:)?//[a-z]", body), path
    # Untrusted text is set as text, never parsed as HTML.
    script = (Path(__file__).parents[2] / "qagen" / "review" / "page" / "review.js").read_text()
    assert "innerHTML" not in script and "insertAdjacentHTML" not in script and "document.write" not in script


def test_an_evaluation_s_answers_are_labelled_correct_or_not(reviewed: Reviewed, tmp_path: Path) -> None:
    copy = shutil.copytree(reviewed.eval, tmp_path / "eval")
    with _serve(copy) as server:
        state = call(f"{server.url}api/state")[1]
        assert (state["kind"], state["total"], state["reviewer"]) == ("answer", SAMPLE, "ana")
        shown = call(f"{server.url}api/items/0")[1]["item"]
        assert shown["reference"] and "verdicts" not in shown
        assert _label(server, 0, "ana", criteria={"relevance": {"pass": True}})[0] == 400
        status, saved = _label(server, 0, "ana", correct=False, note="wrong year")
        assert status == 200
        assert [verdict["name"] for verdict in saved["item"]["verdicts"]] == ["correctness", "correct"]
    [line] = labels(copy)
    assert (line["kind"], line["correct"], line["keep"], line["criteria"]) == ("answer", False, None, {})
    assert line["prompt_hashes"]["judge"] == server.session.items[0].prompt_hashes["judge"]


@pytest.mark.slow
def test_the_command_serves_until_interrupted_and_counts_the_labels(reviewed: Reviewed, tmp_path: Path) -> None:
    copy = shutil.copytree(reviewed.run, tmp_path / "run")
    command = [sys.executable, "-m", "qagen", "review", str(copy), "--reviewer", "ana", "--no-browser"]
    command += ["--size", str(SAMPLE), "--seed", "0"]
    # The command as a user at a terminal starts it: Ctrl-C interrupts it. Run as a background job of
    # a non-interactive shell (`pytest &`), the test process ignores SIGINT and so would its child (an
    # ignored signal stays ignored across exec; a handled one is reset to the default).
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ)
    finally:
        signal.signal(signal.SIGINT, before)
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        found = re.search(r"reviewing 10 drafts of .* as ana: (http://127\.0\.0\.1:\d+/)$", first)
        assert found, first + process.stderr.read() if process.stderr else first
        url = found.group(1)
        item_id = call(f"{url}api/items/0")[1]["item"]["id"]
        assert call(f"{url}api/labels", {"index": 0, "item_id": item_id, "keep": True})[0] == 200
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, err
    assert out.strip().endswith(f"saved 1 labels to {copy / 'labels.jsonl'}")
    assert [line["reviewer"] for line in labels(copy)] == ["ana"]
