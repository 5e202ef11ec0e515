"""Issue 30's must-show 2: a question type with its own prompt folder, a critic, an LLM metric, a
deterministic metric, a retriever and a reranker, each added from an installed package and used
from the command line, touching no qagen file.

The package is the one docs/extending.md shows (its section `A package of extensions`): its files
are written from the page, pip builds and installs it into a folder of its own (no dependency, no
index: the test extra's hatchling builds it), and that folder on PYTHONPATH is all qagen's
registries need to find its entry points. The page's commands then run as written, on the stand-in
corpus as `docs/`, against a stand-in LLM started with the package installed too, so it recognises
the package's critic and grader prompts as it recognises qagen's.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from datasets import load_from_disk

from standins.corpus import write_corpus
from tests.test_readme import _blocks_in, _commands, page_section

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "extending.md"
SECTION = "A package of extensions"
FILE_BLOCK = re.compile(r"^File `(?P<path>[^`]+)`:\n\n```\w*\n(?P<body>.*?)^```", re.MULTILINE | re.DOTALL)


def example_files(text: str) -> dict[str, str]:
    """The files of a page's example, by path: each block whose line before says `File \\`path\\`:`."""
    return {match.group("path"): match.group("body") for match in FILE_BLOCK.finditer(text)}


class Installed(NamedTuple):
    site: Path
    """Where pip installed the package (its module and its .dist-info, with its entry points)."""
    files: dict[str, str]
    """The package's files as the page shows them."""


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    root = tmp_path_factory.mktemp("plugin")
    files = example_files(page_section(PAGE, SECTION))
    assert {"qagen-short/pyproject.toml", "qagen-short/qagen_short/__init__.py"} <= set(files)
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    site = root / "site"
    pip = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index", "--quiet"]
    done = subprocess.run(
        [*pip, "--target", str(site), str(root / "qagen-short")], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert (site / "qagen_short" / "prompts" / "qa_short.txt").is_file()  # the prompt folder ships with it
    return Installed(site, files)


def _env(installed: Installed, **extra: str) -> dict[str, str]:
    """The environment of a process with the package installed, and the qagen under test."""
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(installed.site), str(ROOT)]),
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
        **extra,
    }


class StandIn(NamedTuple):
    base_url: str
    log: Path

    def entries(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.log.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def stand_in(installed: Installed, tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandIn]:
    """The stand-in LLM in a process of its own, with the package installed."""
    folder = tmp_path_factory.mktemp("stand-in")
    port_file, log = folder / "port", folder / "log.jsonl"
    command = [sys.executable, "-m", "standins.llm.server", "--port", "0", "--port-file", str(port_file)]
    with subprocess.Popen(
        [*command, "--log", str(log)], env=_env(installed), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    ) as process:
        try:
            deadline = time.monotonic() + 30
            while not port_file.is_file():
                assert process.poll() is None, process.stderr.read() if process.stderr else ""
                assert time.monotonic() < deadline, "the stand-in LLM did not start within 30 s"
                time.sleep(0.05)
            yield StandIn(f"http://127.0.0.1:{port_file.read_text()}/v1", log)
        finally:
            process.terminate()
            process.wait(timeout=10)


def _summary(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "summary.json").read_text(encoding="utf-8"))


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.slow
def test_an_installed_package_s_extensions_are_used_from_the_command_line(
    installed: Installed, stand_in: StandIn, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    write_corpus(work / "docs")  # the stand-in drafts from its chunks without tripping the free checks
    env = _env(installed, OPENAI_BASE_URL=stand_in.base_url, OPENAI_API_KEY="plugin-test-key")
    commands = [command for block in _blocks_in(page_section(PAGE, SECTION), "bash") for command in _commands(block)]
    assert [command.split()[:2] for command in commands] == [["qagen", "build"], ["qagen", "evaluate"]]
    for command in commands:
        done = subprocess.run(command, shell=True, cwd=work, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, (command, done.stderr[-3000:])
        assert "Traceback" not in done.stderr, done.stderr[-3000:]

    # The question type: drafted with the package's own prompt, every row of its type.
    run = work / "short_run"
    summary = _summary(run)
    prompt = installed.files["qagen-short/qagen_short/prompts/qa_short.txt"]
    assert summary["prompts"]["qa_short"] == hashlib.sha256(prompt.encode("utf-8")).hexdigest()[:12]
    candidates = load_from_disk(str(run / "candidates"))
    assert len(candidates) == summary["funnel"]["drafted"] == 8
    assert set(candidates["question_type"]) == {"short"} and list(summary["question_types"]) == ["short"]
    assert summary["funnel"]["kept"] > 0
    # The critic: asked by name, after qagen's, its verdicts stored and counted.
    assert summary["settings"]["critics"] == ["precise"]
    precise = [record for record in _lines(run / "critiques.jsonl") if record["criterion"] == "precise"]
    assert precise and all(record["score"] is not None for record in precise)
    assert "precise" in summary["funnel"]["rejected_by"] and "precise" in summary["thresholds"]
    assert any(entry["criterion"] == "precise" for entry in stand_in.entries())  # the stand-in knew its prompt

    # The retriever, the reranker and both metrics, in the evaluation of that set.
    evaluation = work / "short_eval"
    scored = _summary(evaluation)
    assert "overlap" in scored["system"] and "shortest" in scored["system"]
    reranks = _lines(evaluation / "reranks.jsonl")
    assert reranks and {record["reranker"] for record in reranks} == {"shortest"}
    for record in reranks:
        assert record["scores"] == sorted(record["scores"], reverse=True)  # shortest (highest score) first
    rows = _lines(evaluation / "results.jsonl")
    assert len(rows) == summary["funnel"]["kept"]
    for row in rows:
        assert row["answer_words"] == len(row["generated_answer"].split())
        assert row["concise"] in (0.0, 1.0)
    metrics = scored["metrics"]
    assert metrics["answer_words"]["n"] == len(rows) and metrics["concise"]["n"] == len(rows)
    assert metrics["hit@7"]["n"] == len(rows)

    # `--help` names what the package brings.
    help_text = " ".join(
        subprocess.run(
            [sys.executable, "-m", "qagen", "evaluate", "--help"], env=env, capture_output=True, text=True, check=True
        ).stdout.split()
    )
    assert "overlap (the chunks sharing the most words with the question)" in help_text
    assert "shortest (the shortest candidates first)" in help_text
    assert "answer_words (words in the answer)" in help_text
