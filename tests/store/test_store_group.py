"""Group commit: the steps concurrent sessions write in one turn of the event loop share one
SQLite transaction, without giving up a step's durability or its errors. Real SQLite files."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from subagents.definitions.model import AgentDefinition
from subagents.errors import StoreError
from subagents.messages import AssistantMessage, ToolCall, ToolResultMessage
from subagents.models.base import ModelRequest, ModelResponse
from subagents.runtime.runtime import Runtime
from subagents.store import CheckpointRecord, SessionRecord, StepWrite, TaskRecord
from subagents.store.group import commit_group
from subagents.store.shared import encode_step
from subagents.store.sqlite import SQLiteStore, open_store
from subagents.store.steplog import EncodedStep
from subagents.testing import FunctionModel, text_response, tool_call_response
from subagents.tools.decorator import tool


def count_commits(store: SQLiteStore) -> list[str]:
    """Every transaction the store's connection commits from now on (SQLite's own statement
    trace): a COMMIT, or a write run outside a transaction (SQLite commits it by itself)."""
    seen: list[str] = []
    connection = store._db._connection
    assert connection is not None

    def note(sql: str) -> None:
        words = sql.split()
        first = words[0].upper() if words else ""
        alone = first in ("INSERT", "UPDATE", "DELETE") and not connection.in_transaction
        if first == "COMMIT" or alone:
            seen.append(sql)

    connection.set_trace_callback(note)
    return seen


def new_task(store: SQLiteStore) -> tuple[TaskRecord, list[SessionRecord]]:
    task = TaskRecord(description="group", prompt="go", workspace="/tmp")
    store.create_task(task)
    sessions = [
        SessionRecord(
            session_id=f"session-{i}",
            task_id=task.id,
            agent_name=f"s{i}",
            task_description="",
            model="m",
            max_turns=10,
        )
        for i in range(3)
    ]
    for session in sessions:
        store.commit(StepWrite(task_id=task.id, session=session))
    return task, sessions


def step(task: TaskRecord, session: SessionRecord, seq: int) -> EncodedStep:
    checkpoint = CheckpointRecord(
        checkpoint_id=f"{session.session_id}:{seq}",
        task_id=task.id,
        session_id=session.session_id,
        position="after_model",
        state={"n": seq},
    )
    message = {"role": "user", "content": f"message {seq} of {session.agent_name}"}
    return encode_step(
        StepWrite(
            task_id=task.id,
            messages=[(session.session_id, seq, message)],
            checkpoint=checkpoint,
        )
    )


async def test_a_lone_writer_commits_at_once(tmp_path: Path) -> None:
    with open_store(tmp_path / "state.db") as store:
        task, (session, *_) = new_task(store)
        commits = count_commits(store)
        stored: list[int | None] = []
        group = commit_group(store)
        for seq in range(3):  # nothing else is due on the loop: no waiting, no savepoint
            await group.commit(step(task, session, seq), stored.append)
            assert len(stored) == seq + 1 and len(commits) == seq + 1
        assert stored == [0, 1, 2]


async def test_steps_of_one_loop_turn_share_a_transaction(tmp_path: Path) -> None:
    with open_store(tmp_path / "state.db") as store:
        task, sessions = new_task(store)
        commits = count_commits(store)
        stored: list[str] = []
        group = commit_group(store)

        def note(name: str) -> Callable[[int | None], None]:
            return lambda sequence: stored.append(name)

        writes = [group.commit(step(task, s, 0), note(s.agent_name)) for s in sessions]
        await asyncio.gather(*writes)
        assert sorted(stored) == ["s0", "s1", "s2"]
        assert len(commits) == 1  # three writers due in one turn: one transaction
        assert len(store.checkpoints(task.id)) == 3
        for session in sessions:
            assert len(store.messages(session.session_id)) == 1


async def test_a_cancelled_writers_step_is_left_out_and_a_refused_one_fails_alone(
    tmp_path: Path,
) -> None:
    with open_store(tmp_path / "state.db") as store:
        task, (first, cancelled, refused) = new_task(store)
        group = commit_group(store)
        stored: list[str] = []

        def note(name: str) -> Callable[[int | None], None]:
            return lambda sequence: stored.append(name)

        # four steps due in one turn: they wait for one transaction
        going = asyncio.ensure_future(group.commit(step(task, first, 0), note("first")))
        dropped = asyncio.ensure_future(group.commit(step(task, cancelled, 0), note("dropped")))
        gap = asyncio.ensure_future(group.commit(step(task, refused, 5), note("gap")))
        later = asyncio.ensure_future(group.commit(step(task, first, 1), note("later")))
        await asyncio.sleep(0)
        assert stored == []
        dropped.cancel()  # before the group's transaction begins
        await going
        with pytest.raises(StoreError, match="gap"):
            await gap
        await later
        with pytest.raises(asyncio.CancelledError):
            await dropped
        assert stored == ["first", "later"]
        assert store.messages(cancelled.session_id) == []
        assert store.messages(refused.session_id) == []
        assert [m["content"] for m in store.messages(first.session_id)] == [
            "message 0 of s0",
            "message 1 of s0",
        ]


async def test_parallel_subagents_commit_in_groups_and_resume_finds_every_step(
    tmp_path: Path,
) -> None:
    count = 12
    arrived = 0
    recorded: list[str] = []

    @tool
    async def record(text: str) -> str:
        """Record a text (a side effect: its calls are in the ledger)."""
        recorded.append(text)  # no thread, no I/O: every worker's call ends in the same turn
        return "recorded"

    all_here = asyncio.Event()

    async def worker(request: ModelRequest) -> ModelResponse:
        # every worker's first answer waits until all have asked: they return in one turn
        nonlocal arrived
        if not any(isinstance(m, AssistantMessage) for m in request.messages):
            arrived += 1
            if arrived == count:
                all_here.set()
            await all_here.wait()
            return tool_call_response("record", {"text": "x"})
        return text_response("done")

    def main(request: ModelRequest) -> ModelResponse:
        if not any(isinstance(m, ToolResultMessage) for m in request.messages):
            calls = [
                (
                    "Task",
                    {"description": f"job {i}", "prompt": f"do {i}", "subagent_type": "worker"},
                )
                for i in range(count)
            ]
            return ModelResponse(tool_calls=tuple(_calls(calls)), stop_reason="tool_use")
        return text_response("all done")

    with open_store(tmp_path / "state.db") as store:
        runtime = Runtime(
            cwd=tmp_path,
            agents=[
                AgentDefinition(
                    name="worker", description="Works.", system_prompt="W.", tools=["record"]
                )
            ],
            tools=[record],
            model=FunctionModel(main, name="scripted:main"),
            agent_models={"worker": FunctionModel(worker, name="scripted:worker")},
            store=store,
            permission_mode="bypassPermissions",
        )
        commits = count_commits(store)
        result = await runtime.run("go")
        assert result.status == "completed", result.error
        assert result.task_id is not None
        checkpoints = store.checkpoints(result.task_id)
        assert len(commits) < len(checkpoints) / 2  # grouped, not one commit per step
        workers = [s for s in store.sessions(result.task_id) if s.agent_name == "worker"]
        assert len(workers) == count and all(s.status == "completed" for s in workers)
        for session in workers:
            roles = [m["role"] for m in store.messages(session.session_id)]
            assert roles == ["user", "assistant", "tool", "assistant"]
        assert len(recorded) == count
        entries = store.ledger(result.task_id)
        assert len(entries) == count and {e.status for e in entries} == {"completed"}


def _calls(calls: list[tuple[str, dict[str, Any]]]) -> list[ToolCall]:
    return [ToolCall(f"call_{i}", name, dict(args)) for i, (name, args) in enumerate(calls)]


async def test_a_step_the_trigger_refuses_inside_a_group_leaves_nothing_of_itself(
    tmp_path: Path,
) -> None:
    """A step that carries its session's record is one statement, written in a group without
    a savepoint: when the store's trigger refuses it halfway (the session is another task's),
    SQLite undoes the whole statement, and the group's other steps land."""
    with open_store(tmp_path / "state.db") as store:
        task, (first, *_) = new_task(store)
        other = TaskRecord(description="other", prompt="go", workspace="/tmp")
        store.create_task(other)
        stolen = first.model_copy(update={"task_id": other.id, "agent_name": "thief"})
        checkpoint = CheckpointRecord(
            checkpoint_id="stolen:0",
            task_id=other.id,
            session_id=first.session_id,
            position="after_model",
            state={},
        )
        message = {"role": "user", "content": "not yours"}
        theft = encode_step(
            StepWrite(
                task_id=other.id,
                session=stolen,
                messages=[(first.session_id, 0, message)],
                checkpoint=checkpoint,
            )
        )
        assert theft.session is not None and len(theft.rows) == 1  # rides with its row
        group, stored = commit_group(store), list[int | None]()
        going = asyncio.ensure_future(group.commit(step(task, first, 0), stored.append))
        refused = asyncio.ensure_future(group.commit(theft, stored.append))
        await going
        with pytest.raises(StoreError, match="belongs to another task"):
            await refused
        assert len(stored) == 1
        record = store.get_session(first.session_id)
        assert record.task_id == task.id and record.agent_name == "s0"
        assert store.checkpoints(other.id) == []
        assert [m["content"] for m in store.messages(first.session_id)] == ["message 0 of s0"]
        assert store.integrity_check() == []


def _stored_log(store: SQLiteStore, task: TaskRecord, sessions: list[SessionRecord]) -> Any:
    """What a task's log reads back as: each session's messages, the checkpoints."""
    messages = {s.session_id: store.messages(s.session_id) for s in sessions}
    checkpoints = [(c.session_id, c.sequence, c.state) for c in store.checkpoints(task.id)]
    return messages, checkpoints


def _outcome(outcome: int | Exception | None) -> Any:
    return (type(outcome).__name__, str(outcome)) if isinstance(outcome, Exception) else outcome


@pytest.mark.slow
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    plan=st.lists(
        st.tuples(st.integers(min_value=0, max_value=2), st.integers(min_value=-1, max_value=1)),
        min_size=1,
        max_size=12,
    )
)
def test_a_group_appends_as_its_steps_one_by_one_do(
    tmp_path_factory: pytest.TempPathFactory, plan: list[tuple[int, int]]
) -> None:
    """``append_group`` (one transaction, each step from the kept tail) stores and answers
    exactly what appending each step on its own does, steps that are refused included (a
    seq already stored, a gap): the plan is (session, offset from the session's next seq)."""
    folder = tmp_path_factory.mktemp("group")
    with open_store(folder / "one.db") as alone, open_store(folder / "group.db") as grouped:
        task, sessions = new_task(alone)
        grouped.create_task(task.model_copy())
        for session in sessions:
            grouped.commit(StepWrite(task_id=task.id, session=session))
        next_seq = [0, 0, 0]
        writes = []
        for index, offset in plan:
            seq = max(next_seq[index] + offset, 0)
            writes.append(step(task, sessions[index], seq))
            if seq == next_seq[index]:
                next_seq[index] += 1
        expected = []
        for write in writes:
            try:
                expected.append(_outcome(alone.append(write)))
            except StoreError as error:
                expected.append(_outcome(error))
        assert [_outcome(o) for o in grouped.append_group(writes)] == expected
        assert _stored_log(grouped, task, sessions) == _stored_log(alone, task, sessions)
        assert grouped.integrity_check() == []


def test_a_group_step_whose_log_another_writer_moved_is_written_after_it(
    tmp_path: Path,
) -> None:
    """The store keeps where a task's log ends; another writer (a second store object on the
    file) appending meanwhile makes that stale: the group's step reads the log again and
    lands after the other writer's, as a step appended alone would."""
    with open_store(tmp_path / "state.db") as store:
        task, (first, second, _) = new_task(store)
        assert store.append(step(task, first, 0)) == 0  # the tail is kept from here
        with open_store(tmp_path / "state.db") as other:
            assert other.append(step(task, second, 0)) == 1
        outcomes = store.append_group([step(task, first, 1), step(task, second, 1)])
        assert outcomes == [2, 3]
        assert [c.sequence for c in store.checkpoints(task.id)] == [0, 1, 2, 3]
        assert len(store.messages(second.session_id)) == 2
        assert store.integrity_check() == []
