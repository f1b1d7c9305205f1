"""The embedded default store: one SQLite file in WAL mode.

Concurrency. One connection per store object, every use of it under one re-entrant lock, so
the event loop's thread and any helper thread are serialised in process (the connection is
opened with ``check_same_thread=False`` for that reason;
:class:`~subagents.store.threaded.ThreadedAsyncStore` goes further and makes every call on one
thread of its own). Across processes, WAL lets readers run beside the one writer, writes start
with ``BEGIN IMMEDIATE`` (they take the write lock up front instead of upgrading a read lock,
which could deadlock) and ``busy_timeout`` makes a writer wait for the other process instead
of failing.

Transactions. Each write is one transaction, or a savepoint when it joins an outer one: the
store's own :meth:`~SQLiteStore.transaction` (which holds the lock for its thread until it
ends, so that thread's writes inside it join it; the others' wait), a transaction handed in as
``tx=``, or one its caller owns on its own connection to the file
(:meth:`~SQLiteStore.join_transaction`, how a workflow engine commits its own bookkeeping and
the step together). A failing write rolls back its savepoint alone; whoever owns the outer
transaction commits or rolls back the rest.

Layout. ``tasks`` and ``sessions`` hold their records, indexed by the columns the store
queries; a task's messages, checkpoints, tool ledger and traces are an append-only log of
steps, one row per session per step (:mod:`~subagents.store.sqlite.steps`), so a step costs
one appended row and, with messages, its session's message counter.

Durability. ``synchronous=NORMAL``: a committed step survives the process being killed; only
an operating-system crash or power cut can lose the last few steps.

Ownership. The ``leases`` table holds one row per claimed task: its owner (a random token,
with host and pid for people) and ``expires_ts``. A claim is read and written in one
``BEGIN IMMEDIATE`` transaction, so two processes never both win; it wins when no other owner's
lease is live: unexpired, and not of a process on this host that is gone. The runner renews
its lease while it runs (:class:`~subagents.store.lease.LeaseKeeper`); time is a parameter of
every lease call. Stores of schema 1 kept a pid/host claim in ``meta``: the upgrade moves it
to ``leases`` without an expiry, and it holds, as it did, while its process runs.

Damage. A file that is not SQLite, or a truncated one, is detected when the store opens (the
header is checked by hand) or at the first query that reads a damaged page; either way the
caller gets :class:`~subagents.errors.StoreCorruptError` naming the file and how to move it
aside. One damaged record is not the whole store's damage: :meth:`SQLiteStore.scan_tasks` lists
the readable tasks and names the others, and :meth:`SQLiteStore.integrity_check` names every
record that cannot be read. An unreadable lease counts as no lease.

Read-only stores. A colleague's project or a mounted backup may be readable but not writable.
Reading a WAL database needs its ``-shm`` index beside it, which SQLite creates when it is
missing: that needs a writable folder. So when the store cannot be opened for writing it is
opened read-only (``mode=ro``), and when even that fails because the ``-wal`` / ``-shm`` files
cannot be created, as ``immutable=1`` (no locks, no index; only safe because, without a
``-wal`` file, every committed change is in the main file). A non-empty ``-wal`` with no way to
index it cannot be read faithfully, so that case is refused with a way out. A read-only store
of an older schema is copied into memory and upgraded there (the file is left as it is; the
copy is a snapshot). Reading works in every read-only mode; every write raises a
:class:`~subagents.errors.StoreError` naming the file and what to do.

Modules: :mod:`~subagents.store.sqlite.connection` (opening, transactions, errors),
:mod:`~subagents.store.sqlite.schema` (tables and migrations),
:mod:`~subagents.store.sqlite.rows` (records to rows), :mod:`~subagents.store.sqlite.steps`
(the step log), :mod:`~subagents.store.sqlite.upgrade` (moving an older store's data),
:mod:`~subagents.store.sqlite.leases`,
:mod:`~subagents.store.sqlite.health` (``tasks check``), :mod:`~subagents.store.sqlite.store`.
"""

from __future__ import annotations

from pathlib import Path

from subagents.store.sqlite.connection import BUSY_TIMEOUT_SECONDS, SQLiteTransaction
from subagents.store.sqlite.store import MIN_ID_PREFIX, SQLiteStore

__all__ = [
    "BUSY_TIMEOUT_SECONDS",
    "MIN_ID_PREFIX",
    "SQLiteStore",
    "SQLiteTransaction",
    "open_store",
]


def open_store(
    path: Path | str | None = None, *, cwd: Path | None = None, read_only: bool = False
) -> SQLiteStore:
    """Open (creating when missing) the SQLite store at ``path`` (a path or a ``sqlite:``
    URL), else the default location for ``cwd`` (see :mod:`subagents.store.location`);
    ``read_only`` as for :class:`SQLiteStore`. :func:`subagents.store.open_store` is the
    same for any kind of store."""
    if path is None:
        from subagents.store.location import default_store_path

        return SQLiteStore(default_store_path(cwd), read_only=read_only)
    from subagents.store.url import sqlite_file

    return SQLiteStore(sqlite_file(path), read_only=read_only)
