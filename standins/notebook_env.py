"""Run the example notebook against the stand-in LLM and Hub, with no key and no network.

The notebook reads its settings from the environment like any user's notebook would
(`OPENAI_BASE_URL`, `OPENAI_API_KEY`, `HF_TOKEN`, and `QAGEN_MODEL` / `QAGEN_CORPUS` /
`QAGEN_HF_REPO` for its own variables), so it needs no test mode: the tests start the stand-ins,
hand the kernel an environment that points at them (`kernel_environment`), and execute a copy of
the notebook (`execute_notebook`). The kernel is a process of its own, outside the test suite's
socket guard, so an IPython startup file installs the same loopback-only guard in it before the
first cell runs; the notebook itself stays exactly what a user runs.

By hand (writes the executed copy, outputs included, for a look at what users will see)::

    python -m standins.notebook_env notebooks/rag_evaluation.ipynb --out /tmp/executed.ipynb

Needs `nbclient`, `nbformat` and `ipykernel` (development dependencies).
"""

from __future__ import annotations

import argparse
import importlib
import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "HUB_TOKEN",
    "HUB_USER",
    "block_non_loopback",
    "execute_notebook",
    "kernel_environment",
    "main",
    "write_loopback_guard",
]

HUB_TOKEN = "hf_notebook_token"
"""The token `main` registers on its stand-in Hub (user `HUB_USER`)."""
HUB_USER = "alice"
DEFAULT_MODEL_SPEC = "openai:stand-in"
CELL_TIMEOUT = 120.0
"""Seconds one cell may take; the whole notebook takes a few seconds against the stand-ins."""

# Variables of the caller's environment that must not reach the kernel: a real key, endpoint or
# Hub setting would send the notebook's calls (and the test corpus) somewhere other than the
# stand-ins, and a user's cache would hand back datasets seen before.
_SCRUBBED_PREFIXES = ("OPENAI_", "HF_", "HUGGINGFACE_", "QAGEN_", "ANTHROPIC_", "TIKTOKEN_")
_GUARD_FILE = "00-qagen-loopback-guard.py"
# The kernel's own import path stays the user's: standins/ is not installed, so the guard loads this
# file by its path rather than by module name.
_GUARD_SOURCE = """\
# Written by standins.notebook_env: this kernel may only connect to loopback addresses.
import importlib.util

_spec = importlib.util.spec_from_file_location("_qagen_loopback_guard", {module_path!r})
_guard = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_guard)
_guard.block_non_loopback()
"""


def _is_loopback(address: object) -> bool:
    if isinstance(address, tuple) and address:
        host = str(address[0])
        return host in {"::1", "localhost"} or host.startswith("127.")
    return not isinstance(address, tuple)  # Unix sockets and the like stay on the machine


def block_non_loopback() -> None:
    """Make every `socket.connect` in this process to a non-loopback address fail (idempotent)."""
    if getattr(socket.socket.connect, "_qagen_loopback_only", False):
        return
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def connect(self: socket.socket, address: Any) -> None:
        if not _is_loopback(address):
            raise OSError(f"this kernel may not leave the machine (tried to connect to {address!r})")
        real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        if not _is_loopback(address):
            raise OSError(f"this kernel may not leave the machine (tried to connect to {address!r})")
        return real_connect_ex(self, address)

    connect._qagen_loopback_only = True  # type: ignore[attr-defined]
    socket.socket.connect = connect  # type: ignore[method-assign,assignment]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign,assignment]


def write_loopback_guard(ipython_dir: Path) -> Path:
    """An IPython directory whose startup file calls `block_non_loopback` in every kernel using it."""
    startup = ipython_dir / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    path = startup / _GUARD_FILE
    path.write_text(_GUARD_SOURCE.format(module_path=str(Path(__file__).resolve())), encoding="utf-8")
    return ipython_dir


def kernel_environment(
    *,
    llm_base_url: str,
    hub_url: str,
    hf_token: str,
    state_dir: Path,
    model: str = DEFAULT_MODEL_SPEC,
    openai_api_key: str = "stand-in-key",
    extra: Mapping[str, str] | None = None,
    base: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment of a kernel that runs the notebook against the stand-ins.

    `base` (default: this process's environment) keeps PATH, PYTHONPATH and the like; its OpenAI,
    Hub and qagen settings are replaced. Caches and IPython's state go under `state_dir`.
    """
    source = os.environ if base is None else base
    env = {name: value for name, value in source.items() if not name.upper().startswith(_SCRUBBED_PREFIXES)}
    env.update(
        {
            "OPENAI_BASE_URL": llm_base_url,
            "OPENAI_API_KEY": openai_api_key,
            "QAGEN_MODEL": model,
            # Read when `huggingface_hub` is imported; without the Xet switch a push asks the
            # stand-in for a Xet write token, which it does not serve.
            "HF_ENDPOINT": hub_url,
            "HF_HUB_DISABLE_XET": "1",
            "HF_TOKEN": hf_token,
            "HF_HOME": str(state_dir / "hf_home"),
            "HF_DATASETS_CACHE": str(state_dir / "hf_datasets_cache"),
            "HF_HUB_DISABLE_TELEMETRY": "1",
            "HF_HUB_DISABLE_PROGRESS_BARS": "1",
            "IPYTHONDIR": str(write_loopback_guard(state_dir / "ipython")),
            "MPLBACKEND": "Agg",  # no display in CI; figures still reach the notebook as PNGs
        }
    )
    env.update(extra or {})
    return env


def execute_notebook(
    notebook: Path,
    *,
    env: Mapping[str, str],
    cwd: Path,
    timeout: float = CELL_TIMEOUT,
    kernel_name: str = "python3",
) -> Any:
    """Execute `notebook` in a fresh kernel started with `env` in `cwd`; return the executed node.

    The file itself is only read. A cell that raises stops the run with nbclient's
    `CellExecutionError`, which names the cell and carries the kernel's traceback.
    """
    from nbclient import NotebookClient

    node = _nbformat().read(str(notebook), as_version=4)
    client = NotebookClient(
        node,
        timeout=int(timeout),
        kernel_name=kernel_name,
        resources={"metadata": {"path": str(cwd)}},
        allow_errors=False,
    )
    # `env` goes to jupyter_client's `start_kernel`, which uses it as the kernel's whole environment.
    client.execute(env=dict(env))
    return node


def _nbformat() -> Any:
    # Typed as Any on purpose: nbformat has no type hints, and is absent where the dev extra is not
    # installed, so neither a `type: ignore` nor its absence would satisfy mypy in both places.
    return importlib.import_module("nbformat")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m standins.notebook_env",
        description="Execute a notebook against a stand-in LLM and a stand-in Hub on 127.0.0.1.",
    )
    parser.add_argument("notebook", type=Path, help="the .ipynb to execute (only read)")
    parser.add_argument("--out", type=Path, required=True, help="where to write the executed copy")
    parser.add_argument("--corpus", type=Path, default=None, help="QAGEN_CORPUS for the notebook")
    parser.add_argument("--timeout", type=float, default=CELL_TIMEOUT, help="seconds per cell")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Start both stand-ins, execute the notebook in a scratch directory, write the executed copy."""
    from nbclient.exceptions import CellExecutionError

    from standins.hub.server import StandInHub
    from standins.llm.server import StandInLLM

    args = build_parser().parse_args(argv)
    notebook = args.notebook.resolve()
    corpus = args.corpus.resolve() if args.corpus else notebook.parent.parent / "examples" / "corpus"
    scratch = Path(tempfile.mkdtemp(prefix="qagen-notebook-"))
    try:
        with StandInLLM() as llm, StandInHub(tokens={HUB_TOKEN: HUB_USER}) as hub:
            env = kernel_environment(
                llm_base_url=llm.base_url,
                hub_url=hub.url,
                hf_token=HUB_TOKEN,
                state_dir=scratch / "state",
                extra={"QAGEN_CORPUS": str(corpus)},
            )
            work = scratch / "work"
            work.mkdir()
            try:
                executed = execute_notebook(notebook, env=env, cwd=work, timeout=args.timeout)
            except CellExecutionError as exc:
                print(f"error: a cell failed:\n{exc}", file=sys.stderr)
                return 1
        _nbformat().write(executed, str(args.out))
        print(f"executed notebook written to {args.out}")
        return 0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
