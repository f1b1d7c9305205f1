"""How records become rows of the SQLite store: the statements that write them, and the
encoding (with the checks that every record belongs to the task being written)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any, get_args

from subagents.errors import StoreCorruptError, StoreError
from subagents.store.base import StoredMessage
from subagents.store.codec import dump_json, dump_record
from subagents.store.records import (
    CheckpointRecord,
    TaskRecord,
    TaskStatus,
    ToolLedgerEntry,
    TraceRecord,
)

__all__ = [
    "INSERT_CHECKPOINT",
    "INSERT_MESSAGE",
    "INSERT_TASK",
    "INSERT_TRACE",
    "LAST_MESSAGE_SEQ",
    "SET_META",
    "UPDATE_TASK",
    "UPSERT_LEDGER",
    "UPSERT_SESSION",
    "UPSERT_TASK",
    "insert_checkpoint",
    "ledger_rows",
    "message",
    "message_rows",
    "require_owner",
    "task_query",
    "task_row",
    "trace_rows",
]

_TASK_STATUSES: tuple[str, ...] = get_args(TaskStatus)

UPSERT_TASK = (
    "INSERT INTO tasks (id, status, parent_task_id, created_ts, data) VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT (id) DO UPDATE SET status = excluded.status, "
    "parent_task_id = excluded.parent_task_id, created_ts = excluded.created_ts, "
    "data = excluded.data"
)
INSERT_TASK = (
    "INSERT INTO tasks (id, status, parent_task_id, created_ts, data) VALUES (?, ?, ?, ?, ?)"
)
UPDATE_TASK = (
    "UPDATE tasks SET status = ?, parent_task_id = ?, created_ts = ?, data = ? WHERE id = ?"
)
UPSERT_SESSION = (
    "INSERT INTO sessions (session_id, task_id, data) VALUES (?, ?, ?) "
    "ON CONFLICT (session_id) DO UPDATE SET data = excluded.data "
    "WHERE sessions.task_id = excluded.task_id"
)
LAST_MESSAGE_SEQ = "SELECT max(seq) FROM messages WHERE session_id = ?"
INSERT_MESSAGE = "INSERT INTO messages (session_id, seq, data) VALUES (?, ?, ?)"
_LAST_CHECKPOINT_SEQUENCE = "SELECT max(sequence) FROM checkpoints WHERE task_id = ?"
INSERT_CHECKPOINT = (
    "INSERT INTO checkpoints (task_id, sequence, session_id, checkpoint_id, data) "
    "VALUES (?, ?, ?, ?, ?)"
)
UPSERT_LEDGER = (
    "INSERT INTO ledger (task_id, session_id, tool_call_id, data) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (task_id, session_id, tool_call_id) DO UPDATE SET data = excluded.data"
)
INSERT_TRACE = "INSERT INTO traces (task_id, data) VALUES (?, ?)"
SET_META = (
    "INSERT INTO meta (key, value) VALUES (?, ?) "
    "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
)


def task_query(status: str | None, limit: int | None) -> tuple[str, list[Any]]:
    sql = "SELECT id, data FROM tasks"
    parameters: list[Any] = []
    if status is not None:
        if status not in _TASK_STATUSES:
            raise StoreError(
                f"unknown task status {status!r}",
                hint=f"use one of: {', '.join(_TASK_STATUSES)}",
            )
        sql += " WHERE status = ?"
        parameters.append(status)
    sql += " ORDER BY created_ts DESC, rowid DESC"
    if limit is not None:
        sql += " LIMIT ?"
        parameters.append(max(limit, 0))
    return sql, parameters


def insert_checkpoint(
    connection: sqlite3.Connection, task_id: str, checkpoint: CheckpointRecord
) -> CheckpointRecord:
    # Inside the write transaction, so two processes never hand out the same sequence.
    (last,) = connection.execute(_LAST_CHECKPOINT_SEQUENCE, (task_id,)).fetchone()
    saved = checkpoint.model_copy(update={"sequence": 0 if last is None else last + 1})
    connection.execute(
        INSERT_CHECKPOINT,
        (task_id, saved.sequence, saved.session_id, saved.checkpoint_id, dump_record(saved)),
    )
    return saved


def require_owner(task_id: str, owner: str, what: str) -> None:
    if owner != task_id:
        raise StoreError(
            f"{what} belongs to task {owner}, not to task {task_id} being written",
            hint="write each task's records in its own StepWrite",
        )


def task_row(task: TaskRecord) -> tuple[str, str, str | None, float, str]:
    return (
        task.id,
        task.status,
        task.parent_task_id,
        task.created_at.timestamp(),
        dump_record(task),
    )


def message_rows(messages: Iterable[StoredMessage]) -> list[tuple[str, int, str]]:
    rows = []
    for session_id, seq, value in messages:
        try:
            rows.append((session_id, seq, dump_json(value)))
        except (TypeError, ValueError) as error:
            raise StoreError(
                f"cannot store message {seq} of session {session_id}: {error}",
                hint="store messages as dicts of JSON values "
                "(subagents.messages.message_to_dict makes them)",
            ) from None
    return rows


def ledger_rows(
    task_id: str, entries: Iterable[ToolLedgerEntry]
) -> list[tuple[str, str, str, str]]:
    rows = []
    for entry in entries:
        require_owner(task_id, entry.task_id, "a ledger entry")
        rows.append((task_id, entry.session_id, entry.tool_call_id, dump_record(entry)))
    return rows


def trace_rows(task_id: str, traces: Iterable[TraceRecord]) -> list[tuple[str, str]]:
    rows = []
    for trace in traces:
        require_owner(task_id, trace.task_id, "a trace record")
        rows.append((task_id, dump_record(trace)))
    return rows


def message(value: Any, where: str) -> dict[str, Any]:
    """A stored message as read back: it must be a JSON object."""
    if not isinstance(value, dict):
        raise StoreCorruptError(
            f"{where} is not a JSON object",
            hint="export the other tasks with 'subagents export', or move the store aside",
        )
    return value
