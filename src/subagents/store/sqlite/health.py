"""What ``subagents tasks check`` finds in a SQLite store: SQLite's own integrity check, the
store's invariants, and every record that cannot be read."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

from pydantic import BaseModel

from subagents.errors import StoreError
from subagents.store.codec import load_json, load_record
from subagents.store.records import (
    CheckpointRecord,
    SessionRecord,
    TaskRecord,
    ToolLedgerEntry,
    TraceRecord,
)
from subagents.store.sqlite.rows import message

__all__ = ["problems"]

_RECORD_TABLES = (
    ("sessions", "session_id", SessionRecord, "session"),
    ("checkpoints", "task_id", CheckpointRecord, "a checkpoint of task"),
    ("ledger", "tool_call_id", ToolLedgerEntry, "the ledger entry of tool call"),
    ("traces", "task_id", TraceRecord, "a trace record of task"),
)


def problems(connection: sqlite3.Connection) -> list[str]:
    """Every problem found; ``[]`` when the store is fine."""
    found: list[str] = []
    try:
        found.extend(_sqlite_problems(connection))
        found.extend(_invariant_problems(connection))
        found.extend(_record_problems(connection))
    except sqlite3.DatabaseError as error:
        found.append(f"sqlite: {error}")
    return found


def _sqlite_problems(connection: sqlite3.Connection) -> list[str]:
    rows = [str(row[0]) for row in connection.execute("PRAGMA integrity_check")]
    found = [f"sqlite: {row}" for row in rows if row != "ok"]
    found.extend(
        f"sqlite: a row of {table} (rowid {rowid}) points at a missing {parent}"
        for table, rowid, parent, _ in connection.execute("PRAGMA foreign_key_check")
    )
    return found


def _invariant_problems(connection: sqlite3.Connection) -> list[str]:
    found = [
        f"task {task_id}: checkpoint sequence {sequence} follows {previous} (not increasing)"
        for task_id, sequence, previous in connection.execute(
            "SELECT task_id, sequence, previous FROM ("
            "  SELECT task_id, sequence,"
            "         lag(sequence) OVER (PARTITION BY task_id ORDER BY rowid) AS previous"
            "  FROM checkpoints"
            ") WHERE previous IS NOT NULL AND sequence <= previous"
        )
    ]
    found.extend(
        f"session {session_id}: message seqs are not contiguous from 0 "
        f"({count} messages, seq {first} to {last})"
        for session_id, count, first, last in connection.execute(
            "SELECT session_id, count(*), min(seq), max(seq) FROM messages "
            "GROUP BY session_id HAVING min(seq) != 0 OR max(seq) != count(*) - 1"
        )
    )
    return found


def _record_problems(connection: sqlite3.Connection) -> list[str]:
    """Every stored record that cannot be read, by table, with the reason."""
    found = [
        f"task {task_id}: {reason}"
        for task_id, reason in _unreadable(connection, "tasks", "id", TaskRecord)
    ]
    for table, key, record, what in _RECORD_TABLES:
        found.extend(
            f"{what} {owner}: {reason}"
            for owner, reason in _unreadable(connection, table, key, record)
        )
    for session_id, seq, data in connection.execute("SELECT session_id, seq, data FROM messages"):
        try:
            message(load_json(data, where="its JSON"), "it")
        except StoreError as error:
            found.append(f"message {seq} of session {session_id}: {error.message}")
    return found


def _unreadable(
    connection: sqlite3.Connection, table: str, key: str, record: type[BaseModel]
) -> Iterator[tuple[str, str]]:
    for owner, data in connection.execute(f"SELECT {key}, data FROM {table}"):
        try:
            load_record(record, data, where="its record")
        except StoreError as error:
            yield str(owner), error.message
