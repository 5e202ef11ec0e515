"""A built run to review: made once per module against the stand-in LLM, with the critics' early stop."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from qagen.cli.app import main

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


@pytest.fixture()
def built_run(llm: Any, corpus: Path, tmp_path: Path) -> Path:
    return build_run(llm, corpus, tmp_path / "run")


@pytest.fixture()
def run_copy(built_run: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "copy"
    shutil.copytree(built_run, copy)
    return copy
