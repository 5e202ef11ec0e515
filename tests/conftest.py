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
from hypothesis import settings

# No per-example deadline (hypothesis' default is 200 ms): the suite runs in parallel workers on shared
# machines, where an example's wall time says more about the load than about the code. The tests that
# are about speed assert their own bounds.
settings.register_profile("qagen", deadline=None)
settings.load_profile("qagen")


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


# Lines a test or fixture adds for the end of the run (shown even by `pytest -q`, CI's command): the
# notebook that ran, the real model and what it did. Under pytest-xdist a test runs in a worker process,
# so each line travels to the controller with the report of the test phase that added it.
SUMMARY_LINES: list[str] = []
_SUMMARY_PROPERTY = "qagen_summary_line"
_summary_shown: list[str] = []

# The number of pytest-xdist workers for a run of the whole suite: the tests spend about a third of their
# time waiting on subprocesses and servers, so on 2 cores three workers keep both busy (docs/development.md).
DEFAULT_WORKERS = 3


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """`python -m pytest` with no paths (the README's test command) runs in parallel, a test file per worker
    at a time (`--dist loadfile`: a module's fixtures are built once); a run of chosen paths stays in one
    process (starting workers costs seconds) unless it says `-n`. `-n 0` or `-p no:xdist` runs in one
    process. The default lives here, not in pyproject's addopts, where `-n` is unknown without pytest-xdist."""
    if not config.pluginmanager.hasplugin("xdist") or hasattr(config, "workerinput"):
        return
    whole_suite = config.args_source == pytest.Config.ArgsSource.TESTPATHS
    if whole_suite and config.option.numprocesses is None and not config.option.usepdb:
        config.option.numprocesses = int(os.environ.get("QAGEN_TEST_WORKERS", DEFAULT_WORKERS))
    if config.option.numprocesses and config.option.dist == "no":
        config.option.dist = "loadfile"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[pytest.TestReport]:
    report: pytest.TestReport = yield
    if SUMMARY_LINES:
        # A new list: the report's own is the item's, shared with its other phases' reports.
        report.user_properties = [*report.user_properties, *((_SUMMARY_PROPERTY, line) for line in SUMMARY_LINES)]
        SUMMARY_LINES.clear()
    return report


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Under `QAGEN_TEST_OUTCOMES=FILE`, append each test's outcome and id to FILE ("skipped tests/x.py::test_y"):
    `.ci/run` reads which tests its first pass skipped, to run them, and only them, again with every extra.
    Under pytest-xdist the controller writes it (it sees every worker's reports), the workers do not."""
    for name, value in report.user_properties:
        if name == _SUMMARY_PROPERTY and value not in _summary_shown:
            _summary_shown.append(value)
    outcomes = os.environ.get("QAGEN_TEST_OUTCOMES")
    if not outcomes or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    # A test's outcome is its call's, or its setup's when that skipped or failed (then nothing was called).
    if report.when == "call" or (report.when == "setup" and not report.passed):
        with open(outcomes, "a", encoding="utf-8") as handle:
            handle.write(f"{report.outcome} {report.nodeid}\n")


# How many slow tests `-m` left out. Under pytest-xdist the workers collect (each the same tests) and the
# controller prints the summary, so each worker sends its count back with its session's end.
_slow_left_out: list[int] = [0]


def pytest_deselected(items: list[pytest.Item]) -> None:
    _slow_left_out[0] += sum(1 for item in items if item.get_closest_marker("slow"))


def pytest_sessionfinish(session: pytest.Session) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["qagen_slow_left_out"] = _slow_left_out[0]


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """pytest-xdist's hook on the controller, as each worker ends."""
    _slow_left_out[0] = max(_slow_left_out[0], getattr(node, "workeroutput", {}).get("qagen_slow_left_out", 0))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for line in _summary_shown:
        terminalreporter.write_line(line)
    if _slow_left_out[0]:
        runs = "`python -m pytest -m slow` runs them, `python -m pytest -m ''` every test"
        terminalreporter.write_line(f"{_slow_left_out[0]} slow tests left out: {runs}")
