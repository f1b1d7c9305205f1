"""Task ownership by lease: a live lease keeps other owners out and says until when, an expired
one is taken over, renewal extends it, and the runtime's keeper renews it while a run goes on.
Time is injected everywhere; nothing sleeps."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from subagents.errors import TaskLeasedError
from subagents.store import LeaseKeeper, SQLiteStore, TaskLease, TaskOwner
from subagents.store.lease import lease_data, lease_refusal

T0 = datetime(2030, 5, 1, 12, 0, tzinfo=UTC)
TTL = timedelta(seconds=60)
FAR = TaskOwner("a-worker-elsewhere", 4242, "far")  # on another host: cannot be checked


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    with SQLiteStore(tmp_path / "state.db") as opened:
        yield opened


def test_a_live_lease_refuses_another_owner_and_says_until_when(store: SQLiteStore) -> None:
    me = TaskOwner.this_process()
    assert store.claim_task("task-1234abcd", FAR, ttl=TTL, now=T0) is None

    holder = store.claim_task("task-1234abcd", me, ttl=TTL, now=T0 + timedelta(seconds=45))

    assert holder is not None and holder.owner == FAR and holder.expires_at == T0 + TTL
    error = lease_refusal(holder, now=T0 + timedelta(seconds=45))
    assert isinstance(error, TaskLeasedError)
    assert "being run by process 4242 on a-worker-elsewhere" in error.message
    assert "(15 s from now)" in error.message
    assert error.hint is not None and "subagents resume task-123 --force" in error.hint
    assert store.task_lease("task-1234abcd") == holder  # the refused claim changed nothing


def test_an_expired_lease_is_taken_over(store: SQLiteStore) -> None:
    me = TaskOwner.this_process()
    store.claim_task("t", FAR, ttl=TTL, now=T0)

    assert store.claim_task("t", me, ttl=TTL, now=T0 + TTL) is None

    lease = store.task_lease("t")
    assert lease is not None and lease.owner == me and lease.expires_at == T0 + 2 * TTL
    with pytest.raises(TaskLeasedError, match="taken over by process"):
        store.renew_lease("t", FAR, ttl=TTL, now=T0 + TTL + timedelta(seconds=1))


def test_renewal_extends_the_lease_past_its_first_expiry(store: SQLiteStore) -> None:
    me = TaskOwner.this_process()
    store.claim_task("t", FAR, ttl=TTL, now=T0)
    renewed = store.renew_lease("t", FAR, ttl=TTL, now=T0 + timedelta(seconds=50))
    assert renewed.expires_at == T0 + timedelta(seconds=110)

    holder = store.claim_task("t", me, ttl=TTL, now=T0 + timedelta(seconds=90))

    assert holder is not None and holder.owner == FAR  # without the renewal it had expired


def test_a_lease_of_a_process_gone_from_this_host_ends_at_once(store: SQLiteStore) -> None:
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    me = TaskOwner.this_process()
    gone = TaskOwner(me.host, child.pid, "crashed")
    store.claim_task("t", gone, ttl=TTL, now=T0)

    assert store.claim_task("t", me, ttl=TTL, now=T0 + timedelta(seconds=1)) is None


def test_force_takes_a_live_lease_and_release_by_a_former_owner_does_nothing(
    store: SQLiteStore,
) -> None:
    me = TaskOwner.this_process()
    store.claim_task("t", FAR, ttl=TTL, now=T0)
    assert store.claim_task("t", me, ttl=TTL, now=T0, force=True) is None

    store.release_task("t", FAR)
    lease = store.task_lease("t")
    assert lease is not None and lease.owner == me
    store.release_task("t", me)
    assert store.task_lease("t") is None


@pytest.mark.parametrize(
    "data",
    [
        "not json",
        '{"host": "h"}',
        '["a", "list"]',
        '{"host": "a-worker-elsewhere", "pid": 4242, "token": "near"}',
    ],
)
def test_releasing_a_lease_that_names_someone_else_or_nobody_leaves_it(
    store: SQLiteStore, data: str
) -> None:
    """A release only removes the releasing owner's own lease; a lease whose data cannot be
    read, or reads as another owner, stays (and raises nothing)."""
    store.claim_task("t", FAR, ttl=TTL, now=T0)
    raw = store._db._connection
    assert raw is not None
    raw.execute("UPDATE leases SET data = ? WHERE task_id = 't'", (data,))
    store.release_task("t", FAR)
    assert raw.execute("SELECT data FROM leases WHERE task_id = 't'").fetchone() == (data,)
    raw.execute("UPDATE leases SET data = ? WHERE task_id = 't'", (lease_data(FAR, T0 + TTL),))
    store.release_task("t", FAR)
    assert store.task_lease("t") is None


def test_claiming_a_free_task_or_ones_own_and_releasing_it_are_one_statement_each(
    store: SQLiteStore,
) -> None:
    """The claims of every run (a task nobody holds, or the runtime's own) and its release
    need no transaction of a read and a write."""
    raw = store._db._connection
    assert raw is not None
    seen: list[str] = []
    raw.set_trace_callback(seen.append)
    assert store.claim_task("t", FAR, ttl=TTL, now=T0) is None
    assert store.claim_task("t", FAR, ttl=TTL, now=T0 + TTL) is None  # its own: renewed
    store.release_task("t", FAR)
    assert [statement.split()[0] for statement in seen] == ["INSERT", "INSERT", "DELETE"]
    assert store.task_lease("t") is None
    store.claim_task("t", FAR, ttl=TTL, now=T0)
    store.claim_task("t", FAR, ttl=TTL, now=T0 + TTL)
    lease = store.task_lease("t")
    assert lease is not None and lease.expires_at == T0 + 2 * TTL


def test_two_threads_racing_for_a_free_task_never_both_win(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    SQLiteStore(path).close()
    owners = [TaskOwner("host-a", 1, "a"), TaskOwner("host-b", 2, "b")]
    wins: list[TaskOwner] = []
    start = threading.Barrier(2)

    def race(owner: TaskOwner) -> None:
        with SQLiteStore(path) as own:  # a connection each, as two processes have
            start.wait()
            if own.claim_task("t", owner, ttl=TTL, now=T0) is None:
                wins.append(owner)

    threads = [threading.Thread(target=race, args=(owner,)) for owner in owners]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(wins) == 1


def test_deleting_a_task_removes_its_lease(store: SQLiteStore) -> None:
    from store_records import make_task

    task = make_task()
    store.create_task(task)
    store.claim_task(task.id, FAR, ttl=TTL, now=T0)
    store.delete_task(task.id)
    assert store.task_lease(task.id) is None


async def test_the_keeper_renews_until_stopped_and_gives_up_when_taken_over(
    store: SQLiteStore,
) -> None:
    me = TaskOwner.this_process()
    store.claim_task("t", me, ttl=TTL, now=T0)
    times = iter(T0 + timedelta(seconds=20 * step) for step in range(1, 100))
    third = threading.Event()
    calls = 0

    def clock() -> datetime:
        nonlocal calls
        calls += 1
        if calls == 3:
            third.set()
        return next(times)

    keeper = LeaseKeeper(store, "t", me, ttl=TTL, every=0, clock=clock)
    keeper.start()
    assert await asyncio.to_thread(third.wait, 30)
    await keeper.stop()

    lease = store.task_lease("t")
    assert keeper.renewals >= 3 and keeper.lost is None
    assert lease is not None and lease.expires_at == T0 + timedelta(seconds=20 * calls) + TTL
    stopped_at = lease
    assert store.task_lease("t") == stopped_at  # no renewal lands after stop()

    store.claim_task("t", FAR, ttl=TTL, now=T0 + timedelta(hours=1))  # expired: taken over
    lost = asyncio.Event()
    taken = LeaseKeeper(
        store,
        "t",
        me,
        ttl=TTL,
        every=0,
        clock=lambda: T0 + timedelta(hours=1),
        on_lost=lambda error: lost.set(),
    )
    taken.start()
    await asyncio.wait_for(lost.wait(), 30)
    assert taken.lost is not None and "taken over" in taken.lost.message
    await taken.stop()
    lease = store.task_lease("t")
    assert lease is not None and lease.owner == FAR


async def test_a_run_holds_its_task_by_lease_and_gives_it_up_at_the_end(tmp_path: Path) -> None:
    from subagents.models.base import ModelRequest, ModelResponse
    from subagents.runtime.runtime import Runtime
    from subagents.testing import FunctionModel, text_response, tool_call_response
    from subagents.tools.decorator import tool

    store = SQLiteStore(tmp_path / "state.db")
    seen: list[TaskLease | None] = []

    @tool(read_only=True)
    async def Peek() -> str:
        """Look at who holds the task."""
        [task] = store.list_tasks()
        seen.append(store.task_lease(task.id))
        return "looked"

    def turn(request: ModelRequest) -> ModelResponse:
        return text_response("done") if seen else tool_call_response("Peek", {})

    runtime = Runtime(cwd=tmp_path, model=FunctionModel(turn), tools=[Peek], store=store)
    result = await runtime.run("look")

    [lease] = seen
    me = TaskOwner.this_process()
    assert lease is not None and (lease.owner.host, lease.owner.pid) == (me.host, me.pid)
    assert lease.expires_at is not None and lease.is_live(lease.expires_at - timedelta(seconds=1))
    assert result.task_id is not None
    assert store.task_lease(result.task_id) is None  # released once the outcome was written
    store.close()
