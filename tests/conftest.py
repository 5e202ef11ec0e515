"""Test-wide setup: no traffic leaves the machine, and the Hub libraries point at a local stand-in.

`HF_ENDPOINT` and `HF_HUB_DISABLE_XET` are read when `huggingface_hub` / `datasets` are imported,
so they are set here, at import time of the first conftest, before any test module imports them.
The Hub stand-in itself is started by a fixture on the port chosen here.
"""

from __future__ import annotations

import os
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


HUB_PORT = _free_port()
_STATE = Path(tempfile.mkdtemp(prefix="qagen-tests-"))
os.environ["HF_ENDPOINT"] = f"http://127.0.0.1:{HUB_PORT}"
os.environ["HF_HUB_DISABLE_XET"] = "1"
os.environ["HF_HOME"] = str(_STATE / "hf_home")
os.environ["HF_DATASETS_CACHE"] = str(_STATE / "hf_datasets_cache")
os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
# qagen's own cache (the baseline's indexes): never the user's. Each test gets a folder of its own
# (`_isolated_home`); this one serves what runs before any test, such as module-scoped fixtures.
os.environ["QAGEN_CACHE"] = str(_STATE / "qagen_cache")
os.environ.pop("HF_TOKEN", None)
os.environ.pop("OPENAI_API_KEY", None)
os.environ.pop("OPENAI_BASE_URL", None)
# Commands the tests run find duplicates by words only unless a test asks for embeddings: loading the
# bundled embeddings model takes 10-15 s in every `qagen` process (library builds load it once).
os.environ["QAGEN_DEDUP_EMBEDDINGS"] = "none"

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _is_loopback(address: object) -> bool:
    if isinstance(address, tuple) and address:
        host = str(address[0])
        return host in {"127.0.0.1", "::1", "localhost"} or host.startswith("127.")
    # Unix sockets and the like stay on the machine.
    return not isinstance(address, tuple)


def _guarded_connect(self: socket.socket, address: object) -> None:
    if not _is_loopback(address):
        raise OSError(f"tests may not leave the machine (tried to connect to {address!r})")
    _real_connect(self, address)  # type: ignore[arg-type]


def _guarded_connect_ex(self: socket.socket, address: object) -> int:
    if not _is_loopback(address):
        raise OSError(f"tests may not leave the machine (tried to connect to {address!r})")
    return _real_connect_ex(self, address)  # type: ignore[arg-type]


socket.socket.connect = _guarded_connect  # type: ignore[method-assign]
socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign]


@pytest.fixture(scope="session")
def hub_port() -> int:
    """The port `HF_ENDPOINT` points at; the Hub stand-in fixture listens there."""
    return HUB_PORT


@pytest.fixture(scope="session")
def reference_data() -> Path:
    """`../shared/reference/data`, read in place (never copied into the repository)."""
    here = Path(__file__).resolve().parent.parent
    data = here.parent / "shared" / "reference" / "data"
    if not data.is_dir():
        # A contributor's clone has no ../shared: these tests skip there, saying why. CI has it and
        # sets QAGEN_REQUIRE_REFERENCE_DATA, so there a missing folder fails instead of skipping.
        message = f"reference data not found at {data} (real LLM replies and the cookbook's eval set)"
        if os.environ.get("QAGEN_REQUIRE_REFERENCE_DATA"):
            pytest.fail(f"{message}; ../shared must sit beside the repository")
        pytest.skip(message)
    return data


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No test reads or writes the user's real configuration, keys or cache; no test sees another's cache."""
    monkeypatch.setenv("QAGEN_CACHE", str(tmp_path_factory.mktemp("qagen_cache")))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    yield


from standins.corpus import write_corpus  # noqa: E402


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    """A folder of 24 generated documents (about 90 chunks of 400 characters)."""
    return write_corpus(tmp_path / "corpus")


@pytest.fixture()
def llm() -> Iterator[Any]:
    """A fresh stand-in OpenAI-compatible server on 127.0.0.1."""
    from standins.llm.server import StandInLLM

    with StandInLLM() as server:
        yield server


@pytest.fixture(scope="session")
def shared_llm() -> Iterator[Any]:
    """One stand-in LLM for the whole session, at its default knobs, for tests that neither change its
    knobs nor read its log (those take `llm`, a server of their own)."""
    from standins.llm.server import StandInLLM

    with StandInLLM() as server:
        yield server
    assert server.knobs == StandInLLM().knobs, "a test changed the shared stand-in's knobs: it needs `llm`"


@pytest.fixture()
def fake_llm() -> Any:
    """The stand-in LLM's replies without its server (`tests/fake_llm.py`): `fake_llm.client()` is a
    ready model for any role, `fake_llm.log` the requests it answered. Tests of the transport,
    faults, batches, the CLI or whole runs use `llm`, the HTTP stand-in."""
    from fake_llm import FakeLLM

    return FakeLLM()


@pytest.fixture(scope="session")
def hub(hub_port: int) -> Iterator[Any]:
    """The stand-in Hub where `HF_ENDPOINT` points, shared by the session (one server per port).

    Tokens: `hf_test_token` is alice, `hf_bob_token` is bob. Tests use unique repo ids, since
    both Hub libraries fall back to cached copies of a repo id they have seen.
    """
    from standins.hub.server import StandInHub

    with StandInHub(port=hub_port, tokens={"hf_test_token": "alice", "hf_bob_token": "bob"}) as server:
        yield server
    # Every client call of the session must have found its route.
    assert server.unhandled_routes == []


# Filled by tests/test_notebook.py, so that even `pytest -q` (CI's command) says the notebook ran.
EXECUTED_NOTEBOOKS: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Under `QAGEN_TEST_OUTCOMES=FILE`, append each test's outcome and id to FILE ("skipped tests/x.py::test_y"):
    `.ci/run` reads which tests its first pass skipped, to run them, and only them, again with every extra."""
    outcomes = os.environ.get("QAGEN_TEST_OUTCOMES")
    # A test's outcome is its call's, or its setup's when that skipped or failed (then nothing was called).
    if outcomes and (report.when == "call" or (report.when == "setup" and not report.passed)):
        with open(outcomes, "a", encoding="utf-8") as handle:
            handle.write(f"{report.outcome} {report.nodeid}\n")


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for line in EXECUTED_NOTEBOOKS:
        terminalreporter.write_line(f"notebook executed: {line}")
    left_out = [item for item in terminalreporter.stats.get("deselected", []) if item.get_closest_marker("slow")]
    if left_out:
        runs = "`python -m pytest -m slow` runs them, `python -m pytest -m ''` every test"
        terminalreporter.write_line(f"{len(left_out)} slow tests left out: {runs}")
