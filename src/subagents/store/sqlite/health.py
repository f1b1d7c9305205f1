"""What ``subagents tasks check`` finds in a SQLite store: SQLite's own integrity check, the
store's invariants, and every record that cannot be read."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel

from subagents.errors import StoreCorruptError, StoreError
from subagents.store.codec import load_json, load_record, record_from_data
from subagents.store.records import (
    CheckpointRecord,
    SessionRecord,
    TaskRecord,
    ToolLedgerEntry,
    TraceRecord,
)
from subagents.store.steplog import message

__all__ = ["problems"]

_HINT = "export the other tasks with 'subagents export', or move the store aside"

# (column, record, what it is called): the step log's columns of records.
_STEP_RECORDS: tuple[tuple[str, type[BaseModel], str], ...] = (
    ("checkpoint", CheckpointRecord, "a checkpoint"),
    ("ledger", ToolLedgerEntry, "a ledger entry"),
    ("traces", TraceRecord, "a trace record"),
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
        f"steps {key >> 32}.{key & 0xFFFFFFFF}: no task numbered {key >> 32} (left behind)"
        for (key,) in connection.execute(
            "SELECT min(key) FROM steps WHERE (key >> 32) NOT IN (SELECT no FROM tasks) "
            "GROUP BY key >> 32"
        )
    ]
    found.extend(
        f"task {task_id}: checkpoint sequence {sequence} follows {previous} (not increasing)"
        for task_id, sequence, previous in connection.execute(
            "SELECT t.id, sequence, previous FROM ("
            "  SELECT key >> 32 AS no, json_extract(checkpoint, '$.sequence') AS sequence,"
            "         lag(json_extract(checkpoint, '$.sequence'))"
            "           OVER (PARTITION BY key >> 32 ORDER BY key) AS previous"
            "  FROM steps WHERE checkpoint IS NOT NULL AND json_valid(checkpoint)"
            ") JOIN tasks t USING (no) WHERE previous IS NOT NULL AND sequence <= previous"
        )
    )
    found.extend(
        f"session {session_id}: the messages of step {key & 0xFFFFFFFF} start at seq "
        f"{first_seq}, {expected} expected (a row lost, or written twice)"
        for session_id, key, first_seq, expected in connection.execute(
            "SELECT session_id, key, first_seq, expected FROM ("
            "  SELECT session_id, key, first_seq, coalesce(lag(first_seq + CASE WHEN "
            "    json_valid(messages) THEN json_array_length(messages) ELSE 0 END) "
            "    OVER (PARTITION BY session_id ORDER BY key), 0) AS expected"
            "  FROM steps WHERE messages IS NOT NULL"
            ") WHERE first_seq IS NOT expected"
        )
    )
    found.extend(
        f"steps {key >> 32}.{key & 0xFFFFFFFF}: messages of session {session_id}, which is "
        "not a stored session of the task"
        for key, session_id in connection.execute(
            "SELECT min(s.key), s.session_id FROM steps s JOIN tasks t ON t.no = s.key >> 32 "
            "LEFT JOIN sessions ON sessions.session_id = s.session_id AND sessions.task_id = t.id "
            "WHERE s.messages IS NOT NULL AND sessions.session_id IS NULL GROUP BY s.session_id"
        )
    )
    return found


def _record_problems(connection: sqlite3.Connection) -> list[str]:
    """Every stored record that cannot be read, with the reason."""
    found = [
        f"task {task_id}: {reason}"
        for task_id, reason in _unreadable(connection, "tasks", "id", TaskRecord)
    ]
    found.extend(
        f"session {session_id}: {reason}"
        for session_id, reason in _unreadable(connection, "sessions", "session_id", SessionRecord)
    )
    rows = connection.execute(
        "SELECT t.id, s.key, s.session_id, s.messages, s.checkpoint, s.ledger, s.traces "
        "FROM steps s JOIN tasks t ON t.no = s.key >> 32 ORDER BY s.key"
    )
    seqs: dict[str, int] = {}
    for task_id, key, session_id, messages, checkpoint, ledger, traces in rows:
        where = f"task {task_id}, step {key & 0xFFFFFFFF}"
        if messages is not None:
            first = seqs.get(session_id, 0)
            reasons, seqs[session_id] = _unreadable_messages(messages, session_id, first)
            found.extend(f"{where}: {reason}" for reason in reasons)
        for (column, record, what), text in zip(
            _STEP_RECORDS, (checkpoint, ledger, traces), strict=True
        ):
            if text is None:
                continue
            try:
                if column == "checkpoint":
                    load_record(record, text, where=what)
                else:
                    for value in _array(text, what):
                        record_from_data(record, value, where=what)
            except StoreError as error:
                found.append(f"{where}: {error.message}")
    return found


def _unreadable_messages(text: str, session_id: str, first: int) -> tuple[list[str], int]:
    """What is wrong with one row's messages of ``session_id``, the first being seq
    ``first``; and the seq that follows them."""
    try:
        values = _array(text, f"the messages of session {session_id}")
    except StoreError as error:
        return [error.message], first
    reasons = []
    for seq, value in enumerate(values, start=first):
        try:
            message(value, f"message {seq} of session {session_id}: it")
        except StoreError as error:
            reasons.append(error.message)
    return reasons, first + len(values)


def _array(text: str, what: str) -> list[Any]:
    values = load_json(text, where=what)
    if not isinstance(values, list):
        raise StoreCorruptError(f"{what} is not a JSON array", hint=_HINT)
    return values


def _unreadable(
    connection: sqlite3.Connection, table: str, key: str, record: type[BaseModel]
) -> Iterator[tuple[str, str]]:
    for owner, data in connection.execute(f"SELECT {key}, data FROM {table}"):
        try:
            load_record(record, data, where="its record")
        except StoreError as error:
            yield str(owner), error.message
