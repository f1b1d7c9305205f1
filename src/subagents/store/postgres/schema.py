"""The PostgreSQL schema of the store and its migrations.

The same records as the SQLite store, in the same shape: ``tasks`` and ``sessions`` keep the
columns the store queries by and the whole record as JSON text in ``data``; a task's steps are
rows of ``steps`` keyed by (task number, step number) (see :mod:`subagents.store.steplog`);
the task's row counts its steps and checkpoints (``last_step``, ``next_checkpoint``), so that
one UPDATE locks the task, hands out the numbers of a step and returns them.
``meta`` holds ``schema_version``; :data:`MIGRATIONS` maps a version to the statements that
bring a database from it to the next one (0 is an empty database). Tables live in the
connection's ``search_path`` (``?options=-csearch_path%3Dmyschema`` in the URL to choose one).
"""

from __future__ import annotations

__all__ = ["MIGRATIONS", "STORE_SCHEMA_VERSION"]

STORE_SCHEMA_VERSION = 1

_V1 = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE tasks (
        id TEXT PRIMARY KEY,
        no BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
        status TEXT NOT NULL,
        parent_task_id TEXT,
        created_ts DOUBLE PRECISION NOT NULL,
        data TEXT NOT NULL,
        last_step INTEGER NOT NULL DEFAULT -1,
        next_checkpoint INTEGER NOT NULL DEFAULT 0
    )""",
    "CREATE INDEX tasks_by_created ON tasks (created_ts)",
    "CREATE INDEX tasks_by_status ON tasks (status, created_ts)",
    # ``created`` keeps the order sessions were stored in, which ``sessions()`` returns.
    """CREATE TABLE sessions (
        session_id TEXT PRIMARY KEY,
        created BIGINT GENERATED ALWAYS AS IDENTITY,
        task_id TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
        next_seq INTEGER NOT NULL DEFAULT 0,
        data TEXT NOT NULL
    )""",
    "CREATE INDEX sessions_by_task ON sessions (task_id, created)",
    """CREATE TABLE steps (
        task_no BIGINT NOT NULL REFERENCES tasks (no) ON DELETE CASCADE,
        step INTEGER NOT NULL,
        session_id TEXT,
        next_checkpoint INTEGER NOT NULL,
        messages TEXT,
        checkpoint TEXT,
        ledger TEXT,
        traces TEXT,
        PRIMARY KEY (task_no, step)
    )""",
    """CREATE TABLE leases (
        task_id TEXT PRIMARY KEY,
        expires_ts DOUBLE PRECISION,
        data TEXT NOT NULL
    )""",
)

MIGRATIONS: dict[int, tuple[str, ...]] = {0: _V1}
"""``{from_version: statements}``; applying them yields ``from_version + 1``."""
