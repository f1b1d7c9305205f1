"""ThreadedAsyncStore: the blocking store's operations as coroutines on a thread of its own.
Concurrent callers get what the blocking store gives, errors arrive as the same StoreError
types, a transaction keeps other tasks' writes out until it ends, and close ends it all."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from store_records import make_checkpoint, make_session, make_task, message
from subagents.errors import StoreCorruptError, StoreError
from subagents.store import AsyncStore, SQLiteStore, StepWrite, ThreadedAsyncStore
from subagents.store.open import open_async_store


def _step(task_id: str, session_id: str, seq: int) -> StepWrite:
    return StepWrite(
        task_id=task_id,
        session=make_session(task_id, session_id),
        messages=[(session_id, seq, message(seq))],
        checkpoint=make_checkpoint(task_id, session_id, state={"seq": seq}),
    )


def _store_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("subagents-store")]


async def test_many_tasks_at_once_get_what_the_blocking_store_gives(tmp_path: Path) -> None:
    before = set(_store_threads())
    astore = open_async_store(tmp_path / "state.db")
    protocol: AsyncStore = astore
    tasks = [make_task(description=f"task {n}") for n in range(8)]
    await asyncio.gather(*(protocol.create_task(task) for task in tasks))

    async def write_session(task_id: str) -> None:
        for seq in range(5):
            await astore.commit(_step(task_id, f"{task_id}-s", seq))

    await asyncio.gather(*(write_session(task.id) for task in tasks))
    assert len(set(_store_threads()) - before) == 1  # a thread of its own, however many callers

    listed = await astore.list_tasks(limit=None)
    messages = await asyncio.gather(*(astore.messages(f"{t.id}-s") for t in tasks))
    await astore.close()
    with SQLiteStore(tmp_path / "state.db") as blocking:
        assert [t.id for t in listed] == [t.id for t in blocking.list_tasks(limit=None)]
        assert list(messages) == [blocking.messages(f"{t.id}-s") for t in tasks]
        assert all(len(found) == 5 for found in messages)
        assert blocking.integrity_check() == []


async def test_errors_arrive_as_the_same_store_errors(tmp_path: Path) -> None:
    async with ThreadedAsyncStore(SQLiteStore(tmp_path / "state.db")) as astore:
        with pytest.raises(StoreError, match="no task 'missing'"):
            await astore.get_task("missing")
        task = make_task()
        await astore.create_task(task)
        with pytest.raises(StoreError, match="already exists"):
            await astore.create_task(task)
    damaged = tmp_path / "damaged.db"
    damaged.write_bytes(b"not a database at all" * 10)
    with pytest.raises(StoreCorruptError):
        open_async_store(damaged)


async def test_a_transaction_keeps_other_tasks_writes_out_until_it_ends(
    tmp_path: Path,
) -> None:
    astore = open_async_store(tmp_path / "state.db")
    task, other = make_task(), make_task()
    began, other_done = asyncio.Event(), asyncio.Event()

    async def outsider() -> None:
        await began.wait()
        await astore.create_task(other)  # must not land inside the failing transaction
        other_done.set()

    waiting = asyncio.create_task(outsider())
    with pytest.raises(RuntimeError):
        async with astore.transaction() as tx:
            await astore.create_task(task, tx=tx)
            began.set()
            await astore.commit(_step(task.id, "s", 0), tx=tx)
            assert [t.id for t in await astore.list_tasks()] == [task.id]  # its own view
            assert not other_done.is_set()
            raise RuntimeError("the outer work failed")
    await waiting
    assert [t.id for t in await astore.list_tasks()] == [other.id]

    async with astore.transaction() as tx:
        await astore.create_task(task, tx=tx)
        await astore.commit(_step(task.id, "s", 0), tx=tx)
    assert len(await astore.messages("s")) == 1
    await astore.close()


async def test_a_cancelled_transaction_is_ended_on_the_worker(tmp_path: Path) -> None:
    astore = open_async_store(tmp_path / "state.db")
    inside = asyncio.Event()
    task = make_task()

    async def work() -> None:
        async with astore.transaction() as tx:
            await astore.create_task(task, tx=tx)
            inside.set()
            await asyncio.Event().wait()  # until cancelled

    running = asyncio.create_task(work())
    await inside.wait()
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert await astore.list_tasks() == []
    await astore.create_task(task)  # the store is free again
    await astore.close()


async def test_a_closed_facade_refuses_calls_and_closes_its_store(tmp_path: Path) -> None:
    blocking = SQLiteStore(tmp_path / "state.db")
    astore = ThreadedAsyncStore(blocking)
    await astore.close()
    await astore.close()  # twice is fine
    with pytest.raises(StoreError, match="is closed"):
        await astore.list_tasks()
    with pytest.raises(StoreError, match="is closed"):
        blocking.list_tasks()
