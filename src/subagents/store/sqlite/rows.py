"""How tasks, sessions and metadata become rows of the SQLite store: the statements that
write them (a task's steps: :mod:`subagents.store.sqlite.steps`)."""

from __future__ import annotations

from typing import get_args

from subagents.store.records import TaskStatus

__all__ = [
    "INSERT_TASK",
    "SET_META",
    "TASK_NUMBER",
    "UPDATE_TASK",
    "UPSERT_SESSION",
    "UPSERT_TASK",
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
    f"VALUES (?, ?, ?, ?, ?, {_NEXT_TASK_NUMBER}) RETURNING no"
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
