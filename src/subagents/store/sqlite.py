"""The embedded default store: one SQLite file in WAL mode.

Concurrency. One connection per store object, every use of it under one re-entrant lock, so
the event loop's thread and any helper thread are serialised in process. Across processes, WAL
lets readers run beside the one writer, writes start with ``BEGIN IMMEDIATE`` (they take the
write lock up front instead of upgrading a read lock, which could deadlock) and
``busy_timeout`` makes a writer wait for the other process instead of failing.

Durability. ``synchronous=NORMAL``: a committed step survives the process being killed; only
an operating-system crash or power cut can lose the last few steps.

Damage. A file that is not SQLite, or a truncated one, is detected when the store opens (the
header is checked by hand) or at the first query that reads a damaged page; either way the
caller gets :class:`~subagents.errors.StoreCorruptError` naming the file and how to move it
aside. One damaged record is not the whole store's damage: :meth:`SQLiteStore.scan_tasks` lists
the readable tasks and names the others, and :meth:`SQLiteStore.integrity_check` names every
record that cannot be read.

Read-only stores. A colleague's project or a mounted backup may be readable but not writable.
Reading a WAL database needs its ``-shm`` index beside it, which SQLite creates when it is
missing: that needs a writable folder. So when the store cannot be opened for writing it is
opened read-only (``mode=ro``), and when even that fails because the ``-wal`` / ``-shm`` files
cannot be created, as ``immutable=1`` (no locks, no index; only safe because, without a
``-wal`` file, every committed change is in the main file). A non-empty ``-wal`` with no way to
index it cannot be read faithfully, so that case is refused with a way out. Reading works in
every read-only mode; every write raises a :class:`~subagents.errors.StoreError` naming the file
and what to do.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar, get_args

from pydantic import BaseModel

from subagents.errors import StoreCorruptError, StoreError, StoreVersionError
from subagents.store.base import (
    StepWrite,
    StoredMessage,
    TaskBundle,
    TaskOwner,
    TaskScan,
    UnreadableTask,
)
from subagents.store.codec import (
    UPGRADE_ADVICE,
    dump_json,
    dump_record,
    load_json,
    load_record,
)
from subagents.store.location import default_store_path
from subagents.store.records import (
    CheckpointRecord,
    SessionRecord,
    TaskRecord,
    TaskStatus,
    ToolLedgerEntry,
    TraceRecord,
)
from subagents.store.schema import MIGRATIONS, STORE_SCHEMA_VERSION

__all__ = ["BUSY_TIMEOUT_SECONDS", "MIN_ID_PREFIX", "SQLiteStore", "open_store"]

BUSY_TIMEOUT_SECONDS = 10.0
MIN_ID_PREFIX = 4
"""A task may be named by a unique prefix of its id this long or longer, as in git."""

_TASK_STATUSES: tuple[str, ...] = get_args(TaskStatus)
_SQLITE_MAGIC = b"SQLite format 3\x00"
_SQLITE_BUSY, _SQLITE_LOCKED, _SQLITE_READONLY = 5, 6, 8
_SQLITE_CORRUPT, _SQLITE_FULL, _SQLITE_CANTOPEN, _SQLITE_NOTADB = 11, 13, 14, 26
_SQLITE_READONLY_DIRECTORY = _SQLITE_READONLY | (6 << 8)
_CLOSED_HINT = "open it again with subagents.store.open_store()"
_RECORD_TABLES = (
    ("sessions", "session_id", SessionRecord, "session"),
    ("checkpoints", "task_id", CheckpointRecord, "a checkpoint of task"),
    ("ledger", "tool_call_id", ToolLedgerEntry, "the ledger entry of tool call"),
    ("traces", "task_id", TraceRecord, "a trace record of task"),
)

RecordT = TypeVar("RecordT", bound=BaseModel)

_UPSERT_TASK = (
    "INSERT INTO tasks (id, status, parent_task_id, created_ts, data) VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT (id) DO UPDATE SET status = excluded.status, "
    "parent_task_id = excluded.parent_task_id, created_ts = excluded.created_ts, "
    "data = excluded.data"
)
_INSERT_TASK = (
    "INSERT INTO tasks (id, status, parent_task_id, created_ts, data) VALUES (?, ?, ?, ?, ?)"
)
_UPDATE_TASK = (
    "UPDATE tasks SET status = ?, parent_task_id = ?, created_ts = ?, data = ? WHERE id = ?"
)
_UPSERT_SESSION = (
    "INSERT INTO sessions (session_id, task_id, data) VALUES (?, ?, ?) "
    "ON CONFLICT (session_id) DO UPDATE SET data = excluded.data "
    "WHERE sessions.task_id = excluded.task_id"
)
_LAST_MESSAGE_SEQ = "SELECT max(seq) FROM messages WHERE session_id = ?"
_INSERT_MESSAGE = "INSERT INTO messages (session_id, seq, data) VALUES (?, ?, ?)"
_LAST_CHECKPOINT_SEQUENCE = "SELECT max(sequence) FROM checkpoints WHERE task_id = ?"
_INSERT_CHECKPOINT = (
    "INSERT INTO checkpoints (task_id, sequence, session_id, checkpoint_id, data) "
    "VALUES (?, ?, ?, ?, ?)"
)
_UPSERT_LEDGER = (
    "INSERT INTO ledger (task_id, session_id, tool_call_id, data) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (task_id, session_id, tool_call_id) DO UPDATE SET data = excluded.data"
)
_INSERT_TRACE = "INSERT INTO traces (task_id, data) VALUES (?, ?)"
_SET_META = (
    "INSERT INTO meta (key, value) VALUES (?, ?) "
    "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
)


class SQLiteStore:
    """The :class:`~subagents.store.base.Store` on one SQLite file (created when missing)."""

    def __init__(self, path: Path | str, *, read_only: bool = False) -> None:
        """Open the store at ``path``, creating it when missing. A store that cannot be
        written here is opened read-only (see the module docstring); ``read_only=True`` opens
        it so in any case (it must exist then)."""
        self._path = Path(path).expanduser().absolute()
        self._lock = threading.RLock()
        self._read_only: str | None = None
        """Why the store cannot be written here, or None when it can."""
        self._connection: sqlite3.Connection | None = (
            self._connect_read_only("it was opened read-only") if read_only else self._connect()
        )

    # -- opening -----------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise StoreError(
                f"cannot create the directory {self._path.parent} ({error.strerror or error})",
                hint="check its permissions, or choose another store path",
            ) from None
        _check_file(self._path, self._corrupt)
        try:
            connection = sqlite3.connect(
                self._path,
                timeout=BUSY_TIMEOUT_SECONDS,
                isolation_level=None,
                check_same_thread=False,
            )
        except sqlite3.Error as error:
            raise self._translate(error) from error
        try:
            connection.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_SECONDS * 1000)}")
            connection.execute("PRAGMA journal_mode = WAL")
            connection.execute("PRAGMA synchronous = NORMAL")
            connection.execute("PRAGMA foreign_keys = ON")
            self._prepare_schema(connection)
        except BaseException as error:
            connection.close()
            if isinstance(error, sqlite3.Error):
                if _not_writable(error) and self._path.is_file():
                    return self._connect_read_only(self._why_not_writable(error))
                raise self._translate(error) from error
            raise
        return connection

    def _connect_read_only(self, reason: str) -> sqlite3.Connection:
        """A connection that never writes: ``mode=ro``, else ``immutable=1`` when SQLite
        cannot create the ``-shm`` index it needs and no ``-wal`` holds changes."""
        if not self._path.is_file():
            raise StoreError(
                f"no store at {self._path} to open read-only",
                hint="run a task first ('subagents run'), or name the store with --store",
            )
        _check_file(self._path, self._corrupt)
        self._read_only = reason
        try:
            return self._open_uri("mode=ro")
        except sqlite3.Error as error:
            if not _not_writable(error):
                raise self._translate(error) from error
            wal = Path(f"{self._path}-wal")
            if wal.exists() and wal.stat().st_size > 0:
                raise self._unindexable_log(wal) from error
        try:
            return self._open_uri("mode=ro&immutable=1")
        except sqlite3.Error as error:
            raise self._translate(error) from error

    def _open_uri(self, parameters: str) -> sqlite3.Connection:
        connection = sqlite3.connect(
            f"{self._path.as_uri()}?{parameters}",
            uri=True,
            timeout=BUSY_TIMEOUT_SECONDS,
            isolation_level=None,
            check_same_thread=False,
        )
        try:
            connection.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_SECONDS * 1000)}")
            version = self._schema_version(connection)  # the first read: may refuse the open
        except BaseException:
            connection.close()
            raise
        if version != STORE_SCHEMA_VERSION:
            connection.close()
            raise StoreError(
                f"{self._path} is read-only here and its schema (version {version}) needs an "
                f"upgrade to version {STORE_SCHEMA_VERSION} before this subagents can read it",
                hint="open it once where it is writable (any subagents command upgrades it)",
            )
        return connection

    def _why_not_writable(self, error: sqlite3.Error) -> str:
        code = getattr(error, "sqlite_errorcode", None)
        if code == _SQLITE_READONLY_DIRECTORY:
            return f"its folder {self._path.parent} is not writable"
        if isinstance(code, int) and code & 0xFF == _SQLITE_CANTOPEN:
            return f"SQLite cannot create its -wal and -shm files in {self._path.parent}"
        return "the file is not writable"

    def _unindexable_log(self, wal: Path) -> StoreError:
        return StoreError(
            f"{self._path} cannot be read here: its write-ahead log {wal} holds changes, and "
            f"SQLite needs to create {self._path}-shm beside it to read them, but the folder "
            f"{self._path.parent} is not writable",
            hint=f"copy the store with its log to a writable folder (cp {self._path} {wal} "
            "DIR/) and name the copy with --store DIR/" + self._path.name,
        )

    @property
    def read_only(self) -> bool:
        """Whether this store refuses writes (the file or its folder is not writable here)."""
        return self._read_only is not None

    def _refuse_writes(self, reason: str) -> StoreError:
        return StoreError(
            f"{self._path} is read-only here ({reason}), and this needs to write to it",
            hint="reading commands (tasks list, tasks show, trace, export) work on it; to run "
            "or change tasks, make the file and its folder writable, or copy the store to a "
            f"writable folder (cp {self._path} DIR/) and name the copy with --store",
        )

    def _prepare_schema(self, connection: sqlite3.Connection) -> None:
        if self._schema_version(connection) == STORE_SCHEMA_VERSION:
            return
        connection.execute("BEGIN IMMEDIATE")
        try:
            # Read again under the write lock: another process may have migrated meanwhile.
            version = self._schema_version(connection)
            while version < STORE_SCHEMA_VERSION:
                for statement in MIGRATIONS[version]:
                    connection.execute(statement)
                version += 1
            connection.execute(_SET_META, ("schema_version", str(version)))
            connection.execute("COMMIT")
        except BaseException:
            _quietly(connection, "ROLLBACK")
            raise

    def _schema_version(self, connection: sqlite3.Connection) -> int:
        tables = {
            row[0]
            for row in connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )
        }
        if "meta" not in tables:
            if tables:
                raise StoreError(
                    f"{self._path} is an SQLite database but not a subagents store "
                    f"(it holds the table(s) {', '.join(sorted(tables))})",
                    hint="use another store path, or move that file aside",
                )
            return 0
        row = connection.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        try:
            version = int(row[0]) if row is not None else -1
        except ValueError:
            version = -1
        if version < 0:
            raise self._corrupt("its schema version is missing")
        if version > STORE_SCHEMA_VERSION:
            raise StoreVersionError(
                f"{self._path}: this database was written by a newer subagents "
                f"(schema {version}; this one knows up to {STORE_SCHEMA_VERSION})",
                hint=UPGRADE_ADVICE,
            )
        return version

    # -- plumbing ----------------------------------------------------------------------------

    @property
    def path(self) -> Path:
        return self._path

    @property
    def location(self) -> str:
        return str(self._path)

    def __repr__(self) -> str:
        return f"SQLiteStore({str(self._path)!r})"

    def __enter__(self) -> SQLiteStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            connection, self._connection = self._connection, None
            if connection is not None:
                connection.close()

    @contextmanager
    def _use(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            connection = self._connection
            if connection is None:
                raise StoreError(f"the store {self._path} is closed", hint=_CLOSED_HINT)
            try:
                yield connection
            except sqlite3.Error as error:
                raise self._translate(error) from error

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; a savepoint when inside :meth:`transaction`."""
        if self._read_only is not None:
            raise self._refuse_writes(self._read_only)
        with self._use() as connection:
            if connection.in_transaction:
                connection.execute("SAVEPOINT step")
                try:
                    yield connection
                except BaseException:
                    _quietly(connection, "ROLLBACK TO step")
                    _quietly(connection, "RELEASE step")
                    raise
                connection.execute("RELEASE step")
                return
            connection.execute("BEGIN IMMEDIATE")
            try:
                yield connection
                connection.execute("COMMIT")
            except BaseException:
                _quietly(connection, "ROLLBACK")
                raise

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """Several reads that see one consistent snapshot."""
        with self._use() as connection:
            if connection.in_transaction:
                yield connection
                return
            connection.execute("BEGIN")
            try:
                yield connection
            finally:
                _quietly(connection, "ROLLBACK")

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Group several :meth:`commit` calls into one transaction (all or nothing).

        Hold it only for synchronous code: it keeps the store locked, so do not ``await``
        inside it.
        """
        with self._write():
            yield

    def _translate(self, error: sqlite3.Error) -> StoreError:
        code = getattr(error, "sqlite_errorcode", None)
        primary = code & 0xFF if isinstance(code, int) else None
        text = str(error)
        if primary in (_SQLITE_CORRUPT, _SQLITE_NOTADB) or "malformed" in text:
            return self._corrupt(text)
        if primary in (_SQLITE_BUSY, _SQLITE_LOCKED):
            return StoreError(
                f"{self._path} stayed locked by another process for over "
                f"{BUSY_TIMEOUT_SECONDS:g} s ({text})",
                hint="wait for the other subagents process to finish, or stop it, and run again",
            )
        if primary == _SQLITE_READONLY:
            return self._refuse_writes(self._read_only or f"SQLite refused to write: {text}")
        if primary == _SQLITE_CANTOPEN:
            return StoreError(
                f"cannot open {self._path} ({text})",
                hint="check that its directory exists and is writable",
            )
        if primary == _SQLITE_FULL:
            return StoreError(f"{self._path}: the disk is full", hint="free some space and retry")
        return StoreError(
            f"{self._path}: database error ({text})",
            hint="run 'subagents tasks check' to examine the store",
        )

    def _corrupt(self, detail: str) -> StoreCorruptError:
        moves = [f"mv {self._path} {self._path}.corrupt"]
        for suffix in ("-wal", "-shm"):
            companion = Path(f"{self._path}{suffix}")
            if companion.exists():
                moves.append(f"mv {companion} {self._path}.corrupt{suffix}")
        return StoreCorruptError(
            f"{self._path} is not a readable subagents database ({detail})",
            hint=f"move it aside ({'; '.join(moves)}) and run again; "
            "'subagents export' cannot read it",
        )

    def _refused(
        self, connection: sqlite3.Connection, error: sqlite3.IntegrityError, task_id: str
    ) -> StoreError:
        text = str(error)
        if "FOREIGN KEY" in text:
            if connection.execute("SELECT 1 FROM tasks WHERE id = ?", (task_id,)).fetchone():
                return StoreError(
                    f"a message of task {task_id} belongs to a session that is not stored",
                    hint="put the session record in the StepWrite of its first messages",
                )
            return StoreError(
                f"no task {task_id} in {self._path}",
                hint="create the task with create_task() before writing its steps",
            )
        if "sessions.session_id" in text:
            return StoreError(
                f"a session id of task {task_id} belongs to another task",
                hint="give every session a fresh id",
            )
        return StoreError(
            f"{self._path}: the write for task {task_id} was refused ({text})",
            hint="check the records written; nothing of this step was stored",
        )

    def _decode(self, cls: type[RecordT], text: str, what: str) -> RecordT:
        return load_record(cls, text, where=f"{what} in {self._path}")

    # -- tasks -------------------------------------------------------------------------------

    def create_task(self, task: TaskRecord) -> None:
        row = _task_row(task)
        with self._write() as connection:
            try:
                connection.execute(_INSERT_TASK, row)
            except sqlite3.IntegrityError:
                raise StoreError(
                    f"task {task.id} already exists in {self._path}",
                    hint="use update_task() to change it, or create a task with a new id",
                ) from None

    def get_task(self, task_id: str) -> TaskRecord:
        with self._use() as connection:
            row = connection.execute("SELECT data FROM tasks WHERE id = ?", (task_id,)).fetchone()
            if row is None and len(task_id) >= MIN_ID_PREFIX:
                matches = connection.execute(
                    "SELECT id, data FROM tasks WHERE substr(id, 1, ?) = ? ORDER BY id LIMIT 6",
                    (len(task_id), task_id),
                ).fetchall()
                if len(matches) > 1:
                    shown = ", ".join(match[0] for match in matches[:5])
                    raise StoreError(
                        f"the task id prefix {task_id!r} matches several tasks ({shown})",
                        hint="give more characters of the id (see 'subagents tasks list')",
                    )
                row = (matches[0][1],) if matches else None
        if row is None:
            raise StoreError(
                f"no task {task_id!r} in {self._path}",
                hint="run 'subagents tasks list' to see the task ids",
            )
        return self._decode(TaskRecord, row[0], f"task {task_id}")

    def list_tasks(self, *, status: str | None = None, limit: int | None = 100) -> list[TaskRecord]:
        sql, parameters = _task_query(status, limit)
        with self._use() as connection:
            rows = connection.execute(sql, parameters).fetchall()
        return [self._decode(TaskRecord, data, f"task {task_id}") for task_id, data in rows]

    def scan_tasks(self, *, status: str | None = None, limit: int | None = 100) -> TaskScan:
        sql, parameters = _task_query(status, limit)
        with self._use() as connection:
            rows = connection.execute(sql, parameters).fetchall()
        scan = TaskScan()
        for task_id, data in rows:
            try:
                scan.tasks.append(load_record(TaskRecord, data, where="its record"))
            except StoreError as error:  # damaged, or written by a newer subagents
                scan.unreadable.append(UnreadableTask(str(task_id), error.message))
        return scan

    def update_task(self, task: TaskRecord) -> None:
        row = _task_row(task)
        with self._write() as connection:
            cursor = connection.execute(_UPDATE_TASK, (*row[1:], row[0]))
            if cursor.rowcount == 0:
                raise StoreError(
                    f"no task {task.id} in {self._path}",
                    hint="create it with create_task() first",
                )

    def delete_task(self, task_id: str) -> None:
        """Remove the task (exact id) and everything of it; a missing task is not an error."""
        with self._write() as connection:
            connection.execute("DELETE FROM tasks WHERE id = ?", (task_id,))

    # -- steps -------------------------------------------------------------------------------

    def commit(self, step: StepWrite) -> CheckpointRecord | None:
        task_id = step.task_id
        # Encode before taking the lock: another thread may use the store meanwhile.
        task_row = None
        if step.task is not None:
            _require_owner(task_id, step.task.id, "the task record")
            task_row = _task_row(step.task)
        session_row = None
        if step.session is not None:
            _require_owner(task_id, step.session.task_id, "the session")
            session_row = (step.session.session_id, task_id, dump_record(step.session))
        message_rows = _message_rows(step.messages)
        checkpoint = step.checkpoint
        if checkpoint is not None:
            _require_owner(task_id, checkpoint.task_id, "the checkpoint")
        ledger_rows = _ledger_rows(task_id, step.ledger)
        trace_rows = _trace_rows(task_id, step.traces)

        saved = None
        with self._write() as connection:
            try:
                if task_row is not None:
                    connection.execute(_UPSERT_TASK, task_row)
                if session_row is not None:
                    connection.execute(_UPSERT_SESSION, session_row)
                if message_rows:
                    self._append_messages(connection, message_rows)
                if checkpoint is not None:
                    saved = _insert_checkpoint(connection, task_id, checkpoint)
                if ledger_rows:
                    connection.executemany(_UPSERT_LEDGER, ledger_rows)
                if trace_rows:
                    connection.executemany(_INSERT_TRACE, trace_rows)
            except sqlite3.IntegrityError as error:
                raise self._refused(connection, error, task_id) from error
        return saved

    def _append_messages(
        self, connection: sqlite3.Connection, rows: Sequence[tuple[str, int, str]]
    ) -> None:
        following: dict[str, int] = {}
        for session_id, seq, _ in rows:
            expected = following.get(session_id)
            if expected is None:
                (last,) = connection.execute(_LAST_MESSAGE_SEQ, (session_id,)).fetchone()
                expected = 0 if last is None else last + 1
            if seq < expected:
                raise StoreError(
                    f"message {seq} of session {session_id} is already stored "
                    f"(messages are append-only; the next seq is {expected})",
                    hint="append new messages with the next seq instead of rewriting history",
                )
            if seq > expected:
                raise StoreError(
                    f"message {seq} of session {session_id} would leave a gap "
                    f"(the next seq is {expected})",
                    hint="commit every message of the session, in order",
                )
            following[session_id] = seq + 1
        connection.executemany(_INSERT_MESSAGE, rows)

    # -- reading a task's records -------------------------------------------------------------

    def get_session(self, session_id: str) -> SessionRecord:
        with self._use() as connection:
            row = connection.execute(
                "SELECT data FROM sessions WHERE session_id = ?", (session_id,)
            ).fetchone()
        if row is None:
            raise StoreError(
                f"no session {session_id!r} in {self._path}",
                hint="run 'subagents tasks show TASK' to see a task's sessions",
            )
        return self._decode(SessionRecord, row[0], f"session {session_id}")

    def sessions(self, task_id: str) -> list[SessionRecord]:
        with self._use() as connection:
            rows = connection.execute(
                "SELECT session_id, data FROM sessions WHERE task_id = ? ORDER BY rowid",
                (task_id,),
            ).fetchall()
        return [self._decode(SessionRecord, data, f"session {sid}") for sid, data in rows]

    def messages(self, session_id: str) -> list[dict[str, Any]]:
        with self._use() as connection:
            rows = connection.execute(
                "SELECT seq, data FROM messages WHERE session_id = ? ORDER BY seq", (session_id,)
            ).fetchall()
        where = f"a message of session {session_id} in {self._path}"
        return [_message(load_json(data, where=where), where) for _, data in rows]

    def latest_checkpoint(
        self, task_id: str, session_id: str | None = None
    ) -> CheckpointRecord | None:
        sql = "SELECT data FROM checkpoints WHERE task_id = ?"
        parameters: tuple[str, ...] = (task_id,)
        if session_id is not None:
            sql += " AND session_id = ?"
            parameters = (task_id, session_id)
        with self._use() as connection:
            row = connection.execute(f"{sql} ORDER BY sequence DESC LIMIT 1", parameters).fetchone()
        if row is None:
            return None
        return self._decode(CheckpointRecord, row[0], f"a checkpoint of task {task_id}")

    def checkpoints(self, task_id: str) -> list[CheckpointRecord]:
        with self._use() as connection:
            rows = connection.execute(
                "SELECT data FROM checkpoints WHERE task_id = ? ORDER BY sequence", (task_id,)
            ).fetchall()
        what = f"a checkpoint of task {task_id}"
        return [self._decode(CheckpointRecord, data, what) for (data,) in rows]

    def ledger(self, task_id: str, session_id: str | None = None) -> list[ToolLedgerEntry]:
        sql = "SELECT data FROM ledger WHERE task_id = ?"
        parameters: tuple[str, ...] = (task_id,)
        if session_id is not None:
            sql += " AND session_id = ?"
            parameters = (task_id, session_id)
        with self._use() as connection:
            rows = connection.execute(f"{sql} ORDER BY rowid", parameters).fetchall()
        what = f"a ledger entry of task {task_id}"
        return [self._decode(ToolLedgerEntry, data, what) for (data,) in rows]

    def traces(self, task_id: str) -> list[TraceRecord]:
        with self._use() as connection:
            rows = connection.execute(
                "SELECT data FROM traces WHERE task_id = ? ORDER BY id", (task_id,)
            ).fetchall()
        what = f"a trace record of task {task_id}"
        return [self._decode(TraceRecord, data, what) for (data,) in rows]

    # -- whole tasks (export / import) --------------------------------------------------------

    def load_bundle(self, task_id: str) -> TaskBundle:
        with self._read():
            task = self.get_task(task_id)
            sessions = self.sessions(task.id)
            messages = {
                session.session_id: self.messages(session.session_id) for session in sessions
            }
            return TaskBundle(
                task=task,
                sessions=sessions,
                messages=messages,
                checkpoints=self.checkpoints(task.id),
                ledger=self.ledger(task.id),
                traces=self.traces(task.id),
            )

    def restore_bundle(self, bundle: TaskBundle, *, replace: bool = False) -> None:
        task_id = bundle.task.id
        for session in bundle.sessions:
            _require_owner(task_id, session.task_id, "a session")
        for checkpoint in bundle.checkpoints:
            _require_owner(task_id, checkpoint.task_id, "a checkpoint")
        checkpoints = sorted(bundle.checkpoints, key=lambda checkpoint: checkpoint.sequence)
        session_rows = [(s.session_id, task_id, dump_record(s)) for s in bundle.sessions]
        message_rows = _message_rows(
            [
                (session_id, seq, message)
                for session_id, messages in bundle.messages.items()
                for seq, message in enumerate(messages)
            ],
        )
        checkpoint_rows = [
            (task_id, c.sequence, c.session_id, c.checkpoint_id, dump_record(c))
            for c in checkpoints
        ]
        ledger_rows = _ledger_rows(task_id, bundle.ledger)
        trace_rows = _trace_rows(task_id, bundle.traces)
        with self._write() as connection:
            exists = connection.execute("SELECT 1 FROM tasks WHERE id = ?", (task_id,)).fetchone()
            if exists is not None:
                if not replace:
                    raise StoreError(
                        f"task {task_id} already exists in {self._path}",
                        hint="import with --replace (replace=True) to overwrite it",
                    )
                connection.execute("DELETE FROM tasks WHERE id = ?", (task_id,))
            try:
                connection.execute(_INSERT_TASK, _task_row(bundle.task))
                connection.executemany(
                    "INSERT INTO sessions (session_id, task_id, data) VALUES (?, ?, ?)",
                    session_rows,
                )
                connection.executemany(_INSERT_MESSAGE, message_rows)
                connection.executemany(_INSERT_CHECKPOINT, checkpoint_rows)
                connection.executemany(_UPSERT_LEDGER, ledger_rows)
                connection.executemany(_INSERT_TRACE, trace_rows)
            except sqlite3.IntegrityError as error:
                raise self._refused(connection, error, task_id) from error

    # -- metadata ----------------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        with self._use() as connection:
            row = connection.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        if key == "schema_version":
            raise StoreError(
                "the store's schema_version is managed by the store itself",
                hint="choose another meta key",
            )
        with self._write() as connection:
            connection.execute(_SET_META, (key, value))

    def claim_periodic(self, name: str, *, every: timedelta, now: datetime) -> bool:
        key = f"periodic.{name}"
        now = now if now.tzinfo is not None else now.replace(tzinfo=UTC)
        with self._write() as connection:
            row = connection.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
            last = _parse_time(row[0]) if row is not None else None
            # A recorded time in the future (the clock was set back) does not block forever.
            if last is not None and last <= now < last + every:
                return False
            connection.execute(_SET_META, (key, now.isoformat()))
        return True

    # -- task ownership ----------------------------------------------------------------------

    def claim_task(
        self, task_id: str, owner: TaskOwner, *, force: bool = False
    ) -> TaskOwner | None:
        key = f"owner.{task_id}"
        with self._write() as connection:
            row = connection.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
            current = _owner(row[0]) if row is not None else None
            if current is not None and current != owner and not force and current.is_alive():
                return current
            value = json.dumps({"host": owner.host, "pid": owner.pid, "token": owner.token})
            connection.execute(_SET_META, (key, value))
        return None

    def release_task(self, task_id: str, owner: TaskOwner) -> None:
        key = f"owner.{task_id}"
        with self._write() as connection:
            row = connection.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
            if row is not None and _owner(row[0]) == owner:
                connection.execute("DELETE FROM meta WHERE key = ?", (key,))

    # -- health ------------------------------------------------------------------------------

    def integrity_check(self) -> list[str]:
        problems: list[str] = []
        with self._read() as connection:
            try:
                problems.extend(_sqlite_problems(connection))
                problems.extend(_invariant_problems(connection))
                problems.extend(_record_problems(connection))
            except sqlite3.DatabaseError as error:
                problems.append(f"sqlite: {error}")
        return problems


def open_store(
    path: Path | None = None, *, cwd: Path | None = None, read_only: bool = False
) -> SQLiteStore:
    """Open (creating when missing) the store at ``path``, else the default location for
    ``cwd`` (see :mod:`subagents.store.location`); ``read_only`` as for :class:`SQLiteStore`."""
    return SQLiteStore(path if path is not None else default_store_path(cwd), read_only=read_only)


def _check_file(path: Path, corrupt: Callable[[str], StoreCorruptError]) -> None:
    """Refuse a file that is not SQLite, or that is shorter than its header says."""
    try:
        size = path.stat().st_size
        if size == 0 or path.is_dir():
            return
        with path.open("rb") as handle:
            header = handle.read(100)
    except OSError:
        return  # let sqlite report what it cannot open
    if not header.startswith(_SQLITE_MAGIC):
        raise corrupt("it is not an SQLite database")
    if len(header) < 100:
        raise corrupt(f"the file is truncated to {size} bytes")
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    if page_size < 512 or page_size & (page_size - 1):
        raise corrupt(f"its header is damaged (page size {page_size})")
    pages = int.from_bytes(header[28:32], "big")
    header_size_valid = pages > 0 and header[24:28] == header[92:96]
    # While a -wal (or -journal) file exists another process may be writing pages into the
    # file, which can be briefly shorter than its header says; only a quiet file is judged.
    quiet = not any(Path(f"{path}{suffix}").exists() for suffix in ("-wal", "-journal"))
    if header_size_valid and quiet and size < pages * page_size:
        raise corrupt(f"the file is truncated: {size} bytes, its header says {pages * page_size}")


def _task_query(status: str | None, limit: int | None) -> tuple[str, list[Any]]:
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


def _not_writable(error: sqlite3.Error) -> bool:
    """Whether SQLite failed because it may not write the file or create files beside it."""
    code = getattr(error, "sqlite_errorcode", None)
    return isinstance(code, int) and code & 0xFF in (_SQLITE_READONLY, _SQLITE_CANTOPEN)


def _insert_checkpoint(
    connection: sqlite3.Connection, task_id: str, checkpoint: CheckpointRecord
) -> CheckpointRecord:
    # Inside the write transaction, so two processes never hand out the same sequence.
    (last,) = connection.execute(_LAST_CHECKPOINT_SEQUENCE, (task_id,)).fetchone()
    saved = checkpoint.model_copy(update={"sequence": 0 if last is None else last + 1})
    connection.execute(
        _INSERT_CHECKPOINT,
        (task_id, saved.sequence, saved.session_id, saved.checkpoint_id, dump_record(saved)),
    )
    return saved


def _owner(value: str) -> TaskOwner | None:
    try:
        data = json.loads(value)
        return TaskOwner(str(data["host"]), int(data["pid"]), str(data["token"]))
    except (ValueError, KeyError, TypeError):
        return None  # unreadable: nobody can be shown to hold the task


def _quietly(connection: sqlite3.Connection, statement: str) -> None:
    with suppress(sqlite3.Error):
        connection.execute(statement)


def _require_owner(task_id: str, owner: str, what: str) -> None:
    if owner != task_id:
        raise StoreError(
            f"{what} belongs to task {owner}, not to task {task_id} being written",
            hint="write each task's records in its own StepWrite",
        )


def _task_row(task: TaskRecord) -> tuple[str, str, str | None, float, str]:
    return (
        task.id,
        task.status,
        task.parent_task_id,
        task.created_at.timestamp(),
        dump_record(task),
    )


def _message_rows(messages: Iterable[StoredMessage]) -> list[tuple[str, int, str]]:
    rows = []
    for session_id, seq, message in messages:
        try:
            rows.append((session_id, seq, dump_json(message)))
        except (TypeError, ValueError) as error:
            raise StoreError(
                f"cannot store message {seq} of session {session_id}: {error}",
                hint="store messages as dicts of JSON values "
                "(subagents.messages.message_to_dict makes them)",
            ) from None
    return rows


def _ledger_rows(
    task_id: str, entries: Iterable[ToolLedgerEntry]
) -> list[tuple[str, str, str, str]]:
    rows = []
    for entry in entries:
        _require_owner(task_id, entry.task_id, "a ledger entry")
        rows.append((task_id, entry.session_id, entry.tool_call_id, dump_record(entry)))
    return rows


def _trace_rows(task_id: str, traces: Iterable[TraceRecord]) -> list[tuple[str, str]]:
    rows = []
    for trace in traces:
        _require_owner(task_id, trace.task_id, "a trace record")
        rows.append((task_id, dump_record(trace)))
    return rows


def _message(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise StoreCorruptError(
            f"{where} is not a JSON object",
            hint="export the other tasks with 'subagents export', or move the store aside",
        )
    return value


def _parse_time(text: str) -> datetime | None:
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        return None
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def _sqlite_problems(connection: sqlite3.Connection) -> list[str]:
    rows = [str(row[0]) for row in connection.execute("PRAGMA integrity_check")]
    problems = [f"sqlite: {row}" for row in rows if row != "ok"]
    problems.extend(
        f"sqlite: a row of {table} (rowid {rowid}) points at a missing {parent}"
        for table, rowid, parent, _ in connection.execute("PRAGMA foreign_key_check")
    )
    return problems


def _invariant_problems(connection: sqlite3.Connection) -> list[str]:
    problems = [
        f"task {task_id}: checkpoint sequence {sequence} follows {previous} (not increasing)"
        for task_id, sequence, previous in connection.execute(
            "SELECT task_id, sequence, previous FROM ("
            "  SELECT task_id, sequence,"
            "         lag(sequence) OVER (PARTITION BY task_id ORDER BY rowid) AS previous"
            "  FROM checkpoints"
            ") WHERE previous IS NOT NULL AND sequence <= previous"
        )
    ]
    problems.extend(
        f"session {session_id}: message seqs are not contiguous from 0 "
        f"({count} messages, seq {first} to {last})"
        for session_id, count, first, last in connection.execute(
            "SELECT session_id, count(*), min(seq), max(seq) FROM messages "
            "GROUP BY session_id HAVING min(seq) != 0 OR max(seq) != count(*) - 1"
        )
    )
    return problems


def _record_problems(connection: sqlite3.Connection) -> list[str]:
    """Every stored record that cannot be read, by table, with the reason."""
    problems = [
        f"task {task_id}: {reason}"
        for task_id, reason in _unreadable(connection, "tasks", "id", TaskRecord)
    ]
    for table, key, record, what in _RECORD_TABLES:
        problems.extend(
            f"{what} {owner}: {reason}"
            for owner, reason in _unreadable(connection, table, key, record)
        )
    for session_id, seq, data in connection.execute("SELECT session_id, seq, data FROM messages"):
        try:
            _message(load_json(data, where="its JSON"), "it")
        except StoreError as error:
            problems.append(f"message {seq} of session {session_id}: {error.message}")
    return problems


def _unreadable(
    connection: sqlite3.Connection, table: str, key: str, record: type[BaseModel]
) -> Iterator[tuple[str, str]]:
    for owner, data in connection.execute(f"SELECT {key}, data FROM {table}"):
        try:
            load_record(record, data, where="its record")
        except StoreError as error:
            yield str(owner), error.message
