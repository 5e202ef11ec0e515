"""The wheel holds the library and its prompts, and none of the test stand-ins; installed on its
own, its public API imports.

The wheel is built in-process by the project's own build backend (hatchling, as `pip wheel .`
would), from this checkout, so the test sees exactly the file selection of `pyproject.toml`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # Imported here: without hatchling (a clone installed without the build tools) the tests that
    # need the wheel skip, saying why, and the rest of the suite is still collected.
    wheel_builder = pytest.importorskip(
        "hatchling.builders.wheel", reason="building the wheel needs hatchling: pip install hatchling"
    )
    out = tmp_path_factory.mktemp("wheel")
    (built,) = wheel_builder.WheelBuilder(str(ROOT)).build(directory=str(out), versions=["standard"])
    return Path(built)


def test_the_wheel_holds_the_library_and_its_prompts(wheel: Path) -> None:
    library = {path.relative_to(ROOT).as_posix() for path in (ROOT / "qagen").rglob("*.py")}
    prompts = {f"qagen/prompts/{path.name}" for path in (ROOT / "prompts").iterdir() if path.is_file()}
    assert "qagen/cli/app.py" in library and "qagen/prompts/critique_groundedness.txt" in prompts
    with zipfile.ZipFile(wheel) as archive:
        assert library | prompts <= set(archive.namelist())


def test_the_wheel_holds_no_stand_in(wheel: Path) -> None:
    stand_ins = {path.relative_to(ROOT).as_posix(): path.read_bytes() for path in (ROOT / "standins").rglob("*.py")}
    assert "standins/llm/server.py" in stand_ins and "standins/hub/server.py" in stand_ins
    with zipfile.ZipFile(wheel) as archive:
        shipped = {name: archive.read(name) for name in archive.namelist()}
    # By name: neither the stand-ins' package nor the folder they used to have inside qagen.
    assert [name for name in shipped if name.startswith("standins/") or "/testing/" in name] == []
    # By content: no stand-in module under any other name either.
    copies = {name for name, data in shipped.items() if data.strip() and data in stand_ins.values()}
    assert copies == set()


# Run with only the installed wheel's qagen on the path (its dependencies come from this environment).
PUBLIC_API = """
import sys
import qagen
assert qagen.__file__.startswith(sys.argv[1]), qagen.__file__
qagen.build; qagen.evaluate; qagen.push; qagen.report; qagen.rag_baseline
print(qagen.__version__)
"""


@pytest.mark.slow
def test_the_installed_wheel_exports_the_public_api(wheel: Path, tmp_path: Path) -> None:
    # `pip install qagen` installs the wheel, not the checkout: a module missing from it fails here.
    target, elsewhere = tmp_path / "site", tmp_path / "elsewhere"
    elsewhere.mkdir()
    install = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--target", str(target), str(wheel)]
    installed = subprocess.run([*install, "-q"], capture_output=True, text=True, timeout=300, check=False)
    assert installed.returncode == 0, installed.stderr
    env = {**os.environ, "PYTHONPATH": str(target)}  # the checkout is neither on the path nor the cwd
    done = subprocess.run(
        [sys.executable, "-c", PUBLIC_API, str(target)], cwd=elsewhere, env=env, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    import qagen

    assert done.stdout.strip() == qagen.__version__
