"""The wheel: built from this checkout and installed on its own, its public API imports.

`pip install qagen` installs the wheel, not the checkout: a module or prompt missing from the wheel
would pass every other test here. This builds it with the project's build backend (no network:
hatchling from the environment), installs it without dependencies into a folder of its own (the
dependencies come from this environment), and imports it there with the checkout off the path.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHECK = """
import sys
import qagen
assert qagen.__file__.startswith(sys.argv[1]), qagen.__file__
qagen.build; qagen.evaluate; qagen.push; qagen.report; qagen.rag_baseline
from qagen.llm.prompts import prompts_dir
print(qagen.__version__)
print(" ".join(sorted(path.name for path in prompts_dir().glob("*.txt"))))
"""


def _run(command: list[str], **options: Any) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False, **options)
    assert done.returncode == 0, (command, done.stdout[-2000:], done.stderr[-2000:])
    return done


@pytest.mark.slow
def test_the_built_wheel_installs_and_exports_the_api(tmp_path: Path) -> None:
    pytest.importorskip("hatchling", reason="building the wheel needs hatchling (test extra)")
    wheels, target, elsewhere = tmp_path / "wheels", tmp_path / "site", tmp_path / "elsewhere"
    elsewhere.mkdir()
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    _run([*pip, "wheel", str(ROOT), "--no-deps", "--no-build-isolation", "-w", str(wheels), "-q"])
    [wheel] = wheels.glob("qagen-*.whl")
    _run([*pip, "install", "--no-deps", "--no-index", "--target", str(target), str(wheel), "-q"])
    env = {**os.environ, "PYTHONPATH": str(target)}  # the wheel's qagen, never the checkout's
    done = _run([sys.executable, "-c", CHECK, str(target)], cwd=elsewhere, env=env)
    import qagen

    version, prompts = done.stdout.splitlines()
    assert version == qagen.__version__
    assert prompts.split() == sorted(path.name for path in (ROOT / "prompts").glob("*.txt"))  # every prompt shipped
