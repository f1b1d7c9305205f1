"""One status vocabulary: each Literal is defined once (in subagents.status), every map between
two vocabularies is total over its source, and the old import paths still work."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, get_args

import pytest

from subagents import status

SRC = Path(status.__file__).resolve().parent

VOCABULARIES: dict[str, Any] = {
    "RunStatus": status.RunStatus,
    "SessionStatus": status.SessionStatus,
    "TaskStatus": status.TaskStatus,
    "LedgerStatus": status.LedgerStatus,
    "TraceStatus": status.TraceStatus,
    "BlockStatus": status.BlockStatus,
    "OutcomeStatus": status.OutcomeStatus,
    "AgentStatus": status.AgentStatus,
    "TodoStatus": status.TodoStatus,
    "ProbeStatus": status.ProbeStatus,
    "PermissionMode": status.PermissionMode,
    "HookEvent": status.HookEvent,
}

# (table, source vocabulary, target vocabulary)
MAPS: list[tuple[str, Any, Any]] = [
    ("TASK_STATUS_OF_RUN", status.RunStatus, status.TaskStatus),
    ("SESSION_STATUS_OF_RUN", status.RunStatus, status.SessionStatus),
    ("BLOCK_STATUS_OF_RUN", status.RunStatus, status.BlockStatus),
    ("BLOCK_STATUS_OF_SESSION", status.SessionStatus, status.BlockStatus),
    ("TRACE_STATUS_OF_OUTCOME", status.OutcomeStatus, status.TraceStatus),
    ("TRACE_STATUS_OF_SESSION", status.SessionStatus, status.TraceStatus),
]

# Where each name lived before status.py; code (and users) still import it from there.
OLD_HOMES: list[tuple[str, str, str]] = [
    ("subagents.runtime.result", "RunStatus", "RunStatus"),
    ("subagents.runtime.session", "SessionStatus", "SessionStatus"),
    ("subagents.store.records", "SessionStatus", "SessionStatus"),
    ("subagents.store.records", "TaskStatus", "TaskStatus"),
    ("subagents.store.records", "LedgerStatus", "LedgerStatus"),
    ("subagents.store.records", "TraceStatus", "TraceStatus"),
    ("subagents.store", "TaskStatus", "TaskStatus"),
    ("subagents.cli.ui.blocks", "BlockStatus", "BlockStatus"),
    ("subagents.cli.ui.blocks", "block_status", "block_status"),
    ("subagents.tools.execution", "OutcomeStatus", "OutcomeStatus"),
    ("subagents.definitions.model", "AgentStatus", "AgentStatus"),
    ("subagents.definitions.model", "PermissionMode", "PermissionMode"),
    ("subagents.definitions", "PermissionMode", "PermissionMode"),
    ("subagents.tools.permissions", "PermissionMode", "PermissionMode"),
    ("subagents.tools", "PermissionMode", "PermissionMode"),
    ("subagents.config", "HookEvent", "HookEvent"),
    ("subagents.runtime.hooks", "HookEventName", "HookEvent"),
    ("subagents.todos", "TodoStatus", "TodoStatus"),
]


@pytest.mark.parametrize(("table", "source", "target"), MAPS, ids=[m[0] for m in MAPS])
def test_every_map_is_total_over_its_source_and_lands_in_its_target(
    table: str, source: Any, target: Any
) -> None:
    mapping: Mapping[str, str] = getattr(status, table)
    assert sorted(mapping) == sorted(get_args(source)), f"{table} misses or invents a status"
    assert set(mapping.values()) <= set(get_args(target))


def test_the_maps_cannot_be_changed_at_run_time() -> None:
    with pytest.raises(TypeError):
        status.TASK_STATUS_OF_RUN["max_turns"] = "completed"  # type: ignore[index]


def test_finished_sets_are_drawn_from_their_vocabularies() -> None:
    assert set(get_args(status.TaskStatus)) >= status.FINISHED_TASK_STATUSES
    assert set(get_args(status.SessionStatus)) >= status.FINISHED_SESSION_STATUSES
    # a run that ends any way but waiting for a person finishes its task and its session
    for run in get_args(status.RunStatus):
        ends = run != "awaiting_human"
        assert (status.task_status(run) in status.FINISHED_TASK_STATUSES) is ends, run
        assert (status.session_status(run) in status.FINISHED_SESSION_STATUSES) is ends, run


def test_a_run_that_stops_early_fails_its_task_and_errors_its_session() -> None:
    for run in ("max_turns", "failed"):
        assert status.task_status(run) == "failed"
        assert status.session_status(run) == "error"
        assert status.block_status(run) == "error"
    assert status.task_status("awaiting_human") == "awaiting_human"
    assert status.session_status("awaiting_human") == "awaiting_human"
    assert status.block_status("awaiting_human") == "paused"


def test_block_status_reads_run_and_session_statuses_alike() -> None:
    shared = set(get_args(status.RunStatus)) & set(get_args(status.SessionStatus))
    assert shared  # completed, cancelled, awaiting_human
    for name in shared:
        assert status.BLOCK_STATUS_OF_RUN[name] == status.BLOCK_STATUS_OF_SESSION[name], name
    for run in get_args(status.RunStatus):
        assert status.block_status(run) == status.BLOCK_STATUS_OF_RUN[run]
    for session in get_args(status.SessionStatus):
        assert status.block_status(session) == status.BLOCK_STATUS_OF_SESSION[session]
    assert status.block_status("from-a-newer-runtime") == "error"


@pytest.mark.parametrize(("module", "name", "canonical"), OLD_HOMES, ids=lambda v: str(v))
def test_old_import_paths_still_give_the_one_definition(
    module: str, name: str, canonical: str
) -> None:
    assert getattr(importlib.import_module(module), name) == getattr(status, canonical)
    assert name in importlib.import_module(module).__all__


def _literal_aliases(path: Path) -> list[tuple[int, frozenset[str]]]:
    """``X = Literal[...]`` assignments at module level: (line, members)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in tree.body:
        value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
        if not isinstance(value, ast.Subscript) or not isinstance(value.value, ast.Name):
            continue
        if value.value.id != "Literal":
            continue
        elements = value.slice.elts if isinstance(value.slice, ast.Tuple) else [value.slice]
        members = frozenset(e.value for e in elements if isinstance(e, ast.Constant))
        found.append((node.lineno, frozenset(str(m) for m in members)))
    return found


@pytest.mark.slow
def test_no_module_but_status_defines_a_status_vocabulary_again() -> None:
    vocabularies = {frozenset(get_args(v)): name for name, v in VOCABULARIES.items()}
    duplicates = [
        f"{path.relative_to(SRC)}:{line} repeats {vocabularies[members]}"
        for path in sorted(SRC.rglob("*.py"))
        if path.name != "status.py"
        for line, members in _literal_aliases(path)
        if members in vocabularies
    ]
    assert not duplicates, "import it from subagents.status instead: " + "; ".join(duplicates)


def test_the_scan_finds_a_repeated_vocabulary(tmp_path: Path) -> None:
    copy = tmp_path / "copy.py"
    copy.write_text(
        'RunStatus = Literal["completed", "max_turns", "failed", "cancelled",\n'
        '    "awaiting_human"]\nOther = Literal["x"]\n'
    )
    assert _literal_aliases(copy) == [
        (1, frozenset(get_args(status.RunStatus))),
        (3, frozenset({"x"})),
    ]


def test_importing_status_loads_nothing_heavy() -> None:
    code = (
        "import sys, subagents.status\n"
        "print('\\n'.join(sorted(m for m in sys.modules if m.startswith('subagents')"
        " or m in ('pydantic', 'rich', 'typer', 'httpx'))))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert loaded == ["subagents", "subagents._lazy", "subagents.status"]
