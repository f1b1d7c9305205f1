"""SQLiteStore on real files: tasks, steps, messages, checkpoints, ledger, traces, versions."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from store_records import (
    make_checkpoint,
    make_ledger,
    make_session,
    make_task,
    make_trace,
    message,
    write_steps,
)
from subagents.errors import StoreError, StoreVersionError, SubagentsError
from subagents.store import StepWrite, TaskRecord, default_store_path, open_store
from subagents.store.base import TaskLease, TaskOwner
from subagents.store.sqlite import SQLiteStore
from subagents.store.sqlite.schema import STORE_SCHEMA_VERSION


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    opened = SQLiteStore(tmp_path / "state.db")
    yield opened
    opened.close()


def test_a_new_store_is_in_wal_mode_with_foreign_keys(store: SQLiteStore) -> None:
    raw = sqlite3.connect(store.path)
    assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    version = raw.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    assert version == (str(STORE_SCHEMA_VERSION),)
    raw.close()
    assert store.integrity_check() == []


def test_create_get_update_list_tasks(store: SQLiteStore) -> None:
    first = make_task(created_at=datetime(2025, 1, 1, tzinfo=UTC), tags=["critical"])
    second = make_task(created_at=datetime(2025, 1, 2, tzinfo=UTC), status="running")
    store.create_task(first)
    store.create_task(second)
    assert store.get_task(first.id) == first
    assert [task.id for task in store.list_tasks()] == [second.id, first.id]
    assert [task.id for task in store.list_tasks(status="running")] == [second.id]
    assert [task.id for task in store.list_tasks(limit=1)] == [second.id]

    first.status = "completed"
    first.result = "done"
    store.update_task(first)
    assert store.get_task(first.id).result == "done"
    assert [task.id for task in store.list_tasks(status="completed")] == [first.id]


def test_creating_a_task_twice_or_updating_a_missing_one_is_an_error(store: SQLiteStore) -> None:
    task = make_task()
    store.create_task(task)
    with pytest.raises(StoreError, match="already exists"):
        store.create_task(task)
    with pytest.raises(StoreError, match="no task"):
        store.update_task(make_task())


def test_unknown_status_is_refused_with_the_valid_ones(store: SQLiteStore) -> None:
    with pytest.raises(StoreError, match="use one of: pending, running"):
        store.list_tasks(status="done")


def test_get_task_accepts_a_unique_prefix(store: SQLiteStore) -> None:
    one = make_task(id="abcd1111-0000-4000-8000-000000000000")
    two = make_task(id="abcd2222-0000-4000-8000-000000000000")
    store.create_task(one)
    store.create_task(two)
    assert store.get_task("abcd1").id == one.id
    with pytest.raises(StoreError, match="matches several tasks") as ambiguous:
        store.get_task("abcd")
    assert "more characters" in str(ambiguous.value)
    with pytest.raises(StoreError, match="no task 'abc'") as missing:
        store.get_task("abc")  # too short to be a prefix
    assert "subagents tasks list" in str(missing.value)


def test_commit_writes_a_step_atomically_and_numbers_checkpoints(store: SQLiteStore) -> None:
    task = make_task()
    store.create_task(task)
    main = make_session(task.id, "main-session")
    child = make_session(task.id, "child-session", parent_session_id="main-session", depth=1)
    first = write_steps(store, main, 2)
    second = write_steps(store, child, 3)
    third = write_steps(store, main, 1, start=2)
    assert [c.sequence for c in first + second + third] == [0, 1, 2, 3, 4, 5]
    assert [c.sequence for c in store.checkpoints(task.id)] == [0, 1, 2, 3, 4, 5]
    latest, latest_child = (
        store.latest_checkpoint(task.id),
        store.latest_checkpoint(task.id, "child-session"),
    )
    assert latest is not None and latest.sequence == 5
    assert latest_child is not None and latest_child.sequence == 4
    assert store.latest_checkpoint("other-task") is None
    assert store.messages("main-session") == [message(0), message(1), message(2)]
    assert [s.session_id for s in store.sessions(task.id)] == ["main-session", "child-session"]
    assert len(store.traces(task.id)) == 6
    assert store.get_session("child-session").parent_session_id == "main-session"


def test_the_returned_checkpoint_is_a_copy_with_its_sequence(store: SQLiteStore) -> None:
    task = make_task()
    store.create_task(task)
    session = make_session(task.id, "s")
    checkpoint = make_checkpoint(
        task.id,
        "s",
        sequence=42,
        awaiting_human=True,
        question={"tool": "Write", "arguments": {"path": "a"}},
    )
    saved = store.commit(StepWrite(task_id=task.id, session=session, checkpoint=checkpoint))
    assert saved is not None and saved.sequence == 0
    assert checkpoint.sequence == 42  # the caller's record is left alone
    latest = store.latest_checkpoint(task.id)
    assert latest == saved
    assert latest is not None and latest.question == {
        "tool": "Write",
        "arguments": {"path": "a"},
    }


def test_messages_are_append_only_and_contiguous(store: SQLiteStore) -> None:
    task = make_task()
    store.create_task(task)
    session = make_session(task.id, "s")
    write_steps(store, session, 2)
    with pytest.raises(StoreError, match="already stored") as duplicate:
        store.commit(
            StepWrite(task_id=task.id, messages=[("s", 1, {"role": "user", "content": "x"})])
        )
    assert "append-only" in str(duplicate.value)
    with pytest.raises(StoreError, match="gap"):
        store.commit(StepWrite(task_id=task.id, messages=[("s", 3, message(3))]))
    assert store.messages("s") == [message(0), message(1)]


def test_a_failed_step_leaves_nothing_behind(store: SQLiteStore) -> None:
    task = make_task()
    store.create_task(task)
    session = make_session(task.id, "s")
    write_steps(store, session, 1)
    bad = StepWrite(
        task_id=task.id,
        session=session.model_copy(update={"turns": 9}),
        messages=[("s", 1, message(1)), ("s", 5, message(5))],  # the second leaves a gap
        checkpoint=make_checkpoint(task.id, "s"),
        traces=[make_trace(task.id, "s")],
    )
    with pytest.raises(StoreError, match="gap"):
        store.commit(bad)
    assert store.get_session("s").turns == 0
    assert len(store.messages("s")) == 1
    assert len(store.checkpoints(task.id)) == 1
    assert len(store.traces(task.id)) == 1


def test_messages_need_their_session_and_steps_need_their_task(store: SQLiteStore) -> None:
    task = make_task()
    store.create_task(task)
    with pytest.raises(StoreError, match="session that is not stored"):
        store.commit(StepWrite(task_id=task.id, messages=[("nobody", 0, message(0))]))
    with pytest.raises(StoreError, match="no task missing") as missing:
        store.commit(StepWrite(task_id="missing", checkpoint=make_checkpoint("missing", "s")))
    assert "create_task" in str(missing.value)


def test_records_of_another_task_are_refused(store: SQLiteStore) -> None:
    task = make_task()
    store.create_task(task)
    with pytest.raises(StoreError, match="belongs to task other"):
        store.commit(StepWrite(task_id=task.id, traces=[make_trace("other", None)]))


def test_ledger_entries_are_upserted_by_call(store: SQLiteStore) -> None:
    task = make_task()
    store.create_task(task)
    session = make_session(task.id, "s")
    store.commit(
        StepWrite(task_id=task.id, session=session, ledger=[make_ledger(task.id, "s", "c1")])
    )
    store.commit(StepWrite(task_id=task.id, ledger=[make_ledger(task.id, "s", "c2")]))
    done = make_ledger(
        task.id, "s", "c1", status="completed", result="ok", finished_at=datetime.now(UTC)
    )
    store.commit(StepWrite(task_id=task.id, ledger=[done]))
    entries = store.ledger(task.id)
    assert [(e.tool_call_id, e.status) for e in entries] == [("c1", "completed"), ("c2", "started")]
    assert store.ledger(task.id, "s") == entries
    assert store.ledger(task.id, "other") == []


def test_task_and_session_are_upserted_in_the_step(store: SQLiteStore) -> None:
    task = make_task()
    store.create_task(task)
    session = make_session(task.id, "s")
    store.commit(StepWrite(task_id=task.id, session=session))
    session.status = "completed"
    session.turns = 3
    task.status = "completed"
    store.commit(StepWrite(task_id=task.id, session=session, task=task))
    assert store.get_session("s").status == "completed"
    assert store.get_task(task.id).status == "completed"
    assert store.list_tasks(status="completed")[0].id == task.id


def test_delete_task_cascades_to_everything_of_it(store: SQLiteStore) -> None:
    keep, drop = make_task(), make_task()
    store.create_task(keep)
    store.create_task(drop)
    write_steps(store, make_session(keep.id, "keep-s"), 2)
    write_steps(store, make_session(drop.id, "drop-s"), 3)
    store.commit(StepWrite(task_id=drop.id, ledger=[make_ledger(drop.id, "drop-s", "c")]))
    store.delete_task(drop.id)
    store.delete_task(drop.id)  # already gone: not an error
    raw = sqlite3.connect(store.path)
    assert drop.id not in {row[0] for row in raw.execute("SELECT task_id FROM sessions")}
    (kept,) = raw.execute("SELECT no FROM tasks WHERE id = ?", (keep.id,)).fetchone()
    # every step left is the kept task's (a step's key is its task's number << 32 + its own)
    assert {row[0] for row in raw.execute("SELECT DISTINCT key >> 32 FROM steps")} == {kept}
    assert raw.execute("SELECT count(*) FROM steps WHERE session_id = 'drop-s'").fetchone() == (0,)
    raw.close()
    assert len(store.messages("keep-s")) == 2
    with pytest.raises(StoreError):
        store.get_task(drop.id)


def test_transaction_groups_commits_and_rolls_back_together(store: SQLiteStore) -> None:
    task = make_task()
    store.create_task(task)
    session = make_session(task.id, "s")
    with store.transaction():
        write_steps(store, session, 2)
    assert len(store.messages("s")) == 2
    with pytest.raises(RuntimeError), store.transaction():
        write_steps(store, session, 2, start=2)
        raise RuntimeError("crash before the outer commit")
    assert len(store.messages("s")) == 2
    assert len(store.checkpoints(task.id)) == 2


def test_a_failed_step_inside_a_transaction_only_undoes_itself(store: SQLiteStore) -> None:
    task = make_task()
    store.create_task(task)
    session = make_session(task.id, "s")
    with store.transaction():
        write_steps(store, session, 1)
        with pytest.raises(StoreError):
            store.commit(StepWrite(task_id=task.id, messages=[("s", 7, message(7))]))
        write_steps(store, session, 1, start=1)
    assert len(store.messages("s")) == 2


def test_lone_surrogates_and_unicode_survive(store: SQLiteStore) -> None:
    task = make_task(prompt="résumé \udcff naïve")
    store.create_task(task)
    session = make_session(task.id, "s")
    odd = {"role": "tool", "content": "bytes \udc80\udcff and 漢字 and 🙂"}
    store.commit(
        StepWrite(
            task_id=task.id,
            session=session,
            messages=[("s", 0, odd)],
            traces=[make_trace(task.id, "s", data={"raw": "\udc80"})],
        )
    )
    assert store.messages("s") == [odd]
    assert store.get_task(task.id).prompt == "résumé \udcff naïve"
    assert store.traces(task.id)[0].data == {"raw": "\udc80"}


def test_values_that_are_not_json_are_refused_clearly(store: SQLiteStore) -> None:
    task = make_task()
    store.create_task(task)
    session = make_session(task.id, "s")
    with pytest.raises(StoreError, match="cannot store message 0 of session s") as error:
        store.commit(
            StepWrite(task_id=task.id, session=session, messages=[("s", 0, {"content": object()})])
        )
    assert "message_to_dict" in str(error.value)


def test_naive_datetimes_are_taken_as_utc() -> None:
    task = make_task(created_at=datetime(2025, 3, 1, 12, 0))
    assert task.created_at == datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def test_a_newer_database_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    SQLiteStore(path).close()
    raw = sqlite3.connect(path)
    raw.execute("UPDATE meta SET value = '7' WHERE key = 'schema_version'")
    raw.commit()
    raw.close()
    with pytest.raises(StoreVersionError) as error:
        SQLiteStore(path)
    text = str(error.value)
    assert "written by a newer subagents (schema 7" in text
    assert "pip install -U subagents" in text


@pytest.mark.parametrize("extra_field", [False, True])
def test_a_record_from_a_newer_subagents_is_refused(tmp_path: Path, extra_field: bool) -> None:
    store = SQLiteStore(tmp_path / "state.db")
    task = make_task()
    store.create_task(task)
    data = task.model_dump(mode="json")
    data["schema_version"] = 2
    if extra_field:
        data["priority"] = "high"
    raw = sqlite3.connect(store.path)
    raw.execute("UPDATE tasks SET data = ? WHERE id = ?", (json.dumps(data), task.id))
    raw.commit()
    raw.close()
    with pytest.raises(StoreVersionError, match="schema 2") as error:
        store.get_task(task.id)
    assert "pip install -U subagents" in str(error.value)
    with pytest.raises(StoreVersionError):
        store.list_tasks()
    store.close()


def test_an_empty_file_becomes_a_store_and_a_foreign_database_is_refused(tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    empty.touch()
    with SQLiteStore(empty) as store:
        store.create_task(make_task())
    foreign = tmp_path / "other.db"
    raw = sqlite3.connect(foreign)
    raw.execute("CREATE TABLE invoices (id INTEGER)")
    raw.commit()
    raw.close()
    with pytest.raises(StoreError, match="not a subagents store") as error:
        SQLiteStore(foreign)
    assert "invoices" in str(error.value)


def test_a_closed_store_says_so(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "state.db")
    store.close()
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.list_tasks()


def test_an_unwritable_location_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(StoreError, match="cannot create the directory") as error:
        SQLiteStore(blocker / "sub" / "state.db")
    assert isinstance(error.value, SubagentsError)


def test_default_path_is_the_project_then_the_user_home(
    tmp_path: Path, isolated_home: Path
) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "src" / "pkg").mkdir(parents=True)
    assert default_store_path(repo / "src" / "pkg") == repo / ".subagents" / "state.db"
    nested = repo / "src" / ".subagents"
    nested.mkdir()
    assert default_store_path(repo / "src" / "pkg") == nested / "state.db"
    loose = tmp_path / "loose"
    loose.mkdir()
    assert default_store_path(loose) == isolated_home / ".subagents" / "state.db"
    with open_store(cwd=repo) as store:
        assert store.location == str(repo / ".subagents" / "state.db")
        assert Path(store.location).exists()


def test_meta_and_periodic_claims(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    first, second = SQLiteStore(path), SQLiteStore(path)
    first.set_meta("note", "hello")
    assert second.get_meta("note") == "hello"
    assert second.get_meta("absent") is None
    with pytest.raises(StoreError, match="managed by the store"):
        first.set_meta("schema_version", "9")
    now = datetime(2025, 6, 1, 8, 0, tzinfo=UTC)
    day = timedelta(days=1)
    assert first.claim_periodic("job", every=day, now=now)
    assert not second.claim_periodic("job", every=day, now=now + timedelta(hours=23))
    assert second.claim_periodic("job", every=day, now=now + day)
    assert not first.claim_periodic("job", every=day, now=now + day)
    # a clock set back does not block the job forever
    assert first.claim_periodic("job", every=day, now=now - timedelta(days=30))
    first.close()
    second.close()


def test_threads_share_one_store_safely(store: SQLiteStore) -> None:
    task = make_task()
    store.create_task(task)
    errors: list[BaseException] = []

    def run(index: int) -> None:
        try:
            write_steps(store, make_session(task.id, f"thread-{index}"), 25)
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=run, args=(index,)) for index in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert [c.sequence for c in store.checkpoints(task.id)] == list(range(200))
    for index in range(8):
        assert store.messages(f"thread-{index}") == [message(seq) for seq in range(25)]
    assert store.integrity_check() == []


def test_integrity_check_reports_broken_invariants(store: SQLiteStore) -> None:
    task = make_task()
    store.create_task(task)
    write_steps(store, make_session(task.id, "s"), 3)
    write_steps(store, make_session(task.id, "t"), 3)
    raw = sqlite3.connect(store.path)
    raw.execute(  # session s: its second row lost
        "DELETE FROM steps WHERE session_id = 's' AND first_seq = 1"
    )
    raw.execute("UPDATE steps SET first_seq = 4 WHERE session_id = 't' AND first_seq = 2")
    raw.execute("DELETE FROM sessions WHERE session_id = 't'")  # its rows stay behind
    raw.execute(
        "UPDATE steps SET checkpoint = json_set(checkpoint, '$.sequence', 10) "
        "WHERE json_extract(checkpoint, '$.sequence') = 0"
    )
    raw.execute("INSERT INTO steps (key, next_checkpoint) VALUES (99 << 32, 0)")
    raw.commit()
    raw.close()
    problems = store.integrity_check()
    assert any(
        "session s: the messages of step 2 start at seq 2, 1 expected" in p for p in problems
    )
    assert any(
        "session t: the messages of step 5 start at seq 4, 2 expected" in p for p in problems
    )
    assert any("messages of session t, which is not a stored session" in p for p in problems)
    assert any("checkpoint sequence 2 follows 10" in p for p in problems)
    assert any("no task numbered 99 (left behind)" in p for p in problems)


def test_the_store_satisfies_the_protocol(store: SQLiteStore) -> None:
    from subagents.store import Store

    protocol: Store = store
    assert protocol.location == str(store.path)
    assert isinstance(make_task(), TaskRecord)


def test_a_task_has_one_owner_at_a_time(tmp_path: Path) -> None:
    import os

    me = TaskOwner.this_process()
    other = TaskOwner(me.host, os.getpid(), "another-runtime")  # alive: this very process
    gone = TaskOwner(me.host, _dead_pid(), "crashed")
    far = TaskOwner("some-other-host", 1, "remote")
    with SQLiteStore(tmp_path / "state.db") as store:
        assert store.claim_task("t1", me) is None
        assert store.claim_task("t1", me) is None  # claiming again is fine
        assert _holder(store.claim_task("t1", other)) == me  # a live owner keeps it
        assert store.claim_task("t1", other, force=True) is None
        store.release_task("t1", me)  # not the owner any more: nothing happens
        assert _holder(store.claim_task("t1", me)) == other
        store.release_task("t1", other)
        assert store.claim_task("t1", me) is None
        assert store.claim_task("t2", gone) is None
        assert store.claim_task("t2", me) is None  # its owner died: taken over at once
        assert store.claim_task("t3", far) is None
        assert _holder(store.claim_task("t3", me)) == far  # not expired, cannot be checked
        assert store.claim_task("t3", me, force=True) is None


def _holder(lease: TaskLease | None) -> TaskOwner | None:
    return None if lease is None else lease.owner


def _dead_pid() -> int:
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid
