"""A fan-out: the subagents one parent starts share the resolution of their agent, and nothing
that each must have alone; what changes during the run reaches the next one started."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from subagents.definitions.model import AgentDefinition
from subagents.messages import ToolCall, ToolResultMessage
from subagents.models.base import ModelRequest, ModelResponse
from subagents.runtime import assembly, prompt
from subagents.runtime import events as ev
from subagents.runtime.events import EventBus
from subagents.runtime.recorder import Recorder, child_session_id, main_session_id
from subagents.runtime.run import Run
from subagents.runtime.runtime import Runtime
from subagents.runtime.session import Session
from subagents.store.sqlite import open_store
from subagents.testing import FunctionModel, ScriptedModel, text_response
from subagents.tools.decorator import tool


@tool(name="echo", read_only=True)
def echo(x: str) -> str:
    """Echo the input."""
    return x


def agent(name: str, **fields: Any) -> AgentDefinition:
    fields.setdefault("description", f"The {name} specialist.")
    fields.setdefault("system_prompt", f"You are {name}.")
    return AgentDefinition(name=name, **fields)


def write_agent(root: Path, name: str, tools: str) -> None:
    folder = root / ".claude" / "agents"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.md").write_text(
        f"---\nname: {name}\ndescription: The {name} specialist.\ntools: {tools}\n---\n"
        f"You are {name}.\n"
    )


def start(rt: Runtime) -> tuple[Run, Session]:
    """A run of ``rt`` and its main session, as ``Runtime.run`` makes them."""
    run = Run(rt)
    return run, run.builder.main(None)


def child(run: Run, parent: Session, name: str, call_id: str) -> Session:
    definition = run.runtime.inventory.get(name).definition
    return run.builder.child(parent, definition, tool_call_id=call_id, description="d").session


def task_listing(session: Session) -> str:
    task = session.tools.get("Task")
    assert task is not None
    return task.description


def test_siblings_have_the_same_tools_each_in_a_registry_of_its_own(tmp_path: Path) -> None:
    rt = Runtime(
        cwd=tmp_path,
        agents=[agent("worker", tools=["echo"])],
        tools=[echo],
        model=ScriptedModel([]),
    )
    run, main = start(rt)
    first, second = (child(run, main, "worker", f"call_{i}") for i in range(2))
    assert first.tools.names() == second.tools.names() == ["echo"]
    assert first.tools is not second.tools
    first.tools.add(dataclasses.replace(echo, name="extra"))
    assert second.tools.names() == ["echo"]
    assert child(run, main, "worker", "call_2").tools.names() == ["echo"]


def test_a_reload_of_the_agents_reaches_the_next_subagent_of_a_parent(tmp_path: Path) -> None:
    write_agent(tmp_path, "lead", "Agent(helper, scout), Read")
    write_agent(tmp_path, "helper", "Read")
    rt = Runtime(cwd=tmp_path, model=ScriptedModel([]), builtin_tools=True)
    run, main = start(rt)
    lead = rt.inventory.get("lead").definition
    before = run.builder.child(main, lead, tool_call_id="a", description="d").session
    assert "- helper:" in task_listing(before) and "- scout:" not in task_listing(before)
    write_agent(tmp_path, "scout", "Read")
    rt.inventory.reload()
    # the same definition object as before: only the reload says the listing is stale
    after = run.builder.child(main, lead, tool_call_id="b", description="d").session
    assert "- scout:" in task_listing(after)


def test_a_reload_changes_which_agents_a_session_may_start(tmp_path: Path) -> None:
    write_agent(tmp_path, "lead", "Agent(helper), Read")
    write_agent(tmp_path, "helper", "Read")
    write_agent(tmp_path, "scout", "Read")
    rt = Runtime(cwd=tmp_path, model=ScriptedModel([]))
    run = Run(rt)
    session = run.builder.main("lead")
    assert run.delegation.allowed_subagent_types(session) == frozenset({"helper"})
    write_agent(tmp_path, "lead", "Agent(helper, scout), Read")
    rt.inventory.reload()
    assert run.delegation.allowed_subagent_types(session) == frozenset({"helper", "scout"})


def test_a_subagent_with_memory_reads_it_afresh_at_each_start(tmp_path: Path) -> None:
    rt = Runtime(cwd=tmp_path, agents=[agent("keeper", memory="project")], model=ScriptedModel([]))
    run, main = start(rt)
    first = child(run, main, "keeper", "call_0")
    index = tmp_path / ".claude" / "agent-memory" / "keeper" / "MEMORY.md"
    index.write_text("The build needs Python 3.11.\n")
    second = child(run, main, "keeper", "call_1")
    assert "Python 3.11" not in first.system_prompt
    assert "The build needs Python 3.11." in second.system_prompt


def test_a_subagent_started_on_the_next_day_is_told_that_day(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rt = Runtime(cwd=tmp_path, agents=[agent("worker")], model=ScriptedModel([]))
    run, main = start(rt)

    class Clock(dt.date):
        @classmethod
        def today(cls) -> Clock:
            return days[0]

    days = [Clock(2026, 11, 28)]

    monkeypatch.setattr(assembly, "date", Clock)
    monkeypatch.setattr(prompt, "date", Clock)
    first = child(run, main, "worker", "call_0")
    assert child(run, main, "worker", "call_1").system_prompt == first.system_prompt
    days[0] = Clock(2026, 11, 29)
    after_midnight = child(run, main, "worker", "call_2")
    assert "Today's date: 2026-11-28" in first.system_prompt
    assert "Today's date: 2026-11-29" in after_midnight.system_prompt


async def test_project_instructions_read_again_reach_the_next_subagent(tmp_path: Path) -> None:
    (tmp_path / "CLAUDE.md").write_text("Use tabs.\n")
    rt = Runtime(cwd=tmp_path, agents=[agent("worker")], model=ScriptedModel(["ok"]))
    run, main = start(rt)
    before = child(run, main, "worker", "call_0")
    (tmp_path / "CLAUDE.md").write_text("Use spaces.\n")
    await rt.run("another run on the same runtime reads the files as they are now")
    after = child(run, main, "worker", "call_1")
    assert "Use tabs." in before.system_prompt
    assert "Use spaces." in after.system_prompt


def task_call(call_id: str, agent: str, **extra: Any) -> ToolCall:
    arguments = {"description": f"to {agent}", "prompt": "work", "subagent_type": agent}
    return ToolCall(call_id, "Task", {**arguments, **extra})


async def test_a_subagent_running_in_the_foreground_cannot_be_resumed_meanwhile(
    tmp_path: Path,
) -> None:
    # the second call of the turn names the first one's subagent (its id is derived) while it
    # still runs: refused, not run twice at once
    task_id = "11111111-2222-4333-8444-555555555555"
    first = child_session_id(main_session_id(task_id), "call_a")
    release = asyncio.Event()
    results: list[ToolResultMessage] = []

    async def lead(request: ModelRequest) -> ModelResponse:
        answered = [m for m in request.messages if isinstance(m, ToolResultMessage)]
        if answered:
            results.extend(answered)
            return text_response("done")
        calls = (task_call("call_a", "worker"), task_call("call_b", "worker", resume=first))
        return ModelResponse(tool_calls=calls, stop_reason="tool_use")

    async def worker(request: ModelRequest) -> ModelResponse:
        await release.wait()
        return text_response("worked")

    with open_store(tmp_path / "state.db") as store:
        rt = Runtime(
            cwd=tmp_path,
            agents=[agent("worker")],
            model=FunctionModel(lead),
            agent_models={"worker": FunctionModel(worker)},
            store=store,
            permission_mode="bypassPermissions",
        )
        running = asyncio.ensure_future(rt.run("go", task_id=task_id))
        while not results and not running.done():
            await asyncio.sleep(0.001)
            release.set()
        result = await running
    assert result.status == "completed", result.error
    started, refused = results
    assert started.content.startswith("worked") and not started.is_error
    assert refused.is_error and f"subagent {first} is still running" in refused.content


async def test_a_cancelled_run_ends_its_foreground_subagents_before_it_returns(
    tmp_path: Path,
) -> None:
    seen: list[ev.Event] = []
    waiting = asyncio.Event()

    async def worker(request: ModelRequest) -> ModelResponse:
        waiting.set()
        await asyncio.Event().wait()  # until cancelled
        raise AssertionError("not reached")

    calls = (task_call("call_a", "worker"), task_call("call_b", "worker"))
    rt = Runtime(
        cwd=tmp_path,
        agents=[agent("worker")],
        model=ScriptedModel([ModelResponse(tool_calls=calls, stop_reason="tool_use")]),
        agent_models={"worker": FunctionModel(worker)},
        events=EventBus([seen.append]),
        permission_mode="bypassPermissions",
    )
    running = asyncio.ensure_future(rt.run("go"))
    await asyncio.wait_for(waiting.wait(), timeout=10)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    finished = [e for e in seen if isinstance(e, ev.SubagentFinished)]
    assert sorted(e.result.status for e in finished) == ["cancelled", "cancelled"]
    ended = [
        e for e in seen if isinstance(e, ev.SessionFinished) and e.agent_id != finished[0].parent_id
    ]
    assert len(ended) == 2 and all(e.result.status == "cancelled" for e in ended)


async def test_a_run_that_creates_its_task_never_asks_the_store_for_earlier_subagents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Only a session rebuilt from the store can have started subagents in an earlier process
    # (tests/runtime/test_replay.py finds them again); a new task's sessions are new all the
    # way down.
    asked: list[str] = []
    find_session = Recorder.find_session

    def counting(recorder: Recorder, session_id: str) -> Any:
        asked.append(session_id)
        return find_session(recorder, session_id)

    monkeypatch.setattr(Recorder, "find_session", counting)
    calls = tuple(task_call(f"call_{i}", "lead") for i in range(3))
    nested = task_call("call_x", "worker")

    def turn(request: ModelRequest) -> ModelResponse:
        if any(isinstance(m, ToolResultMessage) for m in request.messages):
            return text_response("done")
        if request.system.startswith("You are lead."):
            return ModelResponse(tool_calls=(nested,), stop_reason="tool_use")
        if request.system.startswith("You are worker."):
            return text_response("worked")
        return ModelResponse(tool_calls=calls, stop_reason="tool_use")

    with open_store(tmp_path / "state.db") as store:
        rt = Runtime(
            cwd=tmp_path,
            agents=[agent("lead", tools=["Task"]), agent("worker")],
            model=FunctionModel(turn),
            store=store,
            permission_mode="bypassPermissions",
        )
        result = await rt.run("go")
        assert result.status == "completed", result.error
        assert len(store.sessions(result.task_id or "")) == 1 + 3 + 3
    assert asked == []


async def test_a_fan_out_keeps_no_timer_per_subagent_in_the_event_loop(tmp_path: Path) -> None:
    fanout = 5
    timers_seen: list[int] = []
    started = 0
    all_started = asyncio.Event()

    async def parent(request: ModelRequest) -> ModelResponse:
        if any(isinstance(m, ToolResultMessage) for m in request.messages):
            return text_response("done")
        calls = tuple(task_call(f"t{i}", "w") for i in range(fanout))
        return ModelResponse(tool_calls=calls, stop_reason="tool_use")

    async def worker(request: ModelRequest) -> ModelResponse:
        nonlocal started
        started += 1
        if started == fanout:
            all_started.set()
        await all_started.wait()  # every subagent is inside its Task call now
        timers_seen.append(len(asyncio.get_running_loop()._scheduled))  # type: ignore[attr-defined]
        return text_response("ok")

    rt = Runtime(
        cwd=tmp_path,
        agents=[agent("w")],
        model=FunctionModel(parent),
        agent_models={"w": FunctionModel(worker)},
        builtin_tools=False,
    )
    result = await rt.run("fan out")
    assert result.output == "done"
    assert len(timers_seen) == fanout
    # the run keeps no timer of its own here (a lease or a model timeout would be one), and
    # none for each subagent: the Task tool bounds a subagent by its turns, not a clock
    assert timers_seen == [0] * fanout
