"""The SQLite store appends a step as one INSERT from the tail of the task's log it keeps
(schema 4), and a step with its session's record as one INSERT too, through the view whose
trigger writes both (schema 5). What another writer does meanwhile (another store object on
the same file, as another process would be) is noticed and the step checked against the log
as it is: nothing is lost, nothing written twice, no step refused that the log would take.
And a schema-3 store is upgraded with each row's first message seq counted."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store_records import (
    empty_store_of_schema,
    make_checkpoint,
    make_session,
    make_task,
    message,
    write_steps,
)
from subagents.errors import StoreError, TaskNotFoundError
from subagents.store import StepWrite
from subagents.store.sqlite import SQLiteStore
from subagents.store.sqlite.schema import STORE_SCHEMA_VERSION


def _step(task_id: str, session_id: str, seq: int) -> StepWrite:
    return StepWrite(
        task_id=task_id,
        messages=[(session_id, seq, message(seq))],
        checkpoint=make_checkpoint(task_id, session_id),
    )


def _task_with_steps(store: SQLiteStore, steps: int) -> str:
    """A new task in ``store`` whose session ``a`` has written ``steps`` steps; its id."""
    task = make_task()
    store.create_task(task)
    write_steps(store, make_session(task.id, "a"), steps)
    return task.id


def test_two_writers_of_one_task_both_land_in_order(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with SQLiteStore(path) as first, SQLiteStore(path) as second:
        task_id = _task_with_steps(first, 1)  # first keeps a tail
        write_steps(second, make_session(task_id, "b"), 2)  # moves the log past it
        saved = first.commit(_step(task_id, "a", 1))
        assert saved is not None and saved.sequence == 3
        assert second.commit(_step(task_id, "b", 2)) is not None
        assert [c.sequence for c in first.checkpoints(task_id)] == [0, 1, 2, 3, 4]
        assert first.messages("a") == [message(0), message(1)]
        assert first.messages("b") == [message(i) for i in range(3)]
        assert first.integrity_check() == []


def test_a_message_another_writer_stored_first_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with SQLiteStore(path) as first, SQLiteStore(path) as second:
        task_id = _task_with_steps(first, 1)
        second.commit(_step(task_id, "a", 1))
        with pytest.raises(StoreError, match="message 1 of session a is already stored"):
            first.commit(_step(task_id, "a", 1))
        assert first.messages("a") == [message(0), message(1)]
        assert first.integrity_check() == []


def test_a_task_deleted_by_another_writer_takes_no_more_steps(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with SQLiteStore(path) as writer, SQLiteStore(path) as other:
        task_id = _task_with_steps(writer, 2)
        other.delete_task(task_id)  # the highest number: the next task gets it again
        again = make_task()
        other.create_task(again)
        write_steps(other, make_session(again.id, "b"), 1)
        with pytest.raises(TaskNotFoundError, match=f"no task {task_id}"):
            writer.commit(_step(task_id, "a", 2))
        assert [c.sequence for c in other.checkpoints(again.id)] == [0]
        assert other.integrity_check() == []


def test_a_task_given_a_new_number_goes_on_where_its_log_ends(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with SQLiteStore(path) as writer, SQLiteStore(path) as other:
        task_id = _task_with_steps(writer, 2)
        bundle = other.load_bundle(task_id)
        other.create_task(make_task())
        other.restore_bundle(bundle, replace=True)  # the same records, under a new number
        saved = writer.commit(_step(task_id, "a", 2))
        assert saved is not None and saved.sequence == 2
        assert writer.messages("a") == [message(i) for i in range(3)]
        assert writer.integrity_check() == []


def test_a_rolled_back_step_leaves_the_kept_tail_behind(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "state.db") as store:
        task_id = _task_with_steps(store, 1)
        with pytest.raises(RuntimeError), store.transaction() as tx:
            store.commit(_step(task_id, "a", 1), tx=tx)
            raise RuntimeError("the caller changes its mind")
        saved = store.commit(_step(task_id, "a", 1))  # the same step again: not a gap
        assert saved is not None and saved.sequence == 1
        with store.transaction() as tx:
            store.commit(_step(task_id, "a", 2), tx=tx)
        saved = store.commit(_step(task_id, "a", 3))  # after a step the tail did not see
        assert saved is not None and saved.sequence == 3
        assert store.messages("a") == [message(i) for i in range(4)]
        assert store.integrity_check() == []


def test_a_step_that_leaves_a_gap_is_refused_and_nothing_of_it_stays(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "state.db") as store:
        task_id = _task_with_steps(store, 2)
        with pytest.raises(StoreError, match="message 3 of session a would leave a gap"):
            store.commit(_step(task_id, "a", 3))
        with pytest.raises(StoreError, match="belongs to a session that is not stored"):
            store.commit(_step(task_id, "nobody", 0))
        assert [c.sequence for c in store.checkpoints(task_id)] == [0, 1]
        saved = store.commit(_step(task_id, "a", 2))
        assert saved is not None and saved.sequence == 2


def _schema_3_store(path: Path) -> str:
    """A store as subagents wrote it with the step log of schema 3: one task, two sessions
    whose messages are spread over several rows."""
    raw = empty_store_of_schema(path, 3)
    task = make_task()
    raw.execute(
        "INSERT INTO tasks (id, status, parent_task_id, created_ts, data, no) "
        "VALUES (?, ?, NULL, ?, ?, 1)",
        (task.id, task.status, task.created_at.timestamp(), task.model_dump_json()),
    )
    for name, count in (("main", 4), ("child", 2)):
        raw.execute(
            "INSERT INTO sessions (session_id, task_id, data, next_seq) VALUES (?, ?, ?, ?)",
            (name, task.id, make_session(task.id, name).model_dump_json(), count),
        )
    rows = [("main", [0, 1]), ("child", [0]), ("main", [2]), ("child", [1]), ("main", [3])]
    for number, (session_id, seqs) in enumerate(rows):
        texts = ",".join(f'{{"role": "user", "content": "m{seq}"}}' for seq in seqs)
        raw.execute(
            "INSERT INTO steps (key, session_id, next_checkpoint, messages) VALUES (?, ?, 0, ?)",
            ((1 << 32) + number, session_id, f"[{texts}]"),
        )
    raw.close()
    return task.id


def test_a_schema_3_store_is_upgraded_with_each_rows_first_seq(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    task_id = _schema_3_store(path)
    with SQLiteStore(path) as store:
        assert [m["content"] for m in store.messages("main")] == ["m0", "m1", "m2", "m3"]
        assert store.integrity_check() == []
        saved = store.commit(
            StepWrite(
                task_id=task_id,
                messages=[("child", 2, message(2))],
                checkpoint=make_checkpoint(task_id, "child"),
            )
        )
        assert saved is not None and saved.sequence == 0
        assert len(store.messages("child")) == 3
        assert store.integrity_check() == []
    raw = sqlite3.connect(path)
    first_seqs = [row[0] for row in raw.execute("SELECT first_seq FROM steps ORDER BY key")]
    assert first_seqs == [0, 0, 2, 1, 3, 2]
    columns = {row[1] for row in raw.execute("PRAGMA table_info(sessions)")}
    assert "next_seq" not in columns
    version = raw.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    assert version == (str(STORE_SCHEMA_VERSION),)
    raw.close()


def test_a_savepoint_rolled_back_alone_or_with_its_transaction_leaves_no_tail_behind(
    tmp_path: Path,
) -> None:
    with SQLiteStore(tmp_path / "state.db") as store:
        task_id = _task_with_steps(store, 1)
        with store.transaction() as outer:
            store.commit(_step(task_id, "a", 1), tx=outer)
            with pytest.raises(RuntimeError), store.transaction(outer) as inner:
                store.commit(_step(task_id, "a", 2), tx=inner)
                raise RuntimeError("this part only")
            store.commit(_step(task_id, "a", 2), tx=outer)  # the savepoint's step is gone
        with pytest.raises(RuntimeError), store.transaction() as outer:
            with store.transaction(outer) as inner:
                store.commit(_step(task_id, "a", 3), tx=inner)
            raise RuntimeError("the whole of it")
        saved = store.commit(_step(task_id, "a", 3))  # neither part of it stayed
        assert saved is not None and saved.sequence == 3
        assert store.messages("a") == [message(i) for i in range(4)]
        assert [c.sequence for c in store.checkpoints(task_id)] == [0, 1, 2, 3]
        assert store.integrity_check() == []


def test_after_a_rollback_a_step_without_messages_follows_the_last_stored_one(
    tmp_path: Path,
) -> None:
    # No message seq to check it against: the step must not start from the rolled-back row.
    with SQLiteStore(tmp_path / "state.db") as store:
        task_id = _task_with_steps(store, 1)
        with pytest.raises(RuntimeError), store.transaction() as outer:
            with store.transaction(outer) as inner:
                store.commit(_step(task_id, "a", 1), tx=inner)
            raise RuntimeError("rolled back")
        bare = StepWrite(task_id=task_id, checkpoint=make_checkpoint(task_id, "a"))
        saved = store.commit(bare)
        assert saved is not None and saved.sequence == 1
        assert [c.sequence for c in store.checkpoints(task_id)] == [0, 1]
        assert store.integrity_check() == []


def _statements(store: SQLiteStore) -> list[str]:
    """Every statement ``store`` runs from now on, as SQLite traces them."""
    seen: list[str] = []
    store._db._connection.set_trace_callback(seen.append)  # type: ignore[union-attr]
    return seen


def test_a_new_sessions_first_step_on_a_task_this_store_created_reads_nothing(
    tmp_path: Path,
) -> None:
    with SQLiteStore(tmp_path / "state.db") as store:
        task = make_task()
        store.create_task(task)
        seen = _statements(store)
        write_steps(store, make_session(task.id, "a"), 2)
        assert not [statement for statement in seen if statement.startswith("SELECT")]
        assert store.messages("a") == [message(0), message(1)]
        assert store.integrity_check() == []


def test_a_new_sessions_first_step_that_leaves_a_gap_is_refused_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    with SQLiteStore(tmp_path / "state.db") as store:
        task = make_task()
        store.create_task(task)
        with pytest.raises(StoreError, match="session a"):
            write_steps(store, make_session(task.id, "a"), 1, start=1)
        assert store.messages("a") == []
        write_steps(store, make_session(task.id, "a"), 1)  # the kept tail still serves
        assert store.messages("a") == [message(0)]
        assert store.integrity_check() == []


def test_another_tasks_session_riding_in_a_step_is_still_refused(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "state.db") as store:
        first, second = make_task(), make_task()
        store.create_task(first)
        store.create_task(second)
        write_steps(store, make_session(first.id, "a"), 1)
        stolen = make_session(second.id, "a")  # the id of the first task's session
        with pytest.raises(StoreError, match="belongs to another task"):
            write_steps(store, stolen, 1)
        assert store.get_session("a").task_id == first.id
        assert [c.sequence for c in store.checkpoints(second.id)] == []
        assert store.integrity_check() == []


def test_a_step_with_its_sessions_record_runs_no_transaction_of_its_own(
    tmp_path: Path,
) -> None:
    """The record and the row go in one INSERT into ``session_steps``, whose trigger writes
    both, instead of a BEGIN, two statements and a COMMIT."""
    with SQLiteStore(tmp_path / "state.db") as store:
        task = make_task()
        store.create_task(task)
        seen = _statements(store)
        write_steps(store, make_session(task.id, "a", status="active"), 3)
        assert seen
        assert {statement.split(" (")[0] for statement in seen} == {"INSERT INTO session_steps"}
        assert store.get_session("a").status == "active"
        assert store.messages("a") == [message(i) for i in range(3)]
        assert [c.sequence for c in store.checkpoints(task.id)] == [0, 1, 2]
        assert store.integrity_check() == []


def test_a_session_step_refused_after_its_record_was_upserted_leaves_the_record_as_it_was(
    tmp_path: Path,
) -> None:
    """The trigger upserts the record before it appends the row; when the row cannot go (its
    key is taken: another writer appended), the record's change goes with it."""
    path = tmp_path / "state.db"
    with SQLiteStore(path) as first, SQLiteStore(path) as second:
        task = make_task()
        first.create_task(task)  # first keeps a whole tail
        write_steps(second, make_session(task.id, "b", status="active"), 1)
        finished = make_session(task.id, "b", status="completed")
        with pytest.raises(StoreError, match="message 0 of session b is already stored"):
            write_steps(first, finished, 1)  # first's tail has not seen b's message 0
        assert first.get_session("b").status == "active"
        assert first.messages("b") == [message(0)]
        write_steps(first, finished, 1, start=1)  # the tail read from the log serves
        assert first.get_session("b").status == "completed"
        assert first.integrity_check() == []


def test_a_schema_4_store_takes_session_steps_once_upgraded(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    empty_store_of_schema(path, 4).close()
    with SQLiteStore(path) as store:
        task = make_task()
        store.create_task(task)
        write_steps(store, make_session(task.id, "a"), 2)
        assert store.messages("a") == [message(0), message(1)]
        assert store.integrity_check() == []
    raw = sqlite3.connect(path)
    version = raw.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    assert version == ("5",) and STORE_SCHEMA_VERSION == 5
    kinds = dict(
        raw.execute("SELECT name, type FROM sqlite_master WHERE type IN ('view', 'trigger')")
    )
    assert kinds == {"session_steps": "view", "session_steps_insert": "trigger"}
    raw.close()


@pytest.mark.parametrize(
    "dropped", ["DROP VIEW session_steps", "DROP TRIGGER session_steps_insert"]
)
def test_a_store_whose_session_steps_view_or_trigger_was_dropped_gets_it_back_on_opening(
    tmp_path: Path, dropped: str
) -> None:
    path = tmp_path / "state.db"
    with SQLiteStore(path) as store:
        task = make_task()
        store.create_task(task)
        write_steps(store, make_session(task.id, "a"), 1)
    raw = sqlite3.connect(path)
    raw.execute(dropped)
    raw.commit()
    raw.close()
    with SQLiteStore(path) as store:
        write_steps(store, make_session(task.id, "a"), 1, start=1)
        assert store.messages("a") == [message(0), message(1)]
        assert store.integrity_check() == []
    raw = sqlite3.connect(path)
    kinds = dict(
        raw.execute("SELECT name, type FROM sqlite_master WHERE type IN ('view', 'trigger')")
    )
    raw.close()
    assert kinds == {"session_steps": "view", "session_steps_insert": "trigger"}


def test_a_session_written_by_another_store_object_is_read_not_assumed_new(
    tmp_path: Path,
) -> None:
    path = tmp_path / "state.db"
    with SQLiteStore(path) as first, SQLiteStore(path) as second:
        task = make_task()
        first.create_task(task)  # first keeps a whole tail
        write_steps(second, make_session(task.id, "b"), 2)
        # first's tail has not seen b: its step clashes on the key, and the log is read
        write_steps(first, make_session(task.id, "b"), 1, start=2)
        assert first.messages("b") == [message(i) for i in range(3)]
        with pytest.raises(StoreError, match="message 0 of session b is already stored"):
            write_steps(first, make_session(task.id, "b"), 1)
        assert first.integrity_check() == []


# -- two writers, any interleaving ------------------------------------------------------------

_WRITES = st.lists(
    st.tuples(
        st.sampled_from((0, 1)),  # which store object writes
        st.sampled_from(("a", "b", "c")),  # whose step
        st.integers(0, 2),  # new messages
        st.integers(-1, 1),  # how far its first seq is off (0: right)
        st.booleans(),  # inside a transaction of the store's own, with a step of session z
        st.booleans(),  # written for another task, under this task's session id
    ),
    max_size=20,
)


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(writes=_WRITES)
def test_two_writers_interleaved_lose_nothing_and_take_no_wrong_step(
    writes: list[tuple[int, str, int, int, bool, bool]],
) -> None:
    """Two store objects on one file (as two processes), each keeping its own tails, write
    steps of the same sessions in any order, alone or grouped, some of them with a first seq
    that is off, some for another task under this task's session ids: each right step lands,
    each wrong one is refused and leaves nothing, and the log reads back exactly the right
    ones."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "state.db"
        with SQLiteStore(path) as first, SQLiteStore(path) as second:
            stores = (first, second)
            task, other = make_task(), make_task()
            first.create_task(task)  # first keeps whole tails, second has none yet
            first.create_task(other)
            stored: dict[str, int] = {"a": 0, "b": 0, "c": 0, "z": 0}
            for name in stored:  # every session is this task's from the start
                first.commit(StepWrite(task_id=task.id, session=make_session(task.id, name)))
            for writer, session, count, off, grouped, stolen in writes:
                store = stores[writer]
                seq = stored[session] + off
                owner = other if stolen else task
                step = StepWrite(
                    task_id=owner.id,
                    session=make_session(owner.id, session, status="completed"),
                    messages=[(session, seq + i, message(seq + i)) for i in range(count)],
                    checkpoint=make_checkpoint(owner.id, session),
                )
                wrong = stolen or (count > 0 and (off != 0 or seq < 0))
                try:
                    if grouped:
                        with store.transaction() as tx:
                            z = stored["z"]
                            store.commit(
                                StepWrite(
                                    task_id=task.id,
                                    session=make_session(task.id, "z"),
                                    messages=[("z", z, message(z))],
                                ),
                                tx=tx,
                            )
                            stored["z"] += 1
                            store.commit(step, tx=tx)
                    else:
                        store.commit(step)
                except StoreError:
                    assert wrong
                    if grouped:
                        stored["z"] -= 1  # the whole transaction rolled back
                    continue
                assert not wrong
                stored[session] += count
            for store in stores:
                for session, count in stored.items():
                    assert store.messages(session) == [message(i) for i in range(count)]
                    assert store.get_session(session).task_id == task.id
                assert store.checkpoints(other.id) == []
                assert store.integrity_check() == []
