"""A built run to review: made once per test session against the shared stand-in LLM, with the critics'
early stop; each test gets a copy of its own (`built_run`). And the stand-in with a hidden truth and its
corpus, for the certified builds (`truth_llm`, `truth_corpus`)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from qagen.cli.app import main
from standins.corpus import write_corpus

GOOD_RATE = 0.4
"""The stand-in's share of good drafts under `truth_llm` (its hidden truth: `standins.llm.truth`)."""


@pytest.fixture(scope="module")
def truth_llm() -> Iterator[Any]:
    """The stand-in with a hidden truth, for a module's builds and labels."""
    from standins.llm.server import StandInLLM

    with StandInLLM() as server:
        # Every other check passes: the `supported` P(yes) alone separates good drafts from the others.
        server.configure(logprobs=True, good_rate=GOOD_RATE, pass_rate=1.0)
        yield server


@pytest.fixture(scope="module")
def truth_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A corpus large enough for several rounds of 200 drafts."""
    return write_corpus(tmp_path_factory.mktemp("corpus") / "corpus", documents=72)


# The cookbook's 1-5 critics: the thresholds the review recommends are read on their scale.
BUILD_ARGS = ["--chunk-size", "400", "--chunk-overlap", "40", "--seed", "7", "-q", "--vetting", "cookbook"]


def invoke(*args: object) -> Result:
    return CliRunner().invoke(main, [str(arg) for arg in args], catch_exceptions=False)


def build_run(llm: Any, corpus: Path, out: Path, *, n: int = 80) -> Path:
    """A run of `n` drafts whose critics stop at the first rejection (the default)."""
    model = ["--generator-model", "openai:stand-in", "--base-url", llm.base_url]
    result = invoke("build", corpus, "--out", out, *model, "-n", n, *BUILD_ARGS)
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="session")
def review_run_once(shared_llm: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run `built_run` copies, built once for the session (a test that reads the LLM's log of the
    build, or asks the run's server and counts its calls, builds its own with `build_run` and `llm`)."""
    corpus = write_corpus(tmp_path_factory.mktemp("review_corpus") / "corpus")
    return build_run(shared_llm, corpus, tmp_path_factory.mktemp("review_run") / "run")


@pytest.fixture()
def built_run(review_run_once: Path, tmp_path: Path) -> Path:
    run = tmp_path / "run"
    shutil.copytree(review_run_once, run)
    return run


@pytest.fixture()
def run_copy(built_run: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "copy"
    shutil.copytree(built_run, copy)
    return copy
