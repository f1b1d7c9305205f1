"""Keeping a task's lease while it runs, and the words for a lease that is in the way.

A runner claims its task (:meth:`Store.claim_task <subagents.store.base.Store.claim_task>`),
starts a :class:`LeaseKeeper` that renews the lease every quarter of its time to live, and stops
the keeper before it releases the task. A runner that dies stops renewing: once the lease
expires another owner may claim the task (at once when the dead process ran on this host).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from subagents.errors import StoreError, TaskLeasedError
from subagents.store.base import DEFAULT_LEASE_TTL, Store, TaskLease, TaskOwner
from subagents.store.records import utc_now

if TYPE_CHECKING:
    import asyncio
    import logging

__all__ = [
    "LeaseKeeper",
    "aware",
    "lease_data",
    "lease_lost",
    "lease_refusal",
    "owner_from_data",
]


def _log() -> logging.Logger:
    """The module's logger, imported when first needed: `subagents tasks list` and the like
    read leases but never renew one."""
    import logging

    return logging.getLogger(__name__)


def lease_data(owner: TaskOwner, expires_at: datetime) -> str:
    """A lease as stored: its owner and expiry, JSON."""
    import json

    data = {
        "host": owner.host,
        "pid": owner.pid,
        "token": owner.token,
        "expires_at": expires_at.isoformat(),
    }
    return json.dumps(data)


def owner_from_data(value: str) -> TaskOwner | None:
    """The owner of a stored lease; None when it cannot be read (then nobody can be shown to
    hold the task)."""
    import json

    try:
        data = json.loads(value)
        return TaskOwner(str(data["host"]), int(data["pid"]), str(data["token"]))
    except (ValueError, KeyError, TypeError):
        return None


def aware(now: datetime | None) -> datetime:
    """``now`` (the current time when None), read as UTC when it has no zone."""
    moment = now if now is not None else utc_now()
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def lease_refusal(lease: TaskLease, *, now: datetime | None = None) -> TaskLeasedError:
    """The error for a claim that ``lease`` (another owner's, live) refuses."""
    task = lease.task_id
    holder = f"process {lease.owner.pid} on {lease.owner.host}"
    if lease.expires_at is None:  # a claim by an older subagents: no expiry
        until = ", which claimed it before leases existed (it holds while that process runs)"
        free = ""
    else:
        left = max(0, round((lease.expires_at - aware(now)).total_seconds()))
        until = f"; its lease runs until {_local(lease.expires_at)} ({left} s from now)"
        free = "; if that process stops, the task is free when its lease expires"
    return TaskLeasedError(
        f"Task {task} is being run by {holder}{until}.",
        hint=f"wait for that process to finish or stop it first{free}; if it is gone for good, "
        f"take the task over with 'subagents resume {task[:8]} --force'",
    )


def lease_lost(lease: TaskLease) -> TaskLeasedError:
    """The error for a renewal that finds another owner holding the task."""
    return TaskLeasedError(
        f"Task {lease.task_id} was taken over by process {lease.owner.pid} on "
        f"{lease.owner.host}; this run no longer holds its lease.",
        hint="let that process run it; see the task with "
        f"'subagents tasks show {lease.task_id[:8]}'",
    )


class LeaseKeeper:
    """Renews ``owner``'s lease on ``task_id`` every ``every`` seconds (a quarter of ``ttl`` by
    default) on a worker thread, from :meth:`start` until :meth:`stop`. A renewal that finds
    the task taken over stops the keeping, leaves the error in :attr:`lost` and calls
    ``on_lost`` with it (on the event loop); any other store error is logged and the next
    renewal tries again.

    Between renewals it is a timer on the event loop, not a task waiting on one: a run shorter
    than ``every`` (most are) pays for one timer, set and cancelled."""

    def __init__(
        self,
        store: Store,
        task_id: str,
        owner: TaskOwner,
        *,
        ttl: timedelta = DEFAULT_LEASE_TTL,
        every: float | None = None,
        clock: Callable[[], datetime] = utc_now,
        on_lost: Callable[[TaskLeasedError], None] | None = None,
    ) -> None:
        self._store = store
        self._task_id = task_id
        self._owner = owner
        self._ttl = ttl
        self._every = every if every is not None else ttl.total_seconds() / 4
        self._clock = clock
        self._on_lost = on_lost
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._renewing: asyncio.Future[None] | None = None
        self._stopped = False
        self.lost: TaskLeasedError | None = None
        self.renewals = 0

    def start(self) -> None:
        """Start renewing (on the running event loop)."""
        import asyncio

        if self._loop is None:
            self._loop = asyncio.get_running_loop()
            self._timer = self._loop.call_later(self._every, self._due)

    async def stop(self) -> None:
        """Stop renewing; a renewal under way finishes first, so none lands after this."""
        self._stopped = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        renewing, self._renewing = self._renewing, None
        if renewing is not None:
            try:
                await renewing
            except Exception:  # the run's outcome matters more than its lease's upkeep
                _log().exception("the lease keeper of task %s failed", self._task_id)

    def renew(self) -> TaskLease:
        """One renewal, now (blocking)."""
        lease = self._store.renew_lease(
            self._task_id, self._owner, ttl=self._ttl, now=self._clock()
        )
        self.renewals += 1
        return lease

    def _due(self) -> None:
        import asyncio

        self._timer = None
        if not self._stopped:
            self._renewing = asyncio.ensure_future(self._renew_then_wait())

    async def _renew_then_wait(self) -> None:
        import asyncio

        try:
            await asyncio.to_thread(self.renew)
        except TaskLeasedError as error:
            self.lost = error
            _log().warning("%s", error.message)
            if self._on_lost is not None:
                self._on_lost(error)
            return
        except StoreError as error:
            _log().warning("could not renew the lease of task %s: %s", self._task_id, error)
        if not self._stopped and self._loop is not None:
            self._timer = self._loop.call_later(self._every, self._due)


def _local(moment: datetime) -> str:
    return moment.astimezone().strftime("%Y-%m-%d %H:%M:%S")
