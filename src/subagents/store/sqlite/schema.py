"""The SQLite schema of the store and its migrations.

``meta`` holds ``schema_version``. :data:`MIGRATIONS` maps a version to the steps that bring a
database from it to the next one (SQL statements, or functions of the connection where data
moves); version 0 is an empty database. ``tasks`` and ``sessions`` keep the columns the store
queries by and the whole record as JSON in ``data`` (the record is the truth; the columns are
an index of it); a task's steps are rows of ``steps`` (see :mod:`subagents.store.sqlite.steps`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from subagents.store.sqlite.steps import SESSION_OF_ANOTHER_TASK, TASK_MOVED
from subagents.store.sqlite.upgrade import move_to_step_log, number_messages

__all__ = [
    "MIGRATIONS",
    "SESSION_STEPS",
    "SESSION_STEPS_VERSION",
    "STORE_SCHEMA_VERSION",
    "TABLES",
    "Migration",
]

STORE_SCHEMA_VERSION = 5

TABLES = ("meta", "tasks", "sessions", "steps", "leases")

Migration = str | Callable[[sqlite3.Connection], None]

_V1 = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE tasks (
        id TEXT PRIMARY KEY,
        status TEXT NOT NULL,
        parent_task_id TEXT,
        created_ts REAL NOT NULL,
        data TEXT NOT NULL
    )""",
    "CREATE INDEX tasks_by_created ON tasks (created_ts)",
    "CREATE INDEX tasks_by_status ON tasks (status, created_ts)",
    # A rowid table on purpose: the rowid is the creation order `sessions()` returns.
    """CREATE TABLE sessions (
        session_id TEXT PRIMARY KEY,
        task_id TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
        data TEXT NOT NULL
    )""",
    "CREATE INDEX sessions_by_task ON sessions (task_id)",
    # Messages hang off their session (the unique index serves both the reads by session and
    # the cascade), so a session must be stored before its first message.
    """CREATE TABLE messages (
        session_id TEXT NOT NULL REFERENCES sessions (session_id) ON DELETE CASCADE,
        seq INTEGER NOT NULL CHECK (seq >= 0),
        data TEXT NOT NULL,
        UNIQUE (session_id, seq)
    )""",
    # One index only: every index is one more page written per step (measured: dropping the
    # checkpoint_id and session indexes and messages' task index cut a step from 94 to 62 us).
    """CREATE TABLE checkpoints (
        task_id TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
        sequence INTEGER NOT NULL,
        session_id TEXT NOT NULL,
        checkpoint_id TEXT NOT NULL,
        data TEXT NOT NULL,
        UNIQUE (task_id, sequence)
    )""",
    """CREATE TABLE ledger (
        task_id TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
        session_id TEXT NOT NULL,
        tool_call_id TEXT NOT NULL,
        data TEXT NOT NULL,
        UNIQUE (task_id, session_id, tool_call_id)
    )""",
    """CREATE TABLE traces (
        id INTEGER PRIMARY KEY,
        task_id TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
        data TEXT NOT NULL
    )""",
    "CREATE INDEX traces_by_task ON traces (task_id, id)",
)

# Version 2: who runs a task is a lease with an expiry instead of a pid/host claim in ``meta``
# (``owner.TASK_ID``). No foreign key: a lease may name a task before it is stored, and
# delete_task removes it. A claim moved over keeps its pid/host JSON and no expiry
# (``expires_ts`` NULL), so it holds while its process runs, as it did.
_V2 = (
    """CREATE TABLE leases (
        task_id TEXT PRIMARY KEY,
        expires_ts REAL,
        data TEXT NOT NULL
    )""",
    "INSERT INTO leases (task_id, expires_ts, data) "
    "SELECT substr(key, 7), NULL, value FROM meta WHERE key LIKE 'owner.%'",
    "DELETE FROM meta WHERE key LIKE 'owner.%'",
)

# Version 3: a task's messages, checkpoints, ledger and traces are rows of one append-only
# table, keyed by the task's number and the step's (two WAL pages a step instead of ten).
# ``tasks.no`` is that number: an explicit column, as VACUUM may renumber rowids.
_V3: tuple[Migration, ...] = (
    "ALTER TABLE tasks ADD COLUMN no INTEGER",
    "UPDATE tasks SET no = rowid",
    "CREATE UNIQUE INDEX tasks_by_no ON tasks (no)",
    "ALTER TABLE sessions ADD COLUMN next_seq INTEGER NOT NULL DEFAULT 0",
    """CREATE TABLE steps (
        key INTEGER PRIMARY KEY,
        session_id TEXT,
        next_checkpoint INTEGER NOT NULL,
        messages TEXT,
        checkpoint TEXT,
        ledger TEXT,
        traces TEXT
    )""",
    move_to_step_log,
    "DROP TABLE messages",
    "DROP TABLE checkpoints",
    "DROP TABLE ledger",
    "DROP TABLE traces",
)

# Version 4: a step is one INSERT. Each row of messages carries the seq of its first message,
# so a session's next seq is read from its last row, and ``sessions.next_seq`` (an UPDATE per
# step to keep) goes.
_V4: tuple[Migration, ...] = (
    "ALTER TABLE steps ADD COLUMN first_seq INTEGER",
    number_messages,
    "ALTER TABLE sessions DROP COLUMN next_seq",
)

# Version 5: a step that carries its session's record is one statement as well, an INSERT
# into this view. Its trigger does what the store's transaction of two statements did: it
# refuses a task deleted or renumbered (as the step INSERT's ``WHERE EXISTS`` does), upserts
# the session record, refuses a session of another task, and appends the row. A statement
# is undone whole when it fails, so neither write lands without the other.
SESSION_STEPS_VERSION = 5
"""The schema that brought :data:`SESSION_STEPS`."""
SESSION_STEPS: tuple[str, ...] = (
    "CREATE VIEW session_steps AS SELECT NULL AS key, NULL AS session_id, "
    "NULL AS next_checkpoint, NULL AS first_seq, NULL AS messages, NULL AS checkpoint, "
    "NULL AS ledger, NULL AS traces, NULL AS task_no, NULL AS task_id, NULL AS session",
    f"""CREATE TRIGGER session_steps_insert INSTEAD OF INSERT ON session_steps BEGIN
        SELECT RAISE(ABORT, '{TASK_MOVED}') WHERE NOT EXISTS
            (SELECT 1 FROM tasks WHERE no = NEW.task_no AND id = NEW.task_id);
        INSERT INTO sessions (session_id, task_id, data)
            VALUES (NEW.session_id, NEW.task_id, NEW.session)
            ON CONFLICT (session_id) DO UPDATE SET data = excluded.data
            WHERE sessions.task_id = excluded.task_id;
        SELECT RAISE(ABORT, '{SESSION_OF_ANOTHER_TASK}') WHERE
            (SELECT task_id FROM sessions WHERE session_id = NEW.session_id) IS NOT NEW.task_id;
        INSERT INTO steps (key, session_id, next_checkpoint, first_seq, messages, checkpoint,
            ledger, traces) VALUES (NEW.key, NEW.session_id, NEW.next_checkpoint,
            NEW.first_seq, NEW.messages, NEW.checkpoint, NEW.ledger, NEW.traces);
    END""",
)

MIGRATIONS: dict[int, tuple[Migration, ...]] = {
    0: _V1,
    1: _V2,
    2: _V3,
    3: _V4,
    SESSION_STEPS_VERSION - 1: SESSION_STEPS,
}
"""``{from_version: statements}``; applying them yields ``from_version + 1``."""
