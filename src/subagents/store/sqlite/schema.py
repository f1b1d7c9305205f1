"""The SQLite schema of the store and its migrations.

``meta`` holds ``schema_version``. :data:`MIGRATIONS` maps a version to the statements that
bring a database from it to the next one; version 0 is an empty database. Each table keeps the
columns the store queries by and the whole record as JSON in ``data`` (the record is the truth;
the columns are an index of it).
"""

from __future__ import annotations

__all__ = ["MIGRATIONS", "READABLE_SINCE", "STORE_SCHEMA_VERSION", "TABLES"]

STORE_SCHEMA_VERSION = 2

READABLE_SINCE = 1
"""The oldest schema a read-only store is read in without an upgrade (it cannot migrate)."""

TABLES = ("meta", "tasks", "sessions", "messages", "checkpoints", "ledger", "traces", "leases")

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

MIGRATIONS: dict[int, tuple[str, ...]] = {0: _V1, 1: _V2}
"""``{from_version: statements}``; applying them yields ``from_version + 1``."""
