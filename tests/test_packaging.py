"""The wheel holds the library and its prompts, and none of the test stand-ins.

The wheel is built in-process by the project's own build backend (hatchling, as `pip wheel .`
would), from this checkout, so the test sees exactly the file selection of `pyproject.toml`.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from hatchling.builders.wheel import WheelBuilder

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    (built,) = WheelBuilder(str(ROOT)).build(directory=str(out), versions=["standard"])
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
