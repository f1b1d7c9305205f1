"""The SQLite store's step log (schema 3): a schema-2 store is upgraded with every record kept
in order, read-only older stores are read through a copy upgraded in memory, task numbers
never mix two tasks' steps, and any interleaving of steps reads back as written (hypothesis,
against a plain model). Real SQLite files throughout."""

from __future__ import annotations

import json
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store_records import (
    empty_store_of_schema,
    make_checkpoint,
    make_ledger,
    make_session,
    make_task,
    make_trace,
    message,
    write_steps,
)
from subagents.store import StepWrite
from subagents.store.sqlite import SQLiteStore
from subagents.store.sqlite.schema import STORE_SCHEMA_VERSION

TASK = "7b7b7b7b-0000-4000-8000-000000000001"


def _schema_2_store(path: Path) -> dict[str, Any]:
    """A store as subagents wrote it before the step log, with one task of two sessions;
    returns what it holds, as the store must read it back."""
    raw = empty_store_of_schema(path, 2)
    task = make_task(id=TASK)
    raw.execute(
        "INSERT INTO tasks VALUES (?, ?, NULL, ?, ?)",
        (task.id, task.status, task.created_at.timestamp(), task.model_dump_json()),
    )
    sessions = {name: make_session(TASK, name) for name in ("main", "child")}
    for session in sessions.values():
        raw.execute(
            "INSERT INTO sessions VALUES (?, ?, ?)",
            (session.session_id, TASK, session.model_dump_json()),
        )
    messages = {"main": [message(i) for i in range(3)], "child": [message(i) for i in range(2)]}
    for session_id, values in messages.items():
        for seq, value in enumerate(values):
            raw.execute(
                "INSERT INTO messages VALUES (?, ?, json(?))",
                (session_id, seq, json.dumps(value)),
            )
    checkpoints = [
        make_checkpoint(TASK, session_id, sequence=sequence, position=f"p{sequence}")
        for sequence, session_id in enumerate(["main", "child", "child", "main"])
    ]
    for checkpoint in checkpoints:
        raw.execute(
            "INSERT INTO checkpoints VALUES (?, ?, ?, ?, ?)",
            (
                TASK,
                checkpoint.sequence,
                checkpoint.session_id,
                checkpoint.checkpoint_id,
                checkpoint.model_dump_json(),
            ),
        )
    ledger = [
        make_ledger(TASK, "main", "call-1", status="completed"),
        make_ledger(TASK, "child", "call-2"),
        make_ledger(TASK, "main", "call-3"),
    ]
    for entry in ledger:
        raw.execute(
            "INSERT INTO ledger VALUES (?, ?, ?, ?)",
            (TASK, entry.session_id, entry.tool_call_id, entry.model_dump_json()),
        )
    traces = [make_trace(TASK, s, message=f"t{i}") for i, s in enumerate(["main", None, "child"])]
    for trace in traces:
        raw.execute(
            "INSERT INTO traces (task_id, data) VALUES (?, ?)", (TASK, trace.model_dump_json())
        )
    raw.close()
    return {
        "messages": messages,
        "checkpoints": checkpoints,
        "ledger": ledger,
        "traces": traces,
    }


def _reads(store: SQLiteStore) -> dict[str, Any]:
    return {
        "messages": {s: store.messages(s) for s in ("main", "child")},
        "checkpoints": store.checkpoints(TASK),
        "ledger": store.ledger(TASK),
        "traces": store.traces(TASK),
    }


def test_a_schema_2_store_is_upgraded_with_every_record_in_its_order(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    stored = _schema_2_store(path)
    with SQLiteStore(path) as store:
        assert _reads(store) == stored
        latest = store.latest_checkpoint(TASK, "child")
        assert latest is not None and latest.position == "p2"
        assert store.ledger(TASK, "child") == [stored["ledger"][1]]
        assert store.integrity_check() == []
        # the task goes on where it was: the next message seq, the next checkpoint sequence
        saved = store.commit(
            StepWrite(
                task_id=TASK,
                messages=[("main", 3, message(3))],
                checkpoint=make_checkpoint(TASK, "main"),
            )
        )
        assert saved is not None and saved.sequence == 4
        assert store.messages("main") == [message(i) for i in range(4)]
        assert store.integrity_check() == []
    raw = sqlite3.connect(path)
    tables = {row[0] for row in raw.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"messages", "checkpoints", "ledger", "traces"}.isdisjoint(tables)
    assert raw.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (
        str(STORE_SCHEMA_VERSION),
    )
    raw.close()


def test_a_read_only_schema_2_store_is_read_from_an_upgraded_copy(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    stored = _schema_2_store(path)
    before = path.read_bytes()
    with SQLiteStore(path, read_only=True) as store:
        assert _reads(store) == stored
    assert path.read_bytes() == before  # the file itself is left as it was


def test_a_task_number_handed_out_again_finds_no_steps_of_the_deleted_task(
    tmp_path: Path,
) -> None:
    with SQLiteStore(tmp_path / "state.db") as store:
        first, last = make_task(), make_task()
        store.create_task(first)
        store.create_task(last)
        write_steps(store, make_session(last.id, "old"), 3)
        store.delete_task(last.id)  # the highest number: the next task gets it again
        again = make_task()
        store.create_task(again)
        assert store.checkpoints(again.id) == [] and store.traces(again.id) == []
        write_steps(store, make_session(again.id, "new"), 1)
        assert [c.sequence for c in store.checkpoints(again.id)] == [0]
        assert store.integrity_check() == []


def test_vacuum_keeps_every_task_with_its_steps(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with SQLiteStore(path) as store:
        tasks = [make_task() for _ in range(3)]
        for index, task in enumerate(tasks):
            store.create_task(task)
            write_steps(store, make_session(task.id, f"s{index}"), index + 1)
        store.delete_task(tasks[0].id)
    raw = sqlite3.connect(path)
    raw.execute("VACUUM")  # may renumber rowids: the steps are keyed by tasks.no instead
    raw.close()
    with SQLiteStore(path) as store:
        for index, task in enumerate(tasks[1:], start=1):
            assert len(store.checkpoints(task.id)) == index + 1
            assert len(store.messages(f"s{index}")) == index + 1
        assert store.integrity_check() == []


# -- any interleaving reads back as written ------------------------------------------------

_SESSIONS = ("a", "b", "c")

_steps = st.lists(
    st.tuples(
        st.sampled_from(_SESSIONS),  # whose step
        st.integers(0, 2),  # new messages
        st.booleans(),  # with a checkpoint
        st.lists(st.sampled_from(["x", "y", "z"]), max_size=2),  # ledger entries by call id
        st.integers(0, 2),  # trace records
    ),
    max_size=25,
)


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(steps=_steps)
def test_any_interleaving_of_steps_reads_back_as_written(
    steps: list[tuple[str, int, bool, list[str], int]],
) -> None:
    with tempfile.TemporaryDirectory() as folder, SQLiteStore(Path(folder) / "s.db") as store:
        task = make_task()
        store.create_task(task)
        messages: dict[str, list[dict[str, Any]]] = {s: [] for s in _SESSIONS}
        sequences: list[tuple[str, int]] = []
        ledger: dict[tuple[str, str], str] = {}
        traces: list[str] = []
        for number, (session, new, checkpointed, calls, trace_count) in enumerate(steps):
            first = len(messages[session])
            added = [message(first + i) for i in range(new)]
            status = "completed" if number % 2 else "started"
            write = StepWrite(
                task_id=task.id,
                session=make_session(task.id, session) if first == 0 else None,
                messages=[(session, first + i, value) for i, value in enumerate(added)],
                checkpoint=make_checkpoint(task.id, session, position=f"step {number}")
                if checkpointed
                else None,
                ledger=[make_ledger(task.id, session, call, status=status) for call in calls],
                traces=[
                    make_trace(task.id, session, message=f"{number}.{i}")
                    for i in range(trace_count)
                ],
            )
            saved = store.commit(write)
            messages[session] += added
            if checkpointed:
                assert saved is not None and saved.sequence == len(sequences)
                sequences.append((session, number))
            for call in calls:
                ledger[session, call] = status
            traces += [f"{number}.{i}" for i in range(trace_count)]

        for session in _SESSIONS:
            assert store.messages(session) == messages[session]
            mine = [number for owner, number in sequences if owner == session]
            latest = store.latest_checkpoint(task.id, session)
            assert (latest.position if latest else None) == (f"step {mine[-1]}" if mine else None)
        stored = store.checkpoints(task.id)
        assert [c.sequence for c in stored] == list(range(len(sequences)))
        assert [c.position for c in stored] == [f"step {n}" for _, n in sequences]
        assert {(e.session_id, e.tool_call_id): e.status for e in store.ledger(task.id)} == ledger
        assert [e.session_id for e in store.ledger(task.id)] == [s for s, _ in ledger]
        assert [t.message for t in store.traces(task.id)] == traces
        assert store.integrity_check() == []

        # the whole task moves to another store and reads back the same
        bundle = store.load_bundle(task.id)
        with SQLiteStore(Path(folder) / "copy.db") as copy:
            copy.restore_bundle(bundle)
            assert copy.load_bundle(task.id) == bundle
            assert copy.integrity_check() == []
