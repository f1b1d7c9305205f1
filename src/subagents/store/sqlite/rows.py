"""How records become rows of the SQLite store: the statements that write them, and the
encoding (with the checks that every record belongs to the task being written)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, get_args

from subagents.errors import StoreCorruptError, StoreError
from subagents.store.base import StoredMessage
from subagents.store.codec import dump_json, dump_record
from subagents.store.records import TaskRecord, TaskStatus

__all__ = [
    "INSERT_TASK",
    "SET_META",
    "TASK_NUMBER",
    "UPDATE_TASK",
    "UPSERT_SESSION",
    "UPSERT_TASK",
    "message",
    "message_rows",
    "require_owner",
    "task_query",
    "task_row",
]

_TASK_STATUSES: tuple[str, ...] = get_args(TaskStatus)

# A task's number keys its steps (see steps.py); a deleted task's rows go with it, so a number
# handed out again never finds rows of another task.
_NEXT_TASK_NUMBER = "(SELECT coalesce(max(no), 0) + 1 FROM tasks)"
UPSERT_TASK = (
    "INSERT INTO tasks (id, status, parent_task_id, created_ts, data, no) "
    f"VALUES (?, ?, ?, ?, ?, {_NEXT_TASK_NUMBER}) "
    "ON CONFLICT (id) DO UPDATE SET status = excluded.status, "
    "parent_task_id = excluded.parent_task_id, created_ts = excluded.created_ts, "
    "data = excluded.data"
)
INSERT_TASK = (
    "INSERT INTO tasks (id, status, parent_task_id, created_ts, data, no) "
    f"VALUES (?, ?, ?, ?, ?, {_NEXT_TASK_NUMBER})"
)
TASK_NUMBER = "SELECT no FROM tasks WHERE id = ?"
UPDATE_TASK = (
    "UPDATE tasks SET status = ?, parent_task_id = ?, created_ts = ?, data = ? WHERE id = ?"
)
UPSERT_SESSION = (
    "INSERT INTO sessions (session_id, task_id, data) VALUES (?, ?, ?) "
    "ON CONFLICT (session_id) DO UPDATE SET data = excluded.data "
    "WHERE sessions.task_id = excluded.task_id"
)
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


def message(value: Any, where: str) -> dict[str, Any]:
    """A stored message as read back: it must be a JSON object."""
    if not isinstance(value, dict):
        raise StoreCorruptError(
            f"{where} is not a JSON object",
            hint="export the other tasks with 'subagents export', or move the store aside",
        )
    return value
