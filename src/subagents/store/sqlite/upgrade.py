"""The upgrade of a schema-2 store to the step log (schema 3): every task's messages,
checkpoints, ledger and traces move, as the JSON they are stored as, into rows of ``steps``.
It runs inside the upgrade's transaction: a store is upgraded whole or not at all."""

from __future__ import annotations

import sqlite3

from subagents.store.sqlite.steps import INSERT_STEP, task_range
from subagents.store.steplog import whole_task_rows

__all__ = ["move_to_step_log"]


def move_to_step_log(connection: sqlite3.Connection) -> None:
    connection.execute(
        "UPDATE sessions SET next_seq = coalesce("
        "(SELECT max(seq) + 1 FROM messages WHERE messages.session_id = sessions.session_id), 0)"
    )
    tasks = connection.execute("SELECT id, no FROM tasks ORDER BY no").fetchall()
    for task_id, task_no in tasks:
        rows = whole_task_rows(
            _messages(connection, task_id),
            connection.execute(
                "SELECT session_id, sequence, data FROM checkpoints WHERE task_id = ?", (task_id,)
            ).fetchall(),
            connection.execute(
                "SELECT session_id, data FROM ledger WHERE task_id = ? ORDER BY rowid", (task_id,)
            ).fetchall(),
            connection.execute(
                "SELECT CASE WHEN json_valid(data) THEN json_extract(data, '$.session_id') END, "
                "data FROM traces WHERE task_id = ? ORDER BY id",
                (task_id,),
            ).fetchall(),
        )
        first, _ = task_range(task_no)
        connection.executemany(INSERT_STEP, [(first + row[0], *row[1:]) for row in rows])


def _messages(connection: sqlite3.Connection, task_id: str) -> list[tuple[str, list[str]]]:
    sessions = connection.execute(
        "SELECT session_id FROM sessions WHERE task_id = ? ORDER BY rowid", (task_id,)
    ).fetchall()
    return [
        (
            session_id,
            [
                data
                for (data,) in connection.execute(
                    "SELECT data FROM messages WHERE session_id = ? ORDER BY seq", (session_id,)
                )
            ],
        )
        for (session_id,) in sessions
    ]
