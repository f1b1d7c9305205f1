"""200 sessions committing at once through one store, while a second process commits to the
same file: afterwards every row is there and the database passes its integrity check."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from store_records import make_checkpoint, make_ledger, make_session, make_task, make_trace
from subagents.store import StepWrite
from subagents.store.sqlite import SQLiteStore

pytestmark = (
    pytest.mark.slow
)  # real subprocesses, servers or many examples: not in `make test-fast`

SESSIONS = 200
STEPS = 6
TASKS = 20

# The other process: its own task, plus checkpoints into the shared task, until told to stop.
_OTHER_PROCESS = """
import json, sys
from pathlib import Path
from subagents.store import CheckpointRecord, SessionRecord, StepWrite, TaskRecord
from subagents.store.sqlite import SQLiteStore

path, shared_task, stop = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
store = SQLiteStore(path)
own = TaskRecord(description="other process", prompt="go", workspace="/tmp")
store.create_task(own)
session = SessionRecord(session_id="other-own", task_id=own.id, agent_name="main",
                        model="test:x", max_turns=1000)
shared = SessionRecord(session_id="other-shared", task_id=shared_task, agent_name="worker",
                       model="test:x", max_turns=1000)
store.commit(StepWrite(task_id=own.id, session=session))
store.commit(StepWrite(task_id=shared_task, session=shared))
print("ready", flush=True)
steps = 0
while not stop.exists() and steps < 20000:
    store.commit(StepWrite(
        task_id=own.id,
        messages=[("other-own", steps, {"role": "user", "content": "x" * 500})],
        checkpoint=CheckpointRecord(task_id=own.id, session_id="other-own", position="p"),
    ))
    store.commit(StepWrite(
        task_id=shared_task,
        messages=[("other-shared", steps, {"role": "user", "content": "y" * 500})],
        checkpoint=CheckpointRecord(task_id=shared_task, session_id="other-shared", position="p"),
    ))
    steps += 1
store.close()
print(json.dumps({"task": own.id, "steps": steps}), flush=True)
"""


async def _session(store: SQLiteStore, task_id: str, index: int) -> None:
    session = make_session(task_id, f"session-{index:03d}", agent_name=f"agent-{index % 7}")
    in_thread = index % 4 == 0  # some sessions commit from worker threads, as to_thread would
    for seq in range(STEPS):
        step = StepWrite(
            task_id=task_id,
            session=session if seq == 0 else None,
            messages=[
                (session.session_id, seq, {"role": "assistant", "content": f"{index}:{seq}"})
            ],
            checkpoint=make_checkpoint(task_id, session.session_id, state={"seq": seq}),
            ledger=[make_ledger(task_id, session.session_id, f"call-{seq}", status="completed")],
            traces=[make_trace(task_id, session.session_id, message=f"{index}:{seq}")],
        )
        if in_thread:
            await asyncio.to_thread(store.commit, step)
        else:
            store.commit(step)
        await asyncio.sleep(0)


async def test_200_sessions_and_a_second_process(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    store = SQLiteStore(path)
    tasks = [make_task(description=f"task {index}") for index in range(TASKS)]
    for task in tasks:
        store.create_task(task)
    shared = tasks[0].id
    stop = tmp_path / "stop"
    other = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        _OTHER_PROCESS,
        str(path),
        shared,
        str(stop),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert other.stdout is not None
        ready = await asyncio.wait_for(other.stdout.readline(), timeout=60)
        assert ready.strip() == b"ready"
        await asyncio.gather(
            *(_session(store, tasks[index % TASKS].id, index) for index in range(SESSIONS))
        )
        stop.touch()
        out_bytes, err_bytes = await asyncio.wait_for(other.communicate(), timeout=120)
    finally:
        if other.returncode is None:
            other.kill()
            await other.wait()
    out, err = out_bytes.decode(), err_bytes.decode()
    assert other.returncode == 0, err
    report = json.loads(out.strip().splitlines()[-1])
    assert report["steps"] > 0

    assert store.integrity_check() == []
    for index in range(SESSIONS):
        session_id = f"session-{index:03d}"
        contents = [m["content"] for m in store.messages(session_id)]
        assert contents == [f"{index}:{seq}" for seq in range(STEPS)]
    for position, task in enumerate(tasks):
        own_sessions = SESSIONS // TASKS
        extra = report["steps"] if position == 0 else 0
        checkpoints = store.checkpoints(task.id)
        assert len(checkpoints) == own_sessions * STEPS + extra
        assert [c.sequence for c in checkpoints] == list(range(len(checkpoints)))
        assert len(store.traces(task.id)) == own_sessions * STEPS
        assert len(store.ledger(task.id)) == own_sessions * STEPS
    assert len(store.messages("other-own")) == report["steps"]
    assert len(store.messages("other-shared")) == report["steps"]
    assert len(store.checkpoints(report["task"])) == report["steps"]
    store.close()
