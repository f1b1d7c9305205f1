"""Replay: the ids a run gives its sessions, tool calls and checkpoints are derived, so a run
rebuilt from the store alone, or run again after a crash, finds the very same ones."""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from subagents.definitions.model import AgentDefinition
from subagents.errors import StoreVersionError
from subagents.messages import AssistantMessage, ToolCall, ToolResultMessage
from subagents.models.base import ModelRequest, ModelResponse
from subagents.redaction import Redactor
from subagents.runtime.events import Event, ToolCallStarted
from subagents.runtime.recorder import Recorder, child_session_id, main_session_id
from subagents.runtime.run import Run
from subagents.runtime.runtime import Runtime
from subagents.runtime.steps import ModelStepInput, model_step
from subagents.store.sqlite import SQLiteStore, open_store
from subagents.testing import FunctionModel, text_response
from subagents.tools.decorator import tool

TASK_ID = "replay-task"


@tool
def note(text: str) -> str:
    """Write a note (a side effect: the ledger tracks it)."""
    return f"noted {text}"


def main_turn(request: ModelRequest) -> ModelResponse:
    """Turn 1: a Task call and a note, neither with an id; turn 2: a note reusing `call_0`."""
    results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
    if not results:
        task = {"description": "d", "prompt": "work", "subagent_type": "worker"}
        return ModelResponse(
            tool_calls=(ToolCall("", "Task", task), ToolCall("", "note", {"text": "a"})),
            stop_reason="tool_use",
        )
    if len(results) == 2:
        return ModelResponse(
            tool_calls=(ToolCall("call_0", "note", {"text": "b"}),), stop_reason="tool_use"
        )
    return text_response("main done")


def worker_turn(request: ModelRequest) -> ModelResponse:
    if not any(isinstance(m, ToolResultMessage) for m in request.messages):
        return ModelResponse(
            tool_calls=(ToolCall("call_0", "note", {"text": "w"}),), stop_reason="tool_use"
        )
    return text_response("worker done")


def make_runtime(workspace: Path, store: SQLiteStore) -> Runtime:
    return Runtime(
        cwd=workspace,
        agents=[AgentDefinition(name="worker", description="Works.", system_prompt="Work.")],
        model=FunctionModel(main_turn, name="scripted:main"),
        agent_models={"worker": FunctionModel(worker_turn, name="scripted:worker")},
        tools=[note],
        store=store,
        permission_mode="bypassPermissions",
    )


def ids_of(store: SQLiteStore, task_id: str) -> dict[str, Any]:
    """Every id the run left in the store: sessions (with the call that started each),
    tool calls per session, and checkpoints."""
    sessions = {r.session_id: r.parent_tool_call_id for r in store.sessions(task_id)}
    calls = {
        session_id: [
            call["id"]
            for message in store.messages(session_id)
            for call in message.get("tool_calls") or ()
        ]
        for session_id in sessions
    }
    checkpoints = [(c.session_id, c.position, c.checkpoint_id) for c in store.checkpoints(task_id)]
    return {"sessions": sessions, "calls": calls, "checkpoints": sorted(checkpoints)}


async def run_once(workspace: Path) -> dict[str, Any]:
    with open_store(workspace / "state.db") as store:
        runtime = make_runtime(workspace, store)
        result = await runtime.run("go", task_id=TASK_ID)
        assert result.status == "completed", result.error
        return ids_of(store, TASK_ID)


async def test_a_run_again_gets_the_same_ids(tmp_path: Path) -> None:
    first = await run_once(tmp_path)
    (tmp_path / "state.db").rename(tmp_path / "first.db")
    second = await run_once(tmp_path)
    main_id = main_session_id(TASK_ID)
    assert first == second
    (child_id,) = [s for s, call in first["sessions"].items() if call is not None]
    task_call = first["calls"][main_id][0]
    assert child_id == child_session_id(main_id, task_call)
    # no id sent, or one reused: every call of a session still has its own
    for calls in first["calls"].values():
        assert len(set(calls)) == len(calls)
    assert len({c for _, _, c in first["checkpoints"]}) == len(first["checkpoints"])


async def test_sessions_rebuilt_from_the_store_alone_replay_to_the_same_ids(
    tmp_path: Path,
) -> None:
    stored = await run_once(tmp_path)
    with open_store(tmp_path / "state.db") as store:
        runtime = make_runtime(tmp_path, store)  # a fresh runtime: nothing in memory
        run = Run(runtime)
        recorder = Recorder(store, store.get_task(TASK_ID), Redactor())
        records = {r.session_id: r for r in store.sessions(TASK_ID)}
        main_record = records[main_session_id(TASK_ID)]
        main = run.builder.rebuilt(main_record, None, recorder)
        run.delegation.main = main
        rebuilt = {main.agent_id: main}
        for record in records.values():
            if record.parent_session_id == main.agent_id:
                rebuilt[record.session_id] = run.builder.rebuilt(record, main, recorder)
        assert set(rebuilt) == set(stored["sessions"])
        for session_id, session in rebuilt.items():
            # the next checkpoint continues the session's count, not a fresh one
            ours = [c for s, _, c in stored["checkpoints"] if s == session_id]
            assert session.checkpoints == len(ours)
            # replay every turn of the history: the model step derives the same call ids,
            # and each Task call the same child
            history = session.messages
            turn = 0
            for index, message in enumerate(history):
                if not isinstance(message, AssistantMessage):
                    continue
                turn += 1
                session.messages = history[:index]
                session.turns = turn
                session._call_ids = None
                step = ModelStepInput(
                    session.system_prompt, session.messages, (), session.settings, turn
                )
                replayed = await model_step(session, step)
                assert [c.id for c in replayed.calls] == [c.id for c in message.tool_calls]
                for call in replayed.calls:
                    if call.name == "Task":
                        assert child_session_id(session_id, call.id) in stored["sessions"]
            session.messages = history


class Crash(BaseException):
    """The process stopping: nothing below catches it, so nothing more is written."""


async def test_a_crash_between_the_model_and_the_tools_replays_the_same_turn(
    tmp_path: Path,
) -> None:
    reference = await run_once(tmp_path)
    (tmp_path / "state.db").rename(tmp_path / "reference.db")
    workspace = tmp_path
    with open_store(workspace / "state.db") as store:
        runtime = make_runtime(workspace, store)

        def crash_before_the_task_runs(event: Event) -> None:
            if isinstance(event, ToolCallStarted) and event.call.name == "Task":
                raise Crash

        runtime.events.subscribe(crash_before_the_task_runs)
        with pytest.raises(Crash):
            await runtime.run("go", task_id=TASK_ID)
        # the model's turn is on disk, its calls not run: no child yet
        main_id = main_session_id(TASK_ID)
        latest = store.latest_checkpoint(TASK_ID)
        assert latest is not None and latest.position == "after_model"
        assert [r.session_id for r in store.sessions(TASK_ID)] == [main_id]
        calls_before = ids_of(store, TASK_ID)["calls"][main_id]

    with open_store(workspace / "state.db") as store:
        resumed = await make_runtime(workspace, store).resume(TASK_ID)
        assert resumed.status == "completed", resumed.error
        after = ids_of(store, TASK_ID)
    assert after["calls"][main_id][: len(calls_before)] == calls_before
    children = [s for s, call in after["sessions"].items() if call is not None]
    assert children == [child_session_id(main_id, calls_before[0])]  # found again, not another
    assert after == reference


async def test_a_checkpoint_state_from_a_newer_version_is_refused_and_kept(
    tmp_path: Path,
) -> None:
    """Every checkpoint's state says its schema; one this version cannot read stops the
    resume with what to do, and the store is left as it was."""
    reference = await run_once(tmp_path)
    with open_store(tmp_path / "state.db") as store:
        latest = store.latest_checkpoint(TASK_ID)
        assert latest is not None and latest.state["schema_version"] == 1
        task = store.get_task(TASK_ID)
        task.status = "failed"  # a task that ended can be resumed with a fresh budget
        store.update_task(task)
    with sqlite3.connect(tmp_path / "state.db") as db:
        db.execute(
            "UPDATE steps SET checkpoint = json_set(checkpoint, '$.state.schema_version', 99) "
            "WHERE checkpoint IS NOT NULL"
        )
    with open_store(tmp_path / "state.db") as store:
        with pytest.raises(StoreVersionError) as raised:
            await make_runtime(tmp_path, store).resume(TASK_ID)
        assert "newer subagents" in str(raised.value)
        assert "pip install -U subagents" in str(raised.value)
        assert ids_of(store, TASK_ID) == reference


@given(parent=st.text(), call=st.text())
def test_derived_ids_are_the_uuid5s_they_always_were(parent: str, call: str) -> None:
    # Ids a replay must find again never change from one release to the next: they are the
    # RFC 4122 version-5 UUIDs of the session and call, as uuid.uuid5 makes them.
    namespace = uuid.UUID("6f1d2c8e-3b7a-4f5e-9c1d-2a8b7e6f5d4c")
    try:
        expected = str(uuid.uuid5(namespace, f"{parent}:{call}"))
    except UnicodeEncodeError:  # a lone surrogate: neither can encode it
        with pytest.raises(UnicodeEncodeError):
            child_session_id(parent, call)
        return
    assert child_session_id(parent, call) == expected
    assert main_session_id(parent) == str(uuid.uuid5(namespace, f"{parent}:main"))
