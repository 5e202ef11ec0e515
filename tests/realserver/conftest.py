"""The real-server fixtures: llama-cpp-python's OpenAI-compatible server with SmolLM2-135M-Instruct.

The server is found in this interpreter first, else in the one `QAGEN_LLAMA_PYTHON` names (so a
developer can keep llama-cpp-python in a venv of its own). Without it the tests skip and say what
to install; with `QAGEN_REQUIRE_REAL_LLM=1` (CI) they fail instead, so the suite cannot pass there
without having run them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from conftest import SUMMARY_LINES

from realserver.llama import REQUIRE_ENV, RealServer, ServerDidNotStart, find_llama, serve


@pytest.fixture(scope="module")
def real_server() -> Iterator[RealServer]:
    """The real server, for one test module (it holds the model in memory: stopped after the module).

    Skips when it is not installed; fails instead under `QAGEN_REQUIRE_REAL_LLM=1`.
    """
    install = find_llama()
    if isinstance(install, str):
        if os.environ.get(REQUIRE_ENV, "").strip() not in {"", "0"}:
            pytest.fail(f"{REQUIRE_ENV} is set, but {install}", pytrace=False)
        pytest.skip(install)
    try:
        with serve(install) as server:
            # The terminal summary shows it once, however many modules start a server.
            SUMMARY_LINES.append(f"real LLM: {server.description} ({install.python})")
            yield server
    except ServerDidNotStart as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def real_llm_notes() -> list[str]:
    """Lines a test adds to the terminal summary (what the real model did): `tests/conftest.py` carries
    them from the worker that ran the test."""
    return SUMMARY_LINES
