"""The package's layers hold: no import circle, and no module imports one of a higher layer.

Imports inside functions count (they run, only later); those under ``if TYPE_CHECKING:`` do
not. Importing ``subagents.a.b`` runs ``subagents/a/__init__.py`` first, so it counts as an
import of ``subagents.a`` too. ARCHITECTURE.md explains the layers; this is where they are
written down.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import subagents

PACKAGE = Path(subagents.__file__).parent

# Low to high. A module belongs to the layer of the longest name here that it starts with;
# it may import its own layer and the layers below.
LAYERS: tuple[tuple[str, ...], ...] = (
    (  # foundation: no knowledge of agents, files or providers
        "subagents.errors",
        "subagents.status",
        "subagents.messages",
        "subagents.todos",
        "subagents.matchers",
        "subagents.redaction",
        "subagents._lazy",
        "subagents._loop",
        "subagents._preview",
        "subagents._process",
        "subagents._read_capped",
        "subagents._sdk_logs",
        "subagents._yaml",
        "subagents.store.url",
        "subagents.tools.web.settings",
    ),
    ("subagents.models", "subagents.testing"),
    ("subagents.config",),
    ("subagents.tools", "subagents.mcp", "subagents.secrets", "subagents.store"),
    ("subagents.definitions", "subagents.skills", "subagents.suggest"),
    ("subagents.tools.builtin", "subagents.inventory"),
    ("subagents.runtime", "subagents.tracing"),
    ("subagents.workflows",),
    ("subagents.runtime.runtime",),  # the facade: runs sessions and workflows
    ("subagents.workers",),
    ("subagents.cli", "subagents.__main__"),
)
ROOT = "subagents"
"""The package's own ``__init__``: names loaded lazily, so in the foundation."""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def modules() -> dict[str, Path]:
    return {module_name(path): path for path in PACKAGE.rglob("*.py")}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imported_names(name: str, path: Path) -> Iterator[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    pending: list[ast.AST] = [ast.parse(path.read_text(), str(path))]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.If) and _is_type_checking(node):
            pending.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            yield source
            yield from (f"{source}.{alias.name}" for alias in node.names)
        pending.extend(ast.iter_child_nodes(node))


@cache
def imports_of(name: str) -> frozenset[str]:
    """The modules of the package that ``name`` imports by name, itself excluded."""
    known = modules()
    found: set[str] = set()
    for imported in _imported_names(name, known[name]):
        while imported not in known and "." in imported:
            imported = imported.rpartition(".")[0]
        if imported in known and imported != name:
            found.add(imported)
    return frozenset(found)


@cache
def runs_on_import(name: str) -> frozenset[str]:
    """:func:`imports_of`, and the packages whose ``__init__`` runs first."""
    found = set(imports_of(name))
    for imported in imports_of(name):
        parts = imported.split(".")
        found.update(".".join(parts[:end]) for end in range(1, len(parts)))
    return frozenset(other for other in found if other != name and not name.startswith(other + "."))


def layer_of(name: str) -> int:
    if name == ROOT:
        return 0
    matches = [
        (len(prefix), index)
        for index, layer in enumerate(LAYERS)
        for prefix in layer
        if name == prefix or name.startswith(prefix + ".")
    ]
    assert matches, f"{name} is in no layer: add it to LAYERS in tests/core/test_layers.py"
    return max(matches)[1]


def import_circles() -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(runs_on_import(node)):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group: list[str] = []
            while not group or group[-1] != node:
                group.append(stack.pop())
                on_stack.discard(group[-1])
            if len(group) > 1:
                circles.append(sorted(group))

    for name in sorted(modules()):
        if name not in index:
            visit(name)
    return circles


def test_every_module_has_a_layer() -> None:
    for name in modules():
        layer_of(name)


def test_no_module_imports_a_higher_layer() -> None:
    upward = sorted(
        f"{name} (layer {layer_of(name)}) imports {other} (layer {layer_of(other)})"
        for name in modules()
        for other in imports_of(name)
        if layer_of(other) > layer_of(name)
    )
    assert not upward, "\n".join(upward)


def test_no_import_circle() -> None:
    assert not import_circles(), "\n".join(" <-> ".join(group) for group in import_circles())


def test_the_checks_see_imports_inside_functions_and_not_type_checking_ones(
    tmp_path: Path,
) -> None:
    source = tmp_path / "probe.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from subagents.cli import app\n"
        "def later():\n    from subagents.runtime.runtime import Runtime\n"
    )
    names = set(_imported_names("subagents.probe", source))
    assert "subagents.runtime.runtime" in names
    assert not any(name.startswith("subagents.cli") for name in names)


def test_below_the_facade_nothing_names_runtime_even_for_type_checking() -> None:
    """Sessions, runs, delegation and workflows are written against ``Services``
    (:mod:`subagents.runtime.services`), so the facade can change without them."""
    facade = "subagents.runtime.runtime"
    naming = sorted(
        name
        for name, path in modules().items()
        if name not in (ROOT, facade)
        and layer_of(name) < layer_of(facade)
        and f"from {facade} import" in path.read_text()
    )
    assert not naming, naming
