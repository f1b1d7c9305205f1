"""A fan-out: the subagents one parent starts share the resolution of their agent, and nothing
that each must have alone; what changes during the run reaches the next one started."""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from subagents.definitions.model import AgentDefinition
from subagents.runtime import assembly, prompt
from subagents.runtime.run import Run
from subagents.runtime.runtime import Runtime
from subagents.runtime.session import Session
from subagents.testing import ScriptedModel
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
