"""How tasks, sessions and metadata become rows of the SQLite store: the statements that
write them (a task's steps: :mod:`subagents.store.sqlite.steps`)."""

from __future__ import annotations

from typing import Any, get_args

from subagents.errors import StoreError
from subagents.store.codec import dump_record
from subagents.store.records import TaskRecord, TaskStatus

__all__ = [
    "INSERT_TASK",
    "SET_META",
    "TASK_NUMBER",
    "UPDATE_TASK",
    "UPSERT_SESSION",
    "UPSERT_TASK",
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


def task_row(task: TaskRecord) -> tuple[str, str, str | None, float, str]:
    return (
        task.id,
        task.status,
        task.parent_task_id,
        task.created_at.timestamp(),
        dump_record(task),
    )
