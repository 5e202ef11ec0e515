"""What `qagen build` imports before its first LLM call: nothing of the evaluation, the review or
publishing, and none of the libraries only later steps use (the final write's `datasets`, `numpy`)
or that it does without (`openai`). Each is a part of a second a build would wait before its first
call (benchmarks/bench_build_timeline.py measures it). Chunking imports LangChain's text splitter (and
`langchain_core` and `requests` under it): the splitter the notebook uses, kept rather than copied."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
NOT_BEFORE_THE_FIRST_CALL = (
    "qagen.evaluate",
    "qagen.review",
    "qagen.publish",
    "langchain_openai",
    "langchain",
    "openai",
    "datasets",
    "pyarrow",
    "numpy",
)

# The real command, run until its first call: the transport's `post` reports the modules loaded by then
# and ends the process (no server is reached).
_FIRST_CALL = """
import json, os, sys
import qagen.llm.transport

async def first_call(self, body):
    print(json.dumps(sorted(sys.modules)), flush=True)
    os._exit(0)

qagen.llm.transport.ChatTransport.post = first_call
from qagen.cli.app import main
main.main(args=sys.argv[1:], prog_name="qagen")
"""


def _loaded(*args: str, cwd: Path) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", _FIRST_CALL, *args], capture_output=True, text=True, timeout=120, check=False, cwd=cwd
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines, f"no call was made: {done.stderr}"
    return list(json.loads(lines[-1]))


def _heavy(modules: list[str]) -> list[str]:
    return [name for name in modules if any(name == p or name.startswith(f"{p}.") for p in NOT_BEFORE_THE_FIRST_CALL)]


def test_a_build_imports_nothing_it_does_not_use_before_its_first_call(tmp_path: Path) -> None:
    args = ("build", str(REPOSITORY / "examples" / "corpus"), "--out", str(tmp_path / "run"), "-q")
    loaded = _loaded(*args, "--base-url", "http://127.0.0.1:9/v1", "--n-generations", "3", cwd=tmp_path)
    assert "qagen.generation.pipeline" in loaded  # the build did run up to its first call
    assert not _heavy(loaded)


def test_the_build_s_help_imports_no_evaluation_review_or_publishing(tmp_path: Path) -> None:
    args = ("build", "--help")
    code = "import sys\nfrom qagen.cli.app import main\ntry:\n    main.main(args=sys.argv[1:], prog_name='qagen')\n"
    code += "except SystemExit:\n    import json\n    print(json.dumps(sorted(sys.modules)))\n"
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60, check=True, cwd=tmp_path
    )
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert "Usage: qagen" in done.stdout
    assert not [name for name in loaded if name.startswith(("qagen.evaluate", "qagen.review", "qagen.publish"))]
