"""TodoWrite: each session's own list, kept with its checkpoints in a real SQLite store, brought
back after a SIGKILL, and shown in the progress output, the live UI blocks and the trace."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from rich.console import Console

from paths import TESTS
from subagents.cli.trace import render_tree
from subagents.cli.ui.blocks import BlockTree
from subagents.cli.ui.live import render_block
from subagents.cli.ui.progress import progress_printer
from subagents.definitions.model import AgentDefinition
from subagents.messages import ToolCall, ToolResultMessage
from subagents.models.base import ModelRequest, ModelResponse
from subagents.runtime import events as ev
from subagents.runtime.events import EventBus
from subagents.runtime.runtime import Runtime
from subagents.store.sqlite import open_store
from subagents.testing import FunctionModel, text_response, tool_call_response
from subagents.todos import TodoItem, todo_counts, todos_from_state
from subagents.tools.base import ToolContext, ToolRegistry, ToolSession
from subagents.tools.builtin import builtin_tools
from subagents.tools.builtin.todowrite import MAX_TODO_CHARS, MAX_TODO_LIST_CHARS, MAX_TODOS
from subagents.tools.execution import execute_tool_call
from subagents.tools.permissions import PermissionPolicy
from subagents.tracing.view import build_trace, trace_to_json

SCENARIO = TESTS / "scenarios" / "todo_run.py"

MAIN_TODOS = [
    {"content": "Read the code", "status": "completed", "activeForm": "Reading the code"},
    {"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing the bug"},
    {"content": "Run the tests", "status": "pending", "activeForm": "Running the tests"},
]
WORKER_TODOS = [{"content": "Check one file", "status": "in_progress", "activeForm": "Checking"}]

Plan = list[tuple[str, dict[str, Any]]]


def planner(name: str, plan: Plan) -> FunctionModel:
    def turn(request: ModelRequest) -> ModelResponse:
        done = sum(1 for m in request.messages if isinstance(m, ToolResultMessage))
        if done < len(plan):
            tool_name, arguments = plan[done]
            return tool_call_response(tool_name, arguments)
        return text_response(f"{name} done")

    return FunctionModel(turn, name=f"scripted:{name}")


def delegate(agent: str) -> tuple[str, dict[str, Any]]:
    return ("Task", {"description": f"to {agent}", "prompt": "check", "subagent_type": agent})


def two_level_runtime(tmp_path: Path, plans: dict[str, Plan], **kwargs: Any) -> Runtime:
    return Runtime(
        cwd=tmp_path,
        agents=[
            AgentDefinition(
                name="worker",
                description="Checks.",
                system_prompt="You check.",
                tools=["Read", "TodoWrite"],
            )
        ],
        model=planner("main", plans["main"]),
        agent_models={"worker": planner("worker", plans.get("worker", []))},
        permission_mode="bypassPermissions",
        **kwargs,
    )


_PLANS: dict[str, Plan] = {
    "main": [("TodoWrite", {"todos": MAIN_TODOS}), delegate("worker")],
    "worker": [("TodoWrite", {"todos": WORKER_TODOS})],
}


# --- the tool on its own -------------------------------------------------------------------------


async def call_todo_write(arguments: dict[str, Any], session: ToolSession | None = None) -> Any:
    registry = ToolRegistry(builtin_tools())
    ctx = ToolContext(workspace=Path.cwd(), session=session)
    return await execute_tool_call(ToolCall("c1", "TodoWrite", arguments), registry, ctx)


class ListKeeper:
    """The one thing TodoWrite asks of a session: somewhere to put the list."""

    def __init__(self) -> None:
        self.todos: tuple[TodoItem, ...] = ()

    def set_todos(self, todos: tuple[TodoItem, ...]) -> None:
        self.todos = todos


async def test_the_list_replaces_the_previous_one_and_is_echoed() -> None:
    keeper = ListKeeper()
    first = await call_todo_write({"todos": MAIN_TODOS}, keeper)
    assert first.status == "ok"
    assert first.message.content.splitlines() == [
        "Todo list updated (3 todos: 1 completed, 1 in progress, 1 pending):",
        "[x] Read the code",
        "[>] Fix the bug",
        "[ ] Run the tests",
    ]
    assert keeper.todos[1] == TodoItem("Fix the bug", "in_progress", "Fixing the bug")
    emptied = await call_todo_write({"todos": []}, keeper)
    assert emptied.message.content == "The todo list is now empty." and keeper.todos == ()


async def test_older_shapes_are_accepted_and_bad_items_are_tool_errors() -> None:
    keeper = ListKeeper()
    old = await call_todo_write(
        {"todos": [{"content": "x", "status": "pending", "id": "1", "priority": "high"}]}, keeper
    )
    assert old.status == "ok" and keeper.todos == (TodoItem("x", "pending", ""),)
    bad = {
        "status": [{"content": "x", "status": "done"}],
        "content": [{"content": "", "status": "pending"}],
        "colour": [{"content": "x", "status": "pending", "colour": "red"}],
        f"at most {MAX_TODOS}": [{"content": "x", "status": "pending"}] * (MAX_TODOS + 1),
        f"at most {MAX_TODO_CHARS}": [{"content": "x" * (MAX_TODO_CHARS + 1), "status": "pending"}],
        f"more than the limit of {MAX_TODO_LIST_CHARS:,}": [
            {"content": "x" * MAX_TODO_CHARS, "status": "pending", "activeForm": "y" * 400}
        ]
        * 30,
    }
    for expected, todos in bad.items():
        outcome = await call_todo_write({"todos": todos}, keeper)
        assert outcome.status == "error", expected
        assert expected in outcome.message.content, outcome.message.content
        assert keeper.todos == (TodoItem("x", "pending", ""),)  # unchanged
    outside = await call_todo_write({"todos": MAIN_TODOS}, None)
    assert outside.status == "error" and "inside an agent session" in outside.message.content


async def test_plan_mode_allows_todo_write(tmp_path: Path) -> None:
    registry = ToolRegistry(builtin_tools())
    keeper = ListKeeper()
    ctx = ToolContext(workspace=tmp_path, session=keeper)
    outcome = await execute_tool_call(
        ToolCall("c", "TodoWrite", {"todos": MAIN_TODOS}),
        registry,
        ctx,
        permissions=PermissionPolicy("plan"),
    )
    assert outcome.status == "ok" and len(keeper.todos) == 3


def test_stored_lists_read_back_whatever_the_checkpoint_holds() -> None:
    assert todos_from_state(None) == ()  # a checkpoint from before todos existed
    assert todos_from_state("junk") == ()
    damaged = [
        {"content": "ok", "status": "completed", "activeForm": "Doing"},
        {"content": 3, "status": "pending"},
        {"content": "bad status", "status": "later"},
        "not a dict",
        {"content": "no form", "status": "pending"},
    ]
    assert todos_from_state(damaged) == (
        TodoItem("ok", "completed", "Doing"),
        TodoItem("no form", "pending", ""),
    )
    assert todo_counts(todos_from_state(damaged)) == "2 todos: 1 completed, 1 pending"


# --- a run: events, progress, live blocks -------------------------------------------------------


async def test_each_session_has_its_own_list_shown_in_progress_and_blocks(tmp_path: Path) -> None:
    seen: list[ev.Event] = []
    bus = EventBus([seen.append])
    console = Console(file=io.StringIO(), width=200, color_system=None)
    printer = progress_printer(console)
    bus.subscribe(printer)
    blocks = BlockTree(prompt="fix it")
    bus.subscribe(blocks)
    result = await two_level_runtime(tmp_path, _PLANS, events=bus).run("fix it")
    assert result.status == "completed", result.error

    updates = [event for event in seen if isinstance(event, ev.TodosUpdated)]
    started = {e.agent_id: e.agent_type for e in seen if isinstance(e, ev.SessionStarted)}
    by_agent = {started[update.agent_id]: update.todos for update in updates}
    assert [item.content for item in by_agent["main"]] == [t["content"] for t in MAIN_TODOS]
    assert [item.content for item in by_agent["worker"]] == ["Check one file"]

    printed = console.file.getvalue()  # type: ignore[attr-defined]
    assert "main todos (3 todos: 1 completed, 1 in progress, 1 pending)" in printed
    assert "✓ Read the code" in printed and "▶ Fixing the bug" in printed
    assert "○ Run the tests" in printed
    assert "worker todos (1 todo: 1 in progress)" in printed

    main_block = next(b for b in blocks.ordered() if b.agent_type == "main")
    worker_block = next(b for b in blocks.ordered() if b.agent_type == "worker")
    assert len(main_block.todos) == 3 and len(worker_block.todos) == 1
    collapsed = render_block(blocks, main_block, width=200).plain
    assert "☰ todos 1/3 done · ▶ Fixing the bug" in collapsed
    main_block.expanded = True
    expanded = render_block(blocks, main_block, width=200).plain.splitlines()
    assert "  ✓ Read the code" in expanded and "  ○ Run the tests" in expanded


async def test_secrets_in_a_todo_are_redacted_on_screen_and_in_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEPLOY_API_KEY", "hunter2-very-secret-value")
    todos = [{"content": "Use hunter2-very-secret-value", "status": "pending"}]
    console = Console(file=io.StringIO(), width=200, color_system=None)
    bus = EventBus([progress_printer(console)])
    store_path = tmp_path / "state.db"
    with open_store(store_path) as store:
        plans: dict[str, Plan] = {"main": [("TodoWrite", {"todos": todos})]}
        result = await two_level_runtime(tmp_path, plans, events=bus, store=store).run("go")
        assert result.status == "completed"
        states = [c.state for c in store.checkpoints(result.task_id or "")]
        traces = [t.model_dump(mode="json") for t in store.traces(result.task_id or "")]
    assert any("todos" in state for state in states)
    stored = json.dumps([states, traces])
    assert "hunter2-very-secret-value" not in stored and "[REDACTED]" in stored
    assert "hunter2-very-secret-value" not in console.file.getvalue()  # type: ignore[attr-defined]


# --- the store and the trace ---------------------------------------------------------------------


async def test_the_lists_are_stored_per_session_and_shown_by_the_trace(tmp_path: Path) -> None:
    with open_store(tmp_path / "state.db") as store:
        result = await two_level_runtime(tmp_path, _PLANS, store=store).run("fix it")
        assert result.status == "completed", result.error
        trace = build_trace(store, result.task_id or "")
    (main,) = trace.roots
    (worker,) = main.children
    assert [item.content for item in main.todos] == [t["content"] for t in MAIN_TODOS]
    assert [item.status for item in worker.todos] == ["in_progress"]
    assert [e.name for e in main.events if e.name == "todos_updated"] == ["todos_updated"]
    update = next(e for e in main.events if e.name == "todos_updated")
    assert update.message == "3 todos: 1 completed, 1 in progress, 1 pending"
    assert update.data["todos"] == MAIN_TODOS

    as_json = trace_to_json(trace)
    sessions = {s["agent"]: s for s in as_json["subagent_sessions"]}
    assert sessions["worker"]["todos"] == WORKER_TODOS
    assert any(step["step_name"] == "todos_updated" for step in as_json["steps"])

    console = Console(file=io.StringIO(), width=200, color_system=None)
    console.print(render_tree(trace))
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert "todos (3 todos: 1 completed, 1 in progress, 1 pending)" in text
    assert "✓ Read the code" in text and "▶ Fix the bug" in text
    assert "todos (1 todo: 1 in progress)" in text


def load_scenario() -> ModuleType:
    spec = importlib.util.spec_from_file_location("todo_run", SCENARIO)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_until_killed(store_path: Path, workspace: Path, task_id: str) -> None:
    """Run the scenario and SIGKILL it while its worker waits, after both lists are written."""
    process = subprocess.Popen(
        [sys.executable, str(SCENARIO), str(store_path), str(workspace), task_id],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "HOLD": "1"},
        cwd=workspace,
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "WAITING"  # the worker is inside Wait
    os.kill(process.pid, signal.SIGKILL)
    process.communicate(timeout=30)
    assert process.returncode == -signal.SIGKILL


@pytest.mark.slow
async def test_lists_survive_a_sigkill_and_come_back_on_resume(tmp_path: Path) -> None:
    scenario = load_scenario()
    store_path = tmp_path / "state.db"
    task_id = "7e0d0000-2222-4333-8444-555555555555"
    run_until_killed(store_path, tmp_path, task_id)

    seen: list[ev.Event] = []
    runtime = scenario.make_runtime(store_path, tmp_path, EventBus([seen.append]))
    result = await runtime.resume(task_id)
    assert result.status == "completed", result.error
    assert result.output == "main done"

    started = {e.agent_id: e.agent_type for e in seen if isinstance(e, ev.SessionStarted)}
    restored = {
        started[e.agent_id]: [item.to_dict() for item in e.todos]
        for e in seen
        if isinstance(e, ev.TodosUpdated)
    }
    assert restored == {"main": scenario.MAIN_TODOS, "worker": scenario.WORKER_TODOS}
    rerun = [e for e in seen if isinstance(e, ev.ToolCallStarted) and e.call.name == "TodoWrite"]
    assert rerun == []  # the lists came from the store, not from calling TodoWrite again
    with open_store(store_path) as store:
        trace = build_trace(store, task_id)
    (main,) = trace.roots
    assert [item.to_dict() for item in main.todos] == scenario.MAIN_TODOS
    assert [item.to_dict() for item in main.children[0].todos] == scenario.WORKER_TODOS
