"""Durable storage of tasks: records, the ``Store`` protocol, the SQLite store, export and
import, retention.

Heavy parts (``sqlite3``) load on first use of :func:`open_store` / :class:`SQLiteStore`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from subagents.store.base import StepWrite, Store, StoredMessage, TaskBundle
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
    from subagents.store.location import default_store_path
    from subagents.store.sqlite import SQLiteStore, open_store

__all__ = [
    "CheckpointRecord",
    "LedgerStatus",
    "SQLiteStore",
    "SessionRecord",
    "SessionStatus",
    "StepWrite",
    "Store",
    "StoredMessage",
    "TaskBundle",
    "TaskRecord",
    "TaskStatus",
    "ToolLedgerEntry",
    "TraceRecord",
    "TraceStatus",
    "default_store_path",
    "open_store",
]

_LAZY = {
    "SQLiteStore": "subagents.store.sqlite",
    "open_store": "subagents.store.sqlite",
    "default_store_path": "subagents.store.location",
}


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'subagents.store' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module_name), name)
