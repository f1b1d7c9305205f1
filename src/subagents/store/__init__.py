"""Durable storage of tasks: records, the ``Store`` / ``AsyncStore`` protocols,
:func:`open_store` (a path or URL to a store), the SQLite store, leases, export and import,
retention.

Heavy parts (``sqlite3``) load on first use of :func:`open_store` / :class:`SQLiteStore`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from subagents.store.base import (
    DEFAULT_LEASE_TTL,
    AsyncStore,
    StepWrite,
    Store,
    StoredMessage,
    TaskBundle,
    TaskLease,
    TaskOwner,
    Transaction,
)
from subagents.store.records import (
    CheckpointRecord,
    LedgerStatus,
    SessionRecord,
    SessionStatus,
    TaskRecord,
    TaskStatus,
    ToolLedgerEntry,
    TraceRecord,
    TraceStatus,
)

if TYPE_CHECKING:
    from subagents.store.lease import LeaseKeeper
    from subagents.store.location import default_store_path
    from subagents.store.open import open_async_store, open_store
    from subagents.store.sqlite import SQLiteStore
    from subagents.store.threaded import ThreadedAsyncStore

__all__ = [
    "DEFAULT_LEASE_TTL",
    "AsyncStore",
    "CheckpointRecord",
    "LeaseKeeper",
    "LedgerStatus",
    "SQLiteStore",
    "SessionRecord",
    "SessionStatus",
    "StepWrite",
    "Store",
    "StoredMessage",
    "TaskBundle",
    "TaskLease",
    "TaskOwner",
    "TaskRecord",
    "TaskStatus",
    "ThreadedAsyncStore",
    "ToolLedgerEntry",
    "TraceRecord",
    "TraceStatus",
    "Transaction",
    "default_store_path",
    "open_async_store",
    "open_store",
]

_LAZY = {
    "LeaseKeeper": "subagents.store.lease",
    "SQLiteStore": "subagents.store.sqlite",
    "ThreadedAsyncStore": "subagents.store.threaded",
    "open_async_store": "subagents.store.open",
    "open_store": "subagents.store.open",
    "default_store_path": "subagents.store.location",
}


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'subagents.store' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module_name), name)
