"""Task leases in the SQLite store: one row per claimed task in ``leases`` (schema 2), or,
in a read-only store of schema 1, the pid/host claim that ``meta`` held then."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime

from subagents.store.base import TaskLease, TaskOwner
from subagents.store.lease import lease_data, owner_from_data

__all__ = ["claim_free_or_own", "delete_lease", "read_lease", "write_lease"]

_UPSERT = (
    "INSERT INTO leases (task_id, expires_ts, data) VALUES (?, ?, ?) "
    "ON CONFLICT (task_id) DO UPDATE SET expires_ts = excluded.expires_ts, data = excluded.data"
)


def read_lease(connection: sqlite3.Connection, task_id: str, version: int) -> TaskLease | None:
    if version < 2:
        row = connection.execute(
            "SELECT NULL, value FROM meta WHERE key = ?", (f"owner.{task_id}",)
        ).fetchone()
    else:
        row = connection.execute(
            "SELECT expires_ts, data FROM leases WHERE task_id = ?", (task_id,)
        ).fetchone()
    if row is None:
        return None
    owner = owner_from_data(row[1])
    if owner is None:
        return None  # unreadable: nobody can be shown to hold the task
    expires_at = None if row[0] is None else datetime.fromtimestamp(row[0], UTC)
    return TaskLease(task_id, owner, expires_at)


def write_lease(
    connection: sqlite3.Connection, task_id: str, owner: TaskOwner, expires_at: datetime
) -> TaskLease:
    connection.execute(_UPSERT, (task_id, expires_at.timestamp(), lease_data(owner, expires_at)))
    return TaskLease(task_id, owner, expires_at)


def delete_lease(
    connection: sqlite3.Connection, task_id: str, owner: TaskOwner | None = None
) -> None:
    """Remove the task's lease; with ``owner``, only when that owner holds it (one statement:
    a lease that cannot be read names nobody, so it is not ``owner``'s)."""
    if owner is None:
        connection.execute("DELETE FROM leases WHERE task_id = ?", (task_id,))
        return
    connection.execute(_DELETE_OWNED, (task_id, owner.host, owner.pid, owner.token))


def claim_free_or_own(
    connection: sqlite3.Connection, task_id: str, owner: TaskOwner, expires_at: datetime
) -> bool:
    """Take the task's lease, in one statement, when nobody holds it or ``owner`` does;
    False, changing nothing, when another owner's lease is there (live or not: the caller
    reads it to tell)."""
    data = lease_data(owner, expires_at)
    parameters = (task_id, expires_at.timestamp(), data, owner.host, owner.pid, owner.token)
    return bool(connection.execute(_CLAIM_FREE_OR_OWN, parameters).rowcount)


# Whether the lease row is held by the owner given as (host, pid, token). CASE, not AND:
# json_extract raises on text that is not JSON, and only CASE is sure to test json_valid first.
_HELD_BY = (
    "CASE WHEN json_valid(leases.data) THEN json_extract(leases.data, '$.host') = ? "
    "AND json_extract(leases.data, '$.pid') = ? AND json_extract(leases.data, '$.token') = ? "
    "ELSE 0 END"
)
_DELETE_OWNED = f"DELETE FROM leases WHERE task_id = ? AND {_HELD_BY}"
_CLAIM_FREE_OR_OWN = f"{_UPSERT} WHERE {_HELD_BY}"
