"""Nothing under ``subagents.runtime`` imports in a circle.

The graph is read from the source (``ast``), not from ``sys.modules``: an edge is any import of
another ``subagents.runtime`` module that runs, at module level or inside a function (a
function-local import defers a dependency, it does not remove it: the two modules still need
each other). Imports under ``if TYPE_CHECKING:`` are left out: they never run, and a type can
always be named through a Protocol instead (see ``runtime/context.py``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import subagents.runtime

PACKAGE = "subagents.runtime"
ROOT = Path(subagents.runtime.__file__).parent


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imported(node: ast.AST, modules: frozenset[str]) -> Iterable[str]:
    """The ``subagents.runtime`` modules one import statement names."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name.startswith(f"{PACKAGE}."):
                yield alias.name.split(".")[2]
    elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
        if node.module == PACKAGE:  # from subagents.runtime import events
            yield from (alias.name for alias in node.names if alias.name in modules)
        elif node.module.startswith(f"{PACKAGE}."):
            yield node.module.split(".")[2]


def _runtime_imports(source: str, modules: frozenset[str]) -> set[str]:
    found: set[str] = set()
    pending: list[ast.AST] = [ast.parse(source)]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            pending.extend(node.orelse)  # the else branch does run
            continue
        found.update(_imported(node, modules))
        pending.extend(ast.iter_child_nodes(node))
    return found


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module name -> the other runtime modules it imports (see the module docstring)."""
    files = {path.stem: path for path in root.glob("*.py") if path.stem != "__init__"}
    modules = frozenset(files)
    return {
        name: _runtime_imports(path.read_text(encoding="utf-8"), modules) - {name}
        for name, path in files.items()
    }


def find_cycle(graph: Mapping[str, Iterable[str]]) -> list[str] | None:
    """One import cycle of ``graph`` (``[a, b, a]``), or ``None``."""
    state: dict[str, str] = {}  # "open" while on the current path, "done" after
    path: list[str] = []

    def visit(name: str) -> list[str] | None:
        state[name] = "open"
        path.append(name)
        for target in sorted(graph.get(name, ())):
            if state.get(target) == "open":
                return [*path[path.index(target) :], target]
            if target not in state:
                found = visit(target)
                if found is not None:
                    return found
        path.pop()
        state[name] = "done"
        return None

    for name in sorted(graph):
        if name not in state:
            found = visit(name)
            if found is not None:
                return found
    return None


def test_no_module_of_the_runtime_imports_in_a_circle() -> None:
    graph = import_graph()
    assert {"runtime", "run", "session", "delegation", "recorder", "assembly"} <= set(graph)
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle in subagents.runtime: " + " -> ".join(cycle or [])


def test_the_session_asks_its_run_through_the_context_only() -> None:
    graph = import_graph()
    assert not graph["session"] & {"runtime", "run", "delegation", "assembly"}
    assert graph["context"] == set()


def test_the_check_finds_a_cycle_through_a_function_local_import(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("from subagents.runtime.b import B\n")
    (tmp_path / "b.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from subagents.runtime.c import C\n"
        "def f():\n    from subagents.runtime import a\n"
    )
    (tmp_path / "c.py").write_text("import subagents.runtime.b\n")
    graph = import_graph(tmp_path)
    assert graph == {"a": {"b"}, "b": {"a"}, "c": {"b"}}
    assert find_cycle(graph) == ["a", "b", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None
