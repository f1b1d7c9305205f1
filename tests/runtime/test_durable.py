"""Durable runs: what is stored per step, human-in-the-loop at any depth, recovery of
interrupted side effects, redaction of secrets."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from scenarios.planned import Plan, planner
from subagents.definitions.model import AgentDefinition
from subagents.errors import StoreError
from subagents.messages import ToolResultMessage, message_to_dict
from subagents.models.base import ModelRequest, ModelResponse
from subagents.runtime.pause import HumanDecision
from subagents.runtime.runtime import Runtime
from subagents.store.sqlite import SQLiteStore, open_store
from subagents.testing import FunctionModel, text_response, tool_call_response
from subagents.tools.decorator import tool


def database_bytes(path: Path) -> bytes:
    """The database file and its write-ahead log, as they lie on disk."""
    wal = Path(f"{path}-wal")
    return path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


def delegate(agent: str) -> tuple[str, dict[str, Any]]:
    return (
        "Task",
        {"description": f"to {agent}", "prompt": f"work, {agent}", "subagent_type": agent},
    )


AGENTS = [
    AgentDefinition(name="level1", description="First level.", system_prompt="You are level1."),
    AgentDefinition(name="level2", description="Second level.", system_prompt="You are level2."),
]


def make_runtime(
    workspace: Path, store: SQLiteStore, plans: dict[str, Plan], **kwargs: Any
) -> Runtime:
    kwargs.setdefault("permission_mode", "default")
    kwargs.setdefault("headless", "pause")
    return Runtime(
        cwd=workspace,
        agents=AGENTS,
        model=planner("main", plans["main"]),
        agent_models={name: planner(name, plan) for name, plan in plans.items() if name != "main"},
        store=store,
        **kwargs,
    )


def write_at_depth(depth: int) -> dict[str, Plan]:
    """main delegates down to ``depth``; the agent there writes a file (needs approval)."""
    write = ("Write", {"file_path": "out.txt", "content": "from the model"})
    names = ["main", "level1", "level2"]
    plans: dict[str, Plan] = {name: [] for name in names}
    for level in range(depth):
        plans[names[level]] = [delegate(names[level + 1])]
    plans[names[depth]] = [write]
    return plans


async def test_a_durable_run_stores_every_session_message_and_checkpoint(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello\n")
    plans: dict[str, Plan] = {
        "main": [("Read", {"file_path": "notes.txt"}), delegate("level1")],
        "level1": [("Grep", {"pattern": "hello"})],
    }
    with open_store(tmp_path / "state.db") as store:
        runtime = make_runtime(tmp_path, store, plans, headless="deny")
        result = await runtime.run("summarise", tags=["debug"], description="a test run")
        assert result.status == "completed" and result.task_id is not None
        task = store.get_task(result.task_id)
        assert (task.status, task.description, task.tags) == ("completed", "a test run", ["debug"])
        assert task.result == result.output and task.completed_at is not None
        sessions = store.sessions(result.task_id)
        assert [s.agent_name for s in sessions] == ["main", "level1"]
        main, child = sessions
        assert child.parent_session_id == main.session_id and child.depth == 1
        assert child.parent_tool_call_id is not None and child.status == "completed"
        assert store.messages(main.session_id) == [message_to_dict(m) for m in result.messages]
        sequences = [c.sequence for c in store.checkpoints(result.task_id)]
        assert sequences == sorted(set(sequences)) and len(sequences) >= 6
        traces = store.traces(result.task_id)
        kinds = {(t.kind, t.step_name) for t in traces}
        assert {("step", "model_call"), ("tool_call", "Read"), ("tool_call", "Grep")} <= kinds
        assert ("session", "session_finished") in kinds
        read_trace = next(t for t in traces if t.step_name == "Read")
        assert read_trace.data["arguments"] == {"file_path": "notes.txt"}
        # the result is stored once, in the tool result message the trace points at
        assert read_trace.data["result"] is None and read_trace.data["result_in_message"] is True
        assert read_trace.duration_ms is not None
        results = [m for m in store.messages(main.session_id) if m["role"] == "tool"]
        read_result = next(
            m for m in results if m["tool_call_id"] == read_trace.data["tool_call_id"]
        )
        assert "hello" in read_result["content"]
        assert store.integrity_check() == []


@pytest.mark.parametrize("depth", [0, 1, 2])
@pytest.mark.parametrize("action", ["approve", "reject", "modify"])
async def test_human_in_the_loop_at_every_depth(tmp_path: Path, depth: int, action: str) -> None:
    plans = write_at_depth(depth)
    store_path = tmp_path / "state.db"
    with open_store(store_path) as store:
        paused = await make_runtime(tmp_path, store, plans).run("write the file")
    assert paused.status == "awaiting_human" and paused.question is not None
    question = paused.question
    assert question.kind == "approval" and question.tool_name == "Write"
    assert len(question.session_path) == depth + 1
    assert question.arguments == {"file_path": "out.txt", "content": "from the model"}
    assert not (tmp_path / "out.txt").exists()

    # a new process: new runtime and models, the same store file
    decision = {
        "approve": HumanDecision("approve"),
        "reject": HumanDecision("reject", reason="not today"),
        "modify": HumanDecision("modify", arguments={"file_path": "out.txt", "content": "edited"}),
    }[action]
    with open_store(store_path) as store:
        assert store.get_task(paused.task_id or "").status == "awaiting_human"
        checkpoint = store.latest_checkpoint(paused.task_id or "", question.session_id)
        assert checkpoint is not None and checkpoint.awaiting_human
        resumed = await make_runtime(tmp_path, store, plans).resume(paused.task_id or "", decision)
        assert resumed.status == "completed", resumed.error
        assert store.get_task(paused.task_id or "").status == "completed"
        asker = store.get_session(question.session_id)
        last = store.messages(asker.session_id)[-1]["content"]
    written = (tmp_path / "out.txt").read_text() if (tmp_path / "out.txt").exists() else None
    if action == "approve":
        assert written == "from the model"
    elif action == "modify":
        assert written == "edited"
    else:
        assert written is None
        assert "A person rejected this call: not today" in last
    with open_store(store_path) as store:
        ledger = store.ledger(paused.task_id or "")
        (write_trace,) = [t for t in store.traces(paused.task_id or "") if t.step_name == "Write"]
    assert [(e.tool_name, e.status) for e in ledger] == [
        ("Write", "failed" if action == "reject" else "completed")
    ]
    # the trace shows what ran: the person's arguments after a modify, and the model's beside
    ran = written if action != "reject" else "from the model"
    assert write_trace.data["arguments"] == {"file_path": "out.txt", "content": ran}
    if action == "modify":
        assert write_trace.data["modified"] is True
        assert write_trace.data["model_arguments"] == {
            "file_path": "out.txt",
            "content": "from the model",
        }
    else:
        assert "modified" not in write_trace.data


async def test_resume_refuses_without_a_decision_and_with_a_needless_one(tmp_path: Path) -> None:
    with open_store(tmp_path / "state.db") as store:
        runtime = make_runtime(tmp_path, store, write_at_depth(1))
        paused = await runtime.run("go")
        with pytest.raises(StoreError, match=r"waiting for a person.*--approve"):
            await runtime.resume(paused.task_id or "")
        done = await runtime.resume(paused.task_id or "", HumanDecision("approve"))
        with pytest.raises(StoreError, match="already completed"):
            await runtime.resume(done.task_id or "")


async def test_ask_human_pauses_and_delivers_the_answer(tmp_path: Path) -> None:
    plans: dict[str, Plan] = {
        "main": [delegate("level1")],
        "level1": [("AskHuman", {"question": "Which port?"})],
    }
    with open_store(tmp_path / "state.db") as store:
        paused = await make_runtime(tmp_path, store, plans).run("configure")
        assert paused.question is not None and paused.question.kind == "ask_human"
        assert paused.question.text == "Which port?"
        decision = HumanDecision("approve", values={"answer": "8080"})
        done = await make_runtime(tmp_path, store, plans).resume(paused.task_id or "", decision)
    assert "level1: The person answered: 8080" in done.output


async def test_an_interrupted_side_effect_is_asked_about_not_repeated(tmp_path: Path) -> None:
    calls: list[str] = []
    hang = asyncio.Event()

    @tool
    async def Deploy(version: str) -> str:
        """Deploy a version (a side effect)."""
        calls.append(version)
        if len(calls) == 1:
            hang.set()
            await asyncio.sleep(3600)  # the process "dies" here
        return f"deployed {version}"

    plans: dict[str, Plan] = {
        "main": [delegate("level1")],
        "level1": [("Deploy", {"version": "v2"})],
    }
    with open_store(tmp_path / "state.db") as store:
        runtime = make_runtime(
            tmp_path, store, plans, tools=[Deploy], permission_mode="bypassPermissions"
        )
        running = asyncio.create_task(
            runtime.run("ship it", task_id="11111111-2222-4333-8444-555555555555")
        )
        await asyncio.wait_for(hang.wait(), timeout=10)
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
        ledger = store.ledger("11111111-2222-4333-8444-555555555555")
        assert [(e.tool_name, e.status) for e in ledger] == [("Deploy", "started")]

        again = make_runtime(
            tmp_path, store, plans, tools=[Deploy], permission_mode="bypassPermissions"
        )
        paused = await again.resume("11111111-2222-4333-8444-555555555555")
        assert paused.status == "awaiting_human" and paused.question is not None
        assert paused.question.kind == "crash_recovery" and paused.question.tool_name == "Deploy"
        assert calls == ["v2"]  # not re-run on its own

        done = await again.resume(paused.task_id or "", HumanDecision("approve"))
        assert done.status == "completed"
        assert calls == ["v2", "v2"]  # re-run once, because a person said so
        assert "deployed v2" in done.output
        statuses = [e.status for e in store.ledger(paused.task_id or "")]
        assert statuses == ["completed"]


async def test_read_only_calls_are_simply_re_run_after_a_crash(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    started = asyncio.Event()
    reads: list[str] = []

    @tool(read_only=True)
    async def Peek(path: str) -> str:
        """Read-only peek."""
        reads.append(path)
        if len(reads) == 1:
            started.set()
            await asyncio.sleep(3600)
        return (tmp_path / path).read_text()

    plans: dict[str, Plan] = {"main": [("Peek", {"path": "a.txt"})]}
    with open_store(tmp_path / "state.db") as store:
        runtime = make_runtime(tmp_path, store, plans, tools=[Peek])
        running = asyncio.create_task(
            runtime.run("peek", task_id="aaaaaaaa-2222-4333-8444-555555555555")
        )
        await asyncio.wait_for(started.wait(), timeout=10)
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
        done = await make_runtime(tmp_path, store, plans, tools=[Peek]).resume(
            "aaaaaaaa-2222-4333-8444-555555555555"
        )
    assert done.status == "completed" and done.output == "main: alpha\n"
    assert reads == ["a.txt", "a.txt"]


async def test_secrets_never_reach_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-test-ABCDEFGHIJKLMNOPQRSTUV0123456789"
    monkeypatch.setenv("DEPLOY_API_KEY", "hunter2-very-secret-value")
    (tmp_path / "env.txt").write_text(
        f"key={secret}\nAuthorization: Bearer abcdefghijklmnop\npw=hunter2-very-secret-value\n"
    )
    plans: dict[str, Plan] = {"main": [("Read", {"file_path": "env.txt"})]}
    store_path = tmp_path / "state.db"
    with open_store(store_path) as store:
        result = await make_runtime(tmp_path, store, plans, headless="deny").run(
            f"read env.txt, my key is {secret}"
        )
        assert secret in result.output  # the live run is not altered
        bundle = store.load_bundle(result.task_id or "")
    dumped = json.dumps(
        [bundle.task.model_dump(mode="json")]
        + [m for ms in bundle.messages.values() for m in ms]
        + [t.model_dump(mode="json") for t in bundle.traces]
        + [s.model_dump(mode="json") for s in bundle.sessions]
    )
    assert secret not in dumped
    assert "hunter2-very-secret-value" not in dumped
    assert "abcdefghijklmnop" not in dumped
    assert "[REDACTED]" in dumped
    raw = database_bytes(store_path)
    assert secret.encode() not in raw and b"hunter2-very-secret-value" not in raw


async def test_a_crash_before_the_first_step_restarts_from_the_prompt(tmp_path: Path) -> None:
    from subagents.store.records import TaskRecord

    plans: dict[str, Plan] = {"main": []}
    with open_store(tmp_path / "state.db") as store:
        task = TaskRecord(
            description="d", prompt="say hi", workspace=str(tmp_path), status="running"
        )
        store.create_task(task)
        done = await make_runtime(tmp_path, store, plans).resume(task.id)
        assert done.status == "completed" and done.output == "main: "
        assert store.messages(store.sessions(task.id)[0].session_id)[0]["content"] == "say hi"


async def test_background_subagents_survive_a_restart(tmp_path: Path) -> None:
    peeks: list[int] = []
    first_peek = asyncio.Event()

    @tool(read_only=True)
    async def Peek() -> str:
        """Slow read-only look."""
        peeks.append(1)
        if len(peeks) == 1:
            first_peek.set()
            await asyncio.sleep(3600)  # the process stops here
        return "peeked"

    def main_turn(request: ModelRequest) -> ModelResponse:
        results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
        notes = [m.content for m in request.messages if "task-notification" in str(m.content)]
        if not results:
            return tool_call_response("Task", {**delegate("level1")[1], "run_in_background": True})
        if notes:
            return text_response("final: " + notes[-1])
        return text_response("waiting for the background agent")

    def runtime_for(store: SQLiteStore) -> Runtime:
        return Runtime(
            cwd=tmp_path,
            agents=AGENTS,
            model=FunctionModel(main_turn, name="scripted:main"),
            agent_models={"level1": planner("level1", [("Peek", {})])},
            tools=[Peek],
            store=store,
        )

    task_id = "bbbbbbbb-2222-4333-8444-555555555555"
    with open_store(tmp_path / "state.db") as store:
        running = asyncio.create_task(runtime_for(store).run("go", task_id=task_id))
        await asyncio.wait_for(first_peek.wait(), timeout=10)
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
        background = [s for s in store.sessions(task_id) if s.background]
        assert len(background) == 1 and background[0].status == "active"

        done = await runtime_for(store).resume(task_id)
    assert done.status == "completed"
    assert "level1: peeked" in done.output and done.output.startswith("final:")
    assert len(peeks) == 2


async def test_two_hundred_sessions_write_at_once_and_the_store_stays_whole(
    tmp_path: Path,
) -> None:
    from subagents.config import Config, SubagentsSettings
    from subagents.testing import tool_calls_response

    (tmp_path / "data.txt").write_text("payload\n")
    calls = [
        ("Task", {"description": f"job {i}", "prompt": f"job {i}", "subagent_type": "level1"})
        for i in range(200)
    ]
    main = FunctionModel(
        lambda request: (
            tool_calls_response(calls) if len(request.messages) == 1 else text_response("all done")
        ),
        name="scripted:main",
    )
    with open_store(tmp_path / "state.db") as store:
        runtime = Runtime(
            cwd=tmp_path,
            agents=AGENTS,
            config=Config(subagents=SubagentsSettings(max_concurrent=200)),
            model=main,
            agent_models={"level1": planner("level1", [("Read", {"file_path": "data.txt"})])},
            store=store,
        )
        result = await runtime.run("fan out")
        assert result.status == "completed" and result.output == "all done"
        assert store.integrity_check() == []
        sessions = store.sessions(result.task_id or "")
        children = [s for s in sessions if s.agent_name == "level1"]
        assert len(children) == 200 and all(s.status == "completed" for s in children)
        for child in children:
            messages = store.messages(child.session_id)
            assert len(messages) == 4 and messages[-1]["content"] == "level1:      1\tpayload"
        assert len(store.messages(sessions[0].session_id)) == 1 + 1 + 200 + 1


@pytest.mark.parametrize("policy", ["rerun", "fail"])
async def test_the_configured_policy_settles_an_interrupted_side_effect(
    tmp_path: Path, policy: str
) -> None:
    from subagents.config import Config, SubagentsSettings

    calls: list[str] = []
    hang = asyncio.Event()

    @tool
    async def Deploy(version: str) -> str:
        """Deploy a version (a side effect)."""
        calls.append(version)
        if len(calls) == 1:
            hang.set()
            await asyncio.sleep(3600)
        return f"deployed {version}"

    config = Config(subagents=SubagentsSettings(interrupted_tool_calls=policy))
    plans: dict[str, Plan] = {"main": [("Deploy", {"version": "v3"})]}
    task_id = "cccccccc-2222-4333-8444-555555555555"
    with open_store(tmp_path / "state.db") as store:
        first = make_runtime(
            tmp_path,
            store,
            plans,
            tools=[Deploy],
            config=config,
            permission_mode="bypassPermissions",
        )
        running = asyncio.create_task(first.run("ship", task_id=task_id))
        await asyncio.wait_for(hang.wait(), timeout=10)
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
        again = make_runtime(
            tmp_path,
            store,
            plans,
            tools=[Deploy],
            config=config,
            permission_mode="bypassPermissions",
        )
        done = await again.resume(task_id)
        statuses = [e.status for e in store.ledger(task_id)]
    assert done.status == "completed"
    if policy == "rerun":
        assert calls == ["v3", "v3"] and done.output == "main: deployed v3"
        assert statuses == ["completed"]
    else:
        assert calls == ["v3"] and "may or may not have taken effect" in done.output
        assert statuses == ["failed"]


async def test_every_session_on_the_path_reports_the_pause(tmp_path: Path) -> None:
    from subagents.runtime import events as ev
    from subagents.runtime.events import EventBus

    seen: list[ev.Event] = []
    with open_store(tmp_path / "state.db") as store:
        paused = await make_runtime(
            tmp_path, store, write_at_depth(2), events=EventBus([seen.append])
        ).run("write")
    assert paused.question is not None
    pauses = [e for e in seen if isinstance(e, ev.SessionPaused)]
    assert [e.agent_id for e in pauses] == paused.question.session_path[::-1]
    assert all(e.question.tool_name == "Write" for e in pauses)
    assert not any(isinstance(e, ev.SessionFinished) for e in seen)


async def test_a_side_effecting_tools_result_is_stored_once(tmp_path: Path) -> None:
    """Its result lives in the tool result message: the trace points at it and the ledger entry
    that closes with the turn does not copy it."""
    marker = "".join(f"{i:05d}" for i in range(2_000))  # 10 KB, found nowhere else

    @tool
    def fetch_report(name: str) -> str:
        """Fetch a report (not read-only: its calls are in the ledger)."""
        return marker

    plans: dict[str, Plan] = {"main": [("fetch_report", {"name": "q3"})]}
    with open_store(tmp_path / "state.db") as store:
        runtime = make_runtime(
            tmp_path, store, plans, tools=[fetch_report], permission_mode="bypassPermissions"
        )
        result = await runtime.run("get the report")
        assert result.status == "completed" and result.task_id is not None
        (entry,) = store.ledger(result.task_id)
        assert (entry.status, entry.result) == ("completed", None)
        connection = sqlite3.connect(tmp_path / "state.db")
        copies = {}
        for column in ("messages", "checkpoint", "ledger", "traces"):
            rows = connection.execute(f"SELECT {column} FROM steps").fetchall()
            copies[column] = sum(data.count(marker[:1_000]) for (data,) in rows if data)
        connection.close()
        # the tool result message, and the final answer (the planner quotes its results)
        assert copies == {"messages": 2, "checkpoint": 0, "ledger": 0, "traces": 0}
        assert marker in result.output
