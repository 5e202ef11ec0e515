"""The one registry (`qagen.registry`): specs by name in registration order, and the specs an installed
package brings through entry points, loaded when the registry is first read, each refusal one
sentence naming the package."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from qagen.errors import ConfigError
from qagen.registry import Registry


@dataclass(frozen=True)
class Thing:
    name: str
    size: int = 1


def _no_big_things(spec: Thing) -> None:
    if spec.size > 9:
        raise ConfigError(f"The thing {spec.name} is too big.")


def registry(kind: str | None = "things") -> Registry[Thing]:
    return Registry(kind, Thing, noun="thing", specs=(Thing("a"), Thing("b")), check=_no_big_things)


def test_specs_by_name_in_registration_order() -> None:
    things = registry(None)
    things.register(Thing("c", 3))
    assert things.names() == ("a", "b", "c")
    assert [spec.name for spec in things] == ["a", "b", "c"]
    assert things.get("c").size == 3 and "c" in things and "d" not in things and len(things) == 3
    with pytest.raises(ConfigError, match=r"There is no thing named 'd'; the things are a, b, c\."):
        things.get("d")
    with pytest.raises(ConfigError, match="A thing named a is registered already"):
        things.register(Thing("a"))
    with pytest.raises(ConfigError, match="too big"):
        things.register(Thing("e", 10))
    things.unregister("c")
    assert things.names() == ("a", "b")


@pytest.fixture()
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder on sys.path where a test writes packages with their metadata, as pip installs them."""
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in [name for name in sys.modules if name.startswith("thing_package")]:
        del sys.modules[name]


def install(folder: Path, package: str, module: str, entry_points: str) -> None:
    (folder / f"{package}.py").write_text(module, encoding="utf-8")
    info = folder / f"{package}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(entry_points, encoding="utf-8")
    importlib.invalidate_caches()


# The package's module makes its specs of the class this test module holds, under the name it was imported as.
MODULE = f"""
from {Thing.__module__} import Thing

BIG = Thing("big", 5)
HUGE = Thing("huge", 50)
NOT_A_THING = "big"
"""


def test_an_installed_package_s_specs_are_loaded_when_the_registry_is_first_read(installed: Path) -> None:
    install(installed, "thing_package", MODULE, "[qagen.things]\nbig = thing_package:BIG\n")
    things = registry()
    assert "thing_package" not in sys.modules  # nothing of the package is imported before a read
    assert things.own() == (Thing("a"), Thing("b"))
    assert things.names() == ("a", "b", "big")
    assert things.get("big") == Thing("big", 5)
    assert things.installed_by("big") == "thing_package" and things.installed_by("a") is None
    assert things.own() == (Thing("a"), Thing("b"))  # still qagen's own alone
    assert "big" not in registry(None)  # a registry of no kind reads no entry point


@pytest.mark.parametrize(
    ("entry_point", "message"),
    [
        ("big = thing_package:MISSING", r"brings the thing big \(.*\), which cannot be loaded: AttributeError"),
        ("big = no_such_module:BIG", r"which cannot be loaded: ModuleNotFoundError"),
        ("big = thing_package:NOT_A_THING", r"which is a str, not a Thing"),
        ("large = thing_package:BIG", r"brings the thing large .* whose spec is named big"),
        ("huge = thing_package:HUGE", r"which is refused: The thing huge is too big\."),
        ("a = thing_package:BIG", r"whose spec is named big"),
    ],
)
def test_a_package_that_cannot_be_used_is_named_with_the_way_forward(
    installed: Path, entry_point: str, message: str
) -> None:
    install(installed, "thing_package", MODULE, f"[qagen.things]\n{entry_point}\n")
    with pytest.raises(ConfigError, match=message) as refused:
        registry().names()
    assert "The package thing_package brings" in str(refused.value)
    assert str(refused.value).endswith("Fix that package or uninstall it.")


def test_a_package_cannot_take_a_name_qagen_has(installed: Path) -> None:
    module = MODULE + "\nA = Thing('a', 2)\n"
    install(installed, "thing_package", module, "[qagen.things]\na = thing_package:A\n")
    with pytest.raises(ConfigError, match=r"brings the thing a .*, a name qagen has already; uninstall one of the two"):
        registry().get("a")


def test_a_refused_package_is_refused_on_every_read(installed: Path) -> None:
    module = MODULE + "\nSECOND = Thing('huge', 50)\n"
    points = "[qagen.things]\nbig = thing_package:BIG\nhuge = thing_package:SECOND\n"
    install(installed, "thing_package", module, points)
    things = registry()
    for _ in range(2):
        with pytest.raises(ConfigError, match="which is refused: The thing huge is too big"):
            things.names()
    assert things.own() == (Thing("a"), Thing("b"))


def test_readers_in_other_threads_wait_for_the_packages(installed: Path) -> None:
    slow = MODULE.replace("BIG = ", "import time\ntime.sleep(0.3)\nBIG = ")
    install(installed, "thing_package", slow, "[qagen.things]\nbig = thing_package:BIG\n")
    things = registry()
    with ThreadPoolExecutor(4) as pool:
        seen = list(pool.map(lambda _: things.names(), range(4)))
    assert seen == [("a", "b", "big")] * 4
