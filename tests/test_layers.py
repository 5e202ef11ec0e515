"""The import graph of `qagen/` keeps its layers: each part imports only what lies below it.

The graph, read from the source with `ast` (nothing is imported):

- a node is a top-level module (`config.py`, `records.py`...) or a top-level folder (`corpus/`,
  `generation/`...) of the package; `__init__` is the package's face (`qagen/__init__.py`);
- an edge is an import of one node's module by another node's module: at module level, inside a
  function (a dependency that only comes later is still a dependency) or under `TYPE_CHECKING`.

`LAYERS` declares the order, lowest first; a node imports nodes of its own layer or below. Why
this order:

1. foundation: the version, errors, failures, small policies every part uses, the one way to import
   matplotlib (`plotting`), the one registry every kind of extension is kept in (`registry`) and how
   counts are written (`words`), importing nothing above them;
2. `records`: the records in flight and the rows written, which everything reads and writes;
3. `llm`: calling models (backends, client, prompts, replies, cost, concurrency);
4. `critics`: the critics' registry (a critic is a prompt the client asks);
5. `corpus`: loading, chunking, tokenising, the BM25 and embedding indexes and their cache, where
   an answer's evidence lies in a chunk, the corpus and chunking settings; what generation and
   evaluation both stand on;
6. `config`: the build's settings;
7. `runs`: record store, run directory, executors (online and batch), which run any task;
8. the features: `generation` (and `question_types`, the build's drafts by type) and `evaluate`,
   side by side and never importing each other;
9. `publish` and `review`, which read what a build or an evaluation wrote;
10. `cli`, the only part that knows flag names; then the package's face and `python -m qagen`.

The bounds this test keeps: generation and evaluation import neither each other; no circle of
imports spans two folders (a circle inside one folder is one part's own business); at most
`MAX_UPWARD` imports run from a lower layer up to a higher one. The one it allows today:
`config` -> `question_types`, the build's settings checking the question-type shares and the
critics the types bring against the question-type registry, which still lives with the types
(a registry below the settings is the way to remove it).
"""

from __future__ import annotations

import ast
import functools
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

PACKAGE = Path(__file__).resolve().parent.parent / "qagen"

LAYERS: tuple[frozenset[str], ...] = (
    frozenset(
        {"_version", "errors", "failures", "output_cap", "redaction", "call_policy", "plotting", "registry", "words"}
    ),
    frozenset({"records"}),
    frozenset({"llm"}),
    frozenset({"critics"}),
    frozenset({"corpus"}),
    frozenset({"config"}),
    frozenset({"runs"}),
    frozenset({"question_types", "generation", "evaluate"}),
    frozenset({"publish", "review"}),
    frozenset({"cli"}),
    frozenset({"__init__"}),
    frozenset({"__main__"}),
)
"""The layers, lowest first (see the module docstring for why)."""

MAX_UPWARD = 2
"""The most node-to-node imports allowed from a lower layer to a higher one."""

SIDE_BY_SIDE = ("generation", "evaluate")
"""Two nodes that stand on the same layers and never on each other."""


class Import(NamedTuple):
    """One import: the importing module and the qagen module it names (both dotted)."""

    importer: str
    imported: str


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_module(dotted: str) -> bool:
    path = PACKAGE.parent.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def imports_in(source: str, importer: str, *, package: bool = False) -> Iterator[Import]:
    """Every qagen module the source of module `importer` imports, wherever in it the import is
    (`package`: the source is a package's `__init__.py`, which relative imports start from)."""
    here = importer.split(".") if package else importer.split(".")[:-1]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from (Import(importer, alias.name) for alias in node.names if alias.name.split(".")[0] == "qagen")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            if target.split(".")[0] != "qagen":
                continue
            for alias in node.names:
                # `from qagen.x import y` names the module `qagen.x.y` when y is one, else a name of `qagen.x`.
                named = f"{target}.{alias.name}"
                yield Import(importer, named if is_module(named) else target)


def node_of(module: str) -> str:
    """The top-level module or folder a dotted module belongs to (`__init__`: the package itself)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def folder_of(module: str) -> str:
    """The folder holding a module's file (a package's `__init__.py` is in the package's folder)."""
    path = PACKAGE.parent.joinpath(*module.split("."))
    return str(path.relative_to(PACKAGE.parent)) if (path / "__init__.py").is_file() else str(path.parent)


class Graph(NamedTuple):
    modules: frozenset[str]
    imports: frozenset[Import]

    @property
    def nodes(self) -> frozenset[str]:
        return frozenset(node_of(module) for module in self.modules)

    def edges(self) -> dict[tuple[str, str], list[Import]]:
        """Node -> node, with the imports that make each edge."""
        edges: dict[tuple[str, str], list[Import]] = defaultdict(list)
        for found in sorted(self.imports):
            ends = (node_of(found.importer), node_of(found.imported))
            if ends[0] != ends[1]:
                edges[ends].append(found)
        return dict(edges)

    def cycles(self) -> list[list[str]]:
        """The strongly connected sets of modules of more than one module (Tarjan's algorithm)."""
        following: dict[str, set[str]] = {module: set() for module in self.modules}
        for found in self.imports:
            if found.imported in following and found.imported != found.importer:
                following[found.importer].add(found.imported)
        index: dict[str, int] = {}
        low: dict[str, int] = {}
        stack: list[str] = []
        on_stack: set[str] = set()
        found_sets: list[list[str]] = []

        def visit(module: str) -> None:
            index[module] = low[module] = len(index)
            stack.append(module)
            on_stack.add(module)
            for other in sorted(following[module]):
                if other not in index:
                    visit(other)
                    low[module] = min(low[module], low[other])
                elif other in on_stack:
                    low[module] = min(low[module], index[other])
            if low[module] == index[module]:
                members: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    members.append(member)
                    if member == module:
                        break
                if len(members) > 1:
                    found_sets.append(sorted(members))

        for module in sorted(self.modules):
            if module not in index:
                visit(module)
        return found_sets


@functools.cache  # the graph is immutable: read once per test run, not once per test
def read_graph() -> Graph:
    paths = sorted(PACKAGE.rglob("*.py"))
    return Graph(
        modules=frozenset(module_name(path) for path in paths),
        imports=frozenset(
            found
            for path in paths
            for found in imports_in(
                path.read_text(encoding="utf-8"), module_name(path), package=path.name == "__init__.py"
            )
        ),
    )


def layer_of(node: str) -> int:
    return next(number for number, layer in enumerate(LAYERS) if node in layer)


def upward_edges(graph: Graph) -> dict[tuple[str, str], list[Import]]:
    return {ends: found for ends, found in graph.edges().items() if layer_of(ends[0]) < layer_of(ends[1])}


def describe(edges: dict[tuple[str, str], list[Import]]) -> str:
    return "\n".join(
        f"{low} -> {high}: " + ", ".join(f"{found.importer} -> {found.imported}" for found in imports)
        for (low, high), imports in sorted(edges.items())
    )


def test_every_node_has_a_layer() -> None:
    placed = [node for layer in LAYERS for node in layer]
    assert len(placed) == len(set(placed)), "a node is declared in two layers"
    unplaced = sorted(read_graph().nodes - set(placed))
    assert not unplaced, f"place {', '.join(unplaced)} in LAYERS (tests/test_layers.py), with why in its docstring"


def test_the_graph_is_read_from_every_import() -> None:
    """Every way of importing is an edge (a reader that missed one would keep the bounds by blindness)."""
    source = """
import json
import qagen.errors
from qagen import records
from qagen.llm import prompts
from qagen.failures import Failure
from . import critics
from ..cli import app

def later() -> None:
    from qagen.runs.store import RecordLog

if TYPE_CHECKING:
    from qagen.config import BuildConfig
"""
    found = {edge.imported for edge in imports_in(source, "qagen.evaluate.api")}
    assert found == {
        "qagen.errors",
        "qagen.records",
        "qagen.llm.prompts",
        "qagen.failures",
        "qagen.evaluate",  # `critics` is no module of `qagen.evaluate`: a name of its package
        "qagen.cli.app",
        "qagen.runs.store",
        "qagen.config",
    }
    graph = read_graph()
    assert Import("qagen.__main__", "qagen.cli.app") in graph.imports
    assert {"generation", "evaluate", "config", "__init__"} <= graph.nodes


def test_generation_and_evaluation_import_neither_each_other() -> None:
    first, second = SIDE_BY_SIDE
    edges = read_graph().edges()
    crossing = {ends: found for ends, found in edges.items() if set(ends) == {first, second}}
    assert not crossing, f"{first} and {second} must stand on `corpus`, not on each other:\n{describe(crossing)}"


def test_no_circle_of_imports_spans_two_folders() -> None:
    spanning = [members for members in read_graph().cycles() if len({folder_of(m) for m in members}) > 1]
    assert not spanning, "circles of imports across folders:\n" + "\n".join(" <-> ".join(m) for m in spanning)


def test_the_command_line_modules_import_no_circle() -> None:
    """The commands are built from the option declarations and the config keys, which never read the
    commands back (a circle through `qagen.cli.app` made every CLI module depend on every other)."""
    circles = [members for members in read_graph().cycles() if any(m.startswith("qagen.cli.") for m in members)]
    assert not circles, circles


def test_at_most_max_upward_imports() -> None:
    upward = upward_edges(read_graph())
    assert len(upward) <= MAX_UPWARD, f"{len(upward)} imports run up the layers (at most {MAX_UPWARD}):\n" + describe(
        upward
    )
