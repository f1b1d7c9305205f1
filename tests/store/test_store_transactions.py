"""Outer transactions: step writes handed a ``tx`` land together with it or not at all, a
step write alone stays atomic, and a transaction the caller owns on its own connection (as a
workflow engine's would) carries the store's writes."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from store_records import make_checkpoint, make_session, make_task, message
from subagents.errors import StoreError
from subagents.store import StepWrite
from subagents.store.sqlite import SQLiteStore


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    with SQLiteStore(tmp_path / "state.db") as opened:
        yield opened


def _step(task_id: str, seq: int) -> StepWrite:
    session = make_session(task_id, f"{task_id}-main")
    return StepWrite(
        task_id=task_id,
        session=session,
        messages=[(session.session_id, seq, message(seq))],
        checkpoint=make_checkpoint(task_id, session.session_id),
    )


def test_two_step_writes_in_an_outer_transaction_roll_back_together(store: SQLiteStore) -> None:
    task = make_task()
    with pytest.raises(RuntimeError), store.transaction() as tx:
        store.create_task(task, tx=tx)
        store.commit(_step(task.id, 0), tx=tx)
        store.commit(_step(task.id, 1), tx=tx)
        raise RuntimeError("the outer work failed after both steps")
    assert store.list_tasks() == []
    assert store.messages(f"{task.id}-main") == []

    with store.transaction() as tx:
        store.create_task(task, tx=tx)
        first = store.commit(_step(task.id, 0), tx=tx)
        second = store.commit(_step(task.id, 1), tx=tx)
    assert (first and first.sequence, second and second.sequence) == (0, 1)
    assert len(store.messages(f"{task.id}-main")) == 2
    assert not tx.active
    with pytest.raises(StoreError, match="already ended"):
        store.commit(_step(task.id, 2), tx=tx)


def test_a_failing_step_inside_rolls_back_alone_and_a_step_alone_is_atomic(
    store: SQLiteStore,
) -> None:
    task = make_task()
    store.create_task(task)
    with store.transaction() as tx:
        store.commit(_step(task.id, 0), tx=tx)
        with pytest.raises(StoreError, match="would leave a gap"):
            store.commit(_step(task.id, 5), tx=tx)  # its checkpoint must not land either
        store.commit(_step(task.id, 1), tx=tx)
    assert [c.sequence for c in store.checkpoints(task.id)] == [0, 1]

    broken = _step(task.id, 2)
    broken.messages = [*broken.messages, (f"{task.id}-main", 9, message(9))]
    with pytest.raises(StoreError, match="would leave a gap"):
        store.commit(broken)
    assert len(store.messages(f"{task.id}-main")) == 2
    assert [c.sequence for c in store.checkpoints(task.id)] == [0, 1]


def test_a_nested_transaction_rolls_back_alone(store: SQLiteStore) -> None:
    task = make_task()
    with store.transaction() as outer:
        store.create_task(task, tx=outer)
        with pytest.raises(RuntimeError), store.transaction(outer) as inner:
            store.commit(_step(task.id, 0), tx=inner)
            raise RuntimeError("the inner part failed")
        store.commit(_step(task.id, 0), tx=outer)
    assert len(store.messages(f"{task.id}-main")) == 1


def test_a_transaction_of_another_store_is_refused(tmp_path: Path, store: SQLiteStore) -> None:
    with (
        SQLiteStore(tmp_path / "other.db") as other,
        other.transaction() as foreign,
        pytest.raises(StoreError, match="belongs to another store"),
    ):
        store.create_task(make_task(), tx=foreign)


def _outer_connection(path: Path) -> sqlite3.Connection:
    connection = sqlite3.connect(path, isolation_level=None, timeout=10)
    connection.execute("PRAGMA foreign_keys = ON")
    return connection


def test_step_writes_join_a_transaction_the_caller_owns(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    task = make_task()
    with SQLiteStore(path) as store:
        engine = _outer_connection(path)  # as a workflow engine holds its own
        engine.execute("BEGIN IMMEDIATE")
        engine.execute("INSERT INTO meta VALUES ('engine.step', 'done')")
        with store.join_transaction(engine) as tx:
            store.create_task(task, tx=tx)
            store.commit(_step(task.id, 0), tx=tx)
            store.commit(_step(task.id, 1), tx=tx)
        engine.execute("ROLLBACK")
        assert store.list_tasks() == [] and store.get_meta("engine.step") is None

        engine.execute("BEGIN IMMEDIATE")
        engine.execute("INSERT INTO meta VALUES ('engine.step', 'done')")
        with store.join_transaction(engine) as tx:
            store.create_task(task, tx=tx)
            store.commit(_step(task.id, 0), tx=tx)
            store.commit(_step(task.id, 1), tx=tx)
        assert store.list_tasks() == []  # not before the owner commits
        engine.execute("COMMIT")
        engine.close()
        assert [t.id for t in store.list_tasks()] == [task.id]
        assert store.get_meta("engine.step") == "done"
        assert len(store.messages(f"{task.id}-main")) == 2


def test_joining_is_refused_for_a_connection_that_cannot_carry_the_writes(
    tmp_path: Path,
) -> None:
    path = tmp_path / "state.db"
    with SQLiteStore(path) as store:
        idle = _outer_connection(path)
        with pytest.raises(StoreError, match="no open transaction"), store.join_transaction(idle):
            pass
        elsewhere = _outer_connection(tmp_path / "elsewhere.db")
        elsewhere.execute("BEGIN IMMEDIATE")
        with pytest.raises(StoreError, match="not on"), store.join_transaction(elsewhere):
            pass
        loose = sqlite3.connect(path, isolation_level=None)
        loose.execute("BEGIN")
        with pytest.raises(StoreError, match="foreign keys"), store.join_transaction(loose):
            pass
        for connection in (idle, elsewhere, loose):
            connection.close()
