"""One registry for every kind of extension: critics, question types, metrics (LLM and
deterministic), retrievers and rerankers.

A registry holds one kind's specs by name, in the order they were registered (the order of
columns, funnels and help). qagen's own extensions are registered with `Registry.register`, and so
is every extension an installed package brings: a package lists its specs as entry points of the
kind's group (`qagen.<kind>`, e.g. `qagen.retrievers`), each named as its spec and pointing at the
spec object (`overlap = "my_package.retrieval:OVERLAP"`). They are loaded the first time the
registry is read, so importing qagen loads no package of anyone else's, and a command that never
reads a kind never loads its packages.

A package whose entry point cannot be loaded, is not a spec of the kind, is named otherwise than its
spec, or takes a name qagen has already stops the command that reads the registry with one sentence
that names the package and the way forward: an extension is never dropped without a word.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from importlib.metadata import EntryPoint, entry_points
from typing import Generic, Protocol, TypeVar

from qagen.errors import ConfigError


class Named(Protocol):
    """What a registry holds: a spec with a name."""

    @property
    def name(self) -> str: ...


SpecT = TypeVar("SpecT", bound=Named)

ENTRY_POINT_PREFIX = "qagen."
"""An installed package's extensions of a kind are the entry points of the group `qagen.<kind>`."""


class Registry(Generic[SpecT]):
    """One kind's specs by name: qagen's own and installed packages' (`ENTRY_POINT_PREFIX` + `kind`)."""

    def __init__(
        self,
        kind: str | None,
        spec_type: type[SpecT],
        *,
        noun: str,
        plural: str | None = None,
        specs: Iterable[SpecT] = (),
        check: Callable[[SpecT], None] | None = None,
    ) -> None:
        """`kind` names the entry-point group installed packages extend (None: this registry takes no
        package's extensions, a registry made for one run); `noun` says what a spec is in messages
        (`question type`), `plural` what several are (default: `noun` + s); `check` refuses a spec
        before it is registered (raising ConfigError)."""
        self.group = None if kind is None else ENTRY_POINT_PREFIX + kind
        self.spec_type = spec_type
        self.noun = noun
        self.plural = plural or f"{noun}s"
        self._check = check
        self._specs: dict[str, SpecT] = {}
        self._installed: dict[str, str] = {}  # name -> the distribution that brought it
        self._loaded = self.group is None
        self._loading = threading.RLock()  # re-entrant: a package's module may read the registry it is loaded by
        self._in_load = False
        for spec in specs:
            self.register(spec)

    def register(self, spec: SpecT) -> SpecT:
        """Add a spec under its name; a name taken already is refused."""
        if spec.name in self._specs:
            raise ConfigError(f"A {self.noun} named {spec.name} is registered already; give yours another name.")
        if self._check is not None:
            self._check(spec)
        self._specs[spec.name] = spec
        return spec

    def unregister(self, name: str) -> None:
        """Take a spec out again (a test, or a plugin that replaces one)."""
        self.get(name)
        del self._specs[name]
        self._installed.pop(name, None)

    def get(self, name: str) -> SpecT:
        try:
            return self.specs()[name]
        except KeyError:
            raise ConfigError(
                f"There is no {self.noun} named {name!r}; the {self.plural} are {', '.join(self._specs)}."
            ) from None

    def __contains__(self, name: object) -> bool:
        return name in self.specs()

    def __iter__(self) -> Iterator[SpecT]:
        return iter(tuple(self.specs().values()))

    def __len__(self) -> int:
        return len(self.specs())

    def names(self) -> tuple[str, ...]:
        return tuple(self.specs())

    def specs(self) -> dict[str, SpecT]:
        """Every spec by name, installed packages' loaded first (once). A thread that reads the registry
        while another loads them waits for it (a server answering requests in threads)."""
        if not self._loaded:
            with self._loading:
                # In the loading thread, a package's module that reads this registry sees it as loaded so far.
                if not self._loaded and not self._in_load:
                    self._in_load = True
                    try:
                        self._load_installed()
                    finally:
                        self._in_load = False
        return self._specs

    def _load_installed(self) -> None:
        """Register every installed package's spec of this kind, or none: a refusal takes back the others,
        so every later read is refused the same way."""
        before = dict(self._specs)
        try:
            for point in sorted(entry_points(group=self.group or ""), key=_point_order):
                self._register_installed(point)
        except ConfigError:
            self._specs, self._installed = before, {}
            raise
        self._loaded = True

    def own(self) -> tuple[SpecT, ...]:
        """The specs registered by code in this process (qagen's own, then `register` calls), without
        loading any installed package: what text fixed when qagen is imported (help, the
        configuration page) lists, the same whichever packages are installed."""
        return tuple(spec for name, spec in self._specs.items() if name not in self._installed)

    def installed_by(self, name: str) -> str | None:
        """The distribution whose entry point brought the spec `name`; None: registered by code."""
        self.specs()
        return self._installed.get(name)

    def _register_installed(self, point: EntryPoint) -> None:
        package = point.dist.name if point.dist is not None else point.value.split(":")[0]
        where = f"The package {package} brings the {self.noun} {point.name} ({self.group} entry point {point.value})"
        try:
            spec = point.load()
        except Exception as exc:  # any failure of someone else's module is theirs to fix, said as such
            raise ConfigError(
                f"{where}, which cannot be loaded: {type(exc).__name__}: {exc}. Fix that package or uninstall it."
            ) from exc
        if not isinstance(spec, self.spec_type):
            raise ConfigError(
                f"{where}, which is a {type(spec).__name__}, not a {self.spec_type.__name__}; its entry point must "
                f"name a {self.spec_type.__name__}. Fix that package or uninstall it."
            )
        if spec.name != point.name:
            raise ConfigError(
                f"{where}, whose spec is named {spec.name}; an entry point is named as its spec. Fix that package "
                "or uninstall it."
            )
        if spec.name in self._specs:
            brought = self._installed.get(spec.name)
            other = f"the package {brought}" if brought else "qagen"
            raise ConfigError(f"{where}, a name {other} has already; uninstall one of the two.")
        try:
            self.register(spec)
        except ConfigError as exc:
            raise ConfigError(f"{where}, which is refused: {exc} Fix that package or uninstall it.") from exc
        self._installed[spec.name] = package


def _point_order(point: EntryPoint) -> tuple[str, str]:
    """Entry points in a fixed order, whatever the order of the path they were found on."""
    return (point.dist.name if point.dist is not None else "", point.name)
