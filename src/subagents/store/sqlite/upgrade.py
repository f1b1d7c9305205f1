"""The upgrades that move data (the others are plain statements in
:mod:`subagents.store.sqlite.schema`). Each runs inside the upgrade's transaction: a store is
upgraded whole or not at all; each keeps the statements of its own schema version, whatever
later versions do.

- Schema 2 to 3, the step log: every task's messages, checkpoints, ledger and traces move, as
  the JSON they are stored as, into rows of ``steps``.
- Schema 3 to 4: each row of messages says the seq of its first message (``first_seq``),
  counted from the rows before it of its session.
"""

from __future__ import annotations

import sqlite3

from subagents.store.sqlite.steps import task_range
from subagents.store.steplog import whole_task_rows

__all__ = ["move_to_step_log", "number_messages"]

_V3_INSERT_STEP = (
    "INSERT INTO steps (key, session_id, next_checkpoint, messages, checkpoint, ledger, traces) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)"
)


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
        connection.executemany(_V3_INSERT_STEP, [(first + row[0], *row[1:]) for row in rows])


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


def number_messages(connection: sqlite3.Connection) -> None:
    """Fill ``first_seq``: the messages of a session's earlier rows, counted (a row whose JSON
    is damaged counts none; ``tasks check`` reports it)."""
    connection.execute(
        "UPDATE steps SET first_seq = counted.first_seq FROM ("
        "  SELECT key, coalesce(sum(length) OVER (PARTITION BY session_id ORDER BY key "
        "    ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS first_seq"
        "  FROM (SELECT key, session_id, CASE WHEN json_valid(messages) "
        "    THEN json_array_length(messages) ELSE 0 END AS length"
        "    FROM steps WHERE messages IS NOT NULL)"
        ") AS counted WHERE steps.key = counted.key"
    )
