"""`qagen status` and `qagen agreement` only read a run directory: they must work where it cannot be
written (a colleague's run, a read-only mount). Tests run as root here, for whom file modes do not
stop a write, so the check is an audit hook in a subprocess that refuses any write under the run."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from qagen.review.labels import CriterionLabel, Label, LabelStore

_REFUSING_WRITES = textwrap.dedent(
    """
    import os, sys
    run = os.path.realpath(sys.argv[1])
    WRITES = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC

    def refuse(event, args):
        if event == "open" and isinstance(args[0], str) and os.path.realpath(args[0]).startswith(run):
            mode, flags = args[1], args[2]
            if (isinstance(mode, str) and any(c in mode for c in "wax+")) or flags & WRITES:
                raise PermissionError(f"read-only: {args[0]}")
        if event in ("os.mkdir", "os.rename", "os.replace", "os.remove", "os.unlink", "os.truncate"):
            if str(args[0]).startswith(run):
                raise PermissionError(f"read-only: {args[0]}")

    sys.addaudithook(refuse)
    from qagen.cli.app import main
    main.main(sys.argv[2:], prog_name="qagen")
    """
)


@pytest.mark.parametrize("command", ["status", "agreement"])
def test_a_reading_command_writes_nothing_in_the_run(built_run: Path, command: str) -> None:
    [draft] = [line.split('"')[3] for line in (built_run / "drafts.jsonl").read_text().splitlines()[:1]]
    with LabelStore(built_run) as store:
        store.append(
            Label(
                kind="draft", item_id=draft, reviewer="ana", criteria={"relevance": CriterionLabel.of(True)}, via="page"
            )
        )
    done = subprocess.run(
        [sys.executable, "-c", _REFUSING_WRITES, str(built_run), command, str(built_run)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "read-only" not in done.stderr
