"""The Store protocol, as both stores keep it: SQLite (a real file) and PostgreSQL (a real
server on 127.0.0.1, a schema of its own per test; skipped, saying why, where none runs).
Tasks, steps and their checks, the step log read back (hypothesis), transactions and
savepoints, whole-task bundles, metadata, leases, and a real run on each."""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from postgres_support import POSTGRES_URL, postgres_store
from store_records import (
    make_checkpoint,
    make_ledger,
    make_session,
    make_task,
    make_trace,
    message,
    write_steps,
)
from subagents.errors import StoreError, TaskLeasedError
from subagents.store import StepWrite
from subagents.store.base import Store, TaskOwner
from subagents.store.sqlite import SQLiteStore

KINDS = ["sqlite", "postgres"]


@contextmanager
def fresh_store(kind: str) -> Iterator[Store]:
    if kind == "postgres":
        with postgres_store() as store:
            yield store
        return
    with tempfile.TemporaryDirectory() as folder, SQLiteStore(Path(folder) / "s.db") as store:
        yield store


@pytest.fixture(params=KINDS)
def store(request: pytest.FixtureRequest) -> Iterator[Store]:
    with fresh_store(request.param) as opened:
        yield opened


def test_tasks_are_created_found_by_prefix_updated_and_listed(store: Store) -> None:
    first, second = make_task(), make_task(description="second")
    store.create_task(first)
    store.create_task(second)
    with pytest.raises(StoreError, match="already exists"):
        store.create_task(first)
    assert store.get_task(second.id[:8]).description == "second"
    second.status = "completed"
    store.update_task(second)
    assert [t.id for t in store.list_tasks(status="completed")] == [second.id]
    assert {t.id for t in store.scan_tasks().tasks} == {first.id, second.id}
    with pytest.raises(StoreError, match="unknown task status"):
        store.list_tasks(status="nope")
    with pytest.raises(StoreError, match="no task"):
        store.update_task(make_task())


def test_steps_read_back_with_contiguous_sequences_and_checked_seqs(store: Store) -> None:
    task = make_task()
    store.create_task(task)
    main = write_steps(store, make_session(task.id, "main"), 3)
    child = write_steps(store, make_session(task.id, "child"), 2)
    assert [c.sequence for c in main + child] == [0, 1, 2, 3, 4]
    assert [c.sequence for c in store.checkpoints(task.id)] == [0, 1, 2, 3, 4]
    latest = store.latest_checkpoint(task.id, "main")
    assert latest is not None and latest.sequence == 2
    assert store.messages("main") == [message(i) for i in range(3)]
    assert [s.session_id for s in store.sessions(task.id)] == ["main", "child"]
    assert [t.message for t in store.traces(task.id)] == [
        "step 0", "step 1", "step 2", "step 0", "step 1"
    ]  # fmt: skip
    with pytest.raises(StoreError, match="already stored"):
        store.commit(StepWrite(task_id=task.id, messages=[("main", 1, message(1))]))
    with pytest.raises(StoreError, match="gap"):
        store.commit(StepWrite(task_id=task.id, messages=[("main", 9, message(9))]))
    with pytest.raises(StoreError, match="not stored"):
        store.commit(StepWrite(task_id=task.id, messages=[("ghost", 0, message(0))]))
    with pytest.raises(StoreError, match="no task"):
        store.commit(StepWrite(task_id="0" * 8, traces=[make_trace("0" * 8, None)]))
    assert store.messages("main") == [message(i) for i in range(3)]  # nothing of those landed


def test_the_ledger_reads_as_upserted(store: Store) -> None:
    task = make_task()
    store.create_task(task)
    store.commit(StepWrite(task_id=task.id, session=make_session(task.id, "s")))
    for call, status in [("a", "started"), ("b", "started"), ("a", "completed")]:
        store.commit(
            StepWrite(task_id=task.id, ledger=[make_ledger(task.id, "s", call, status=status)])
        )
    assert [(e.tool_call_id, e.status) for e in store.ledger(task.id)] == [
        ("a", "completed"),
        ("b", "started"),
    ]
    assert [e.tool_call_id for e in store.ledger(task.id, "s")] == ["a", "b"]


def test_a_transaction_lands_whole_or_not_and_a_savepoint_rolls_back_alone(store: Store) -> None:
    task = make_task()
    store.create_task(task)
    session = make_session(task.id, "s")
    with store.transaction() as tx:
        store.commit(
            StepWrite(task_id=task.id, session=session, messages=[("s", 0, message(0))]), tx=tx
        )
        with pytest.raises(StoreError, match="gap"):
            store.commit(StepWrite(task_id=task.id, messages=[("s", 5, message(5))]), tx=tx)
        store.commit(StepWrite(task_id=task.id, messages=[("s", 1, message(1))]), tx=tx)
    assert store.messages("s") == [message(0), message(1)]
    with pytest.raises(RuntimeError), store.transaction():  # writes join it without tx=
        store.commit(StepWrite(task_id=task.id, messages=[("s", 2, message(2))]))
        store.update_task(task.model_copy(update={"status": "failed"}))
        raise RuntimeError("the caller fails: nothing of the block lands")
    assert store.messages("s") == [message(0), message(1)]
    assert store.get_task(task.id).status == task.status


def test_a_task_moves_whole_between_stores_and_is_deleted_whole(store: Store) -> None:
    task = make_task()
    store.create_task(task)
    write_steps(store, make_session(task.id, "s"), 3)
    store.commit(StepWrite(task_id=task.id, ledger=[make_ledger(task.id, "s", "c")]))
    bundle = store.load_bundle(task.id)
    with fresh_store("sqlite") as other:
        other.restore_bundle(bundle)
        assert other.load_bundle(task.id) == bundle
    with pytest.raises(StoreError, match="already exists"):
        store.restore_bundle(bundle)
    store.restore_bundle(bundle, replace=True)
    assert store.load_bundle(task.id) == bundle
    write_steps(store, make_session(task.id, "s"), 1, start=3)  # it goes on where it was
    assert [c.sequence for c in store.checkpoints(task.id)] == [0, 1, 2, 3]
    store.delete_task(task.id)
    store.delete_task(task.id)  # gone already: not an error
    assert store.checkpoints(task.id) == [] and store.messages("s") == []
    assert store.integrity_check() == []


def test_metadata_and_a_periodic_job_claimed_once_per_period(store: Store) -> None:
    store.set_meta("note", "hello")
    assert store.get_meta("note") == "hello" and store.get_meta("none") is None
    now = datetime(2026, 11, 25, 12, tzinfo=UTC)
    assert store.claim_periodic("cleanup", every=timedelta(days=1), now=now)
    assert not store.claim_periodic(
        "cleanup", every=timedelta(days=1), now=now + timedelta(hours=1)
    )
    assert store.claim_periodic("cleanup", every=timedelta(days=1), now=now + timedelta(days=2))


def test_leases_keep_a_task_to_one_owner(store: Store) -> None:
    now = datetime(2026, 11, 25, 12, tzinfo=UTC)
    first = TaskOwner("other-host", 1, "first")
    second = TaskOwner("other-host", 2, "second")
    assert store.claim_task("t1", first, now=now) is None
    holder = store.claim_task("t1", second, now=now)
    assert holder is not None and holder.owner == first
    with pytest.raises(TaskLeasedError):
        store.renew_lease("t1", second, now=now)
    assert store.claim_task("t1", second, now=now + timedelta(minutes=3)) is None  # expired
    store.release_task("t1", first)  # not the holder any more: nothing happens
    lease = store.task_lease("t1")
    assert lease is not None and lease.owner == second
    store.release_task("t1", second)
    assert store.task_lease("t1") is None


def test_many_threads_claim_one_task_and_exactly_one_wins(store: Store) -> None:
    winners: list[int] = []
    start = threading.Barrier(8)

    def claim(index: int) -> None:
        start.wait()
        if store.claim_task("contested", TaskOwner("other-host", index, f"o{index}")) is None:
            winners.append(index)

    threads = [threading.Thread(target=claim, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(winners) == 1


_STEPS = st.lists(
    st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 2), st.booleans(), st.integers(0, 1)),
    max_size=12,
)


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=_STEPS)
def test_any_interleaving_reads_back_the_same_on_both(
    kind: str, steps: list[tuple[str, int, bool, int]]
) -> None:
    with fresh_store(kind) as store:
        task = make_task()
        store.create_task(task)
        written: dict[str, list[dict[str, Any]]] = {"a": [], "b": []}
        positions: list[str] = []
        for number, (session, new, checkpointed, traces) in enumerate(steps):
            first = len(written[session])
            added = [message(first + i) for i in range(new)]
            store.commit(
                StepWrite(
                    task_id=task.id,
                    session=make_session(task.id, session) if first == 0 else None,
                    messages=[(session, first + i, value) for i, value in enumerate(added)],
                    checkpoint=make_checkpoint(task.id, session, position=f"s{number}")
                    if checkpointed
                    else None,
                    traces=[make_trace(task.id, session, message=str(number))] * traces,
                )
            )
            written[session] += added
            positions += [f"s{number}"] if checkpointed else []
        for session, values in written.items():
            assert store.messages(session) == values
        assert [c.position for c in store.checkpoints(task.id)] == positions
        assert [c.sequence for c in store.checkpoints(task.id)] == list(range(len(positions)))


def test_a_real_run_with_a_subagent_on_each_store(store: Store, tmp_path: Path) -> None:
    from subagents.runtime.runtime import Runtime
    from subagents.testing import ScriptedModel, tool_call_response

    agents = tmp_path / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "lister.md").write_text(
        "---\nname: lister\ndescription: Lists files.\ntools: LS\n---\nList.\n"
    )
    child = ScriptedModel([tool_call_response("LS", {"path": "."}), "listed"])
    task = {"description": "list", "prompt": "list the files", "subagent_type": "lister"}
    main = ScriptedModel([tool_call_response("Task", task), "done"])
    runtime = Runtime(
        cwd=tmp_path, model=main, agent_models={"lister": child}, store=store, mcp_servers={}
    )
    result = runtime.run_sync("list with the lister")
    assert result.status == "completed" and result.task_id is not None
    stored = store.get_task(result.task_id)
    assert stored.status == "completed" and store.task_lease(result.task_id) is None
    sessions = store.sessions(result.task_id)
    assert [s.agent_name for s in sessions] == ["main", "lister"]
    checkpoints = store.checkpoints(result.task_id)
    assert [c.sequence for c in checkpoints] == list(range(len(checkpoints)))
    # main: its Task call, the call's result, its answer; the lister (LS is read-only, so no
    # commit before it runs): the call with its result, its answer. Each opening prompt rides
    # with its session's first checkpoint.
    assert [c.position for c in checkpoints] == [
        "after_model",
        "after_tools",
        "finished",
        "after_tools",
        "finished",
    ]
    assert store.integrity_check() == []


def test_postgres_writes_join_a_transaction_their_caller_owns() -> None:
    """As a workflow engine's step record does: the caller's transaction carries the step,
    lands with its own bookkeeping or not at all."""
    import psycopg

    from postgres_support import postgres_url
    from subagents.store.postgres import PostgresStore

    with postgres_url() as url, PostgresStore(url) as store:
        task = make_task()
        store.create_task(task)
        session = make_session(task.id, "s")
        for outcome in ("rollback", "commit"):
            with psycopg.connect(url) as caller:  # not autocommit: a statement begins one
                caller.execute("SELECT 1")
                with store.join_transaction(caller) as tx:
                    store.commit(
                        StepWrite(
                            task_id=task.id,
                            session=session,
                            messages=[("s", 0, message(0))],
                            checkpoint=make_checkpoint(task.id, "s"),
                        ),
                        tx=tx,
                    )
                    with pytest.raises(StoreError, match="gap"):  # its savepoint alone
                        store.commit(StepWrite(task_id=task.id, messages=[("s", 7, message(7))]))
                caller.execute(
                    "INSERT INTO meta (key, value) VALUES ('engine.step', %s) "
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (outcome,),
                )
                if outcome == "rollback":
                    caller.rollback()
                    assert store.messages("s") == [] and store.get_meta("engine.step") is None
                else:
                    caller.commit()
        assert store.messages("s") == [message(0)]
        assert [c.sequence for c in store.checkpoints(task.id)] == [0]
        assert store.get_meta("engine.step") == "commit"
        with (
            psycopg.connect(url, autocommit=True) as idle,
            pytest.raises(StoreError, match="no open transaction"),
            store.join_transaction(idle),
        ):
            pass
        with psycopg.connect(POSTGRES_URL) as elsewhere:  # the database's default schema
            elsewhere.execute("SELECT 1")
            with (
                pytest.raises(StoreError, match="not on this store's"),
                store.join_transaction(elsewhere),
            ):
                pass
