"""``SQLiteStore``: the :class:`~subagents.store.base.Store` on one SQLite file."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from pydantic import BaseModel

from subagents.errors import StoreError
from subagents.store.base import (
    DEFAULT_LEASE_TTL,
    StepWrite,
    TaskBundle,
    TaskLease,
    TaskOwner,
    TaskScan,
    Transaction,
    UnreadableTask,
)
from subagents.store.codec import load_record
from subagents.store.lease import aware, lease_lost
from subagents.store.records import (
    CheckpointRecord,
    SessionRecord,
    TaskRecord,
    ToolLedgerEntry,
    TraceRecord,
)
from subagents.store.shared import (
    MIN_ID_PREFIX,
    appended,
    chosen_task,
    encode_bundle,
    encode_step,
    periodic_due,
    task_query,
    task_row,
)
from subagents.store.sqlite import health
from subagents.store.sqlite.connection import Database, SQLiteTransaction
from subagents.store.sqlite.leases import (
    claim_free_or_own,
    delete_lease,
    read_lease,
    write_lease,
)
from subagents.store.sqlite.rows import (
    INSERT_TASK,
    SET_META,
    TASK_NUMBER,
    UPDATE_TASK,
    UPSERT_SESSION,
    UPSERT_TASK,
)
from subagents.store.sqlite.steps import (
    INSERT_STEP,
    SESSION_OF_ANOTHER_TASK,
    StaleTail,
    Tail,
    append_rows,
    new_task_tail,
    read_tail,
    task_range,
)
from subagents.store.steplog import (
    EncodedStep,
    StepRow,
    checkpoint_records,
    ledger_records,
    message_values,
    task_not_stored,
    trace_records,
)

__all__ = ["MIN_ID_PREFIX", "SQLiteStore"]


RecordT = TypeVar("RecordT", bound=BaseModel)
T = TypeVar("T")


class SQLiteStore:
    """The :class:`~subagents.store.base.Store` on one SQLite file (created when missing)."""

    def __init__(self, path: Path | str, *, read_only: bool = False) -> None:
        """Open the store at ``path``, creating it when missing. A store that cannot be
        written here is opened read-only (see :mod:`subagents.store.sqlite`);
        ``read_only=True`` opens it so in any case (it must exist then)."""
        self._db = Database(path, read_only=read_only)
        self._path = self._db.path
        self._tails: dict[str, Tail] = {}
        """Where the log of each task this store wrote ends (see :meth:`append`)."""
        self._open: list[set[str]] = []
        """The transactions of :meth:`transaction` open on this thread, innermost last, each
        with the tasks whose kept tails its writes moved (forgotten when it rolls back)."""

    # -- plumbing ----------------------------------------------------------------------------

    @property
    def path(self) -> Path:
        return self._path

    @property
    def location(self) -> str:
        return str(self._path)

    @property
    def read_only(self) -> bool:
        """Whether this store refuses writes (the file or its folder is not writable here)."""
        return self._db.read_only_reason is not None

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
        self._db.close()

    @contextmanager
    def transaction(self, tx: Transaction | None = None) -> Iterator[SQLiteTransaction]:
        """A transaction: writes given it as ``tx`` (and every write this thread makes inside
        the block) land together when it ends, or not at all when it raises. With ``tx``, a
        savepoint inside that transaction, which rolls back alone.

        It keeps the store locked for other threads: hold it only for synchronous code, never
        across an ``await`` on the event loop that another store call may run on (the
        :class:`~subagents.store.threaded.ThreadedAsyncStore` may; it keeps the lock on its
        own thread).
        """
        touched: set[str] = set()  # the tasks whose kept tails it moved
        try:
            with self._db.transaction(tx) as handle:
                if handle.external:
                    yield handle
                    return
                self._open.append(touched)
                try:
                    yield handle
                finally:
                    self._open.pop()
        except BaseException:
            for task_id in touched:  # rolled back: the tails moved past rows that are not
                self._tails.pop(task_id, None)
            raise
        if self._open:  # a savepoint: its rows stand or fall with the transaction around it
            self._open[-1].update(touched)

    @contextmanager
    def join_transaction(self, connection: sqlite3.Connection) -> Iterator[SQLiteTransaction]:
        """Let the store's writes join a transaction its caller owns on ``connection`` (to
        this same file, with ``PRAGMA foreign_keys = ON``, after ``BEGIN IMMEDIATE``): each
        write given the yielded ``tx`` is a savepoint on that connection, and lands when the
        caller commits. The store never commits or rolls it back."""
        with self._db.join(connection) as handle:
            yield handle

    def _decode(self, cls: type[RecordT], text: str, what: str) -> RecordT:
        return load_record(cls, text, where=f"{what} in {self._path}")

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
            return task_not_stored(task_id, str(self._path))
        if "sessions.session_id" in text or text == SESSION_OF_ANOTHER_TASK:
            return StoreError(
                f"a session id of task {task_id} belongs to another task",
                hint="give every session a fresh id",
            )
        return StoreError(
            f"{self._path}: the write for task {task_id} was refused ({text})",
            hint="check the records written; nothing of this step was stored",
        )

    # -- tasks -------------------------------------------------------------------------------

    def create_task(self, task: TaskRecord, *, tx: Transaction | None = None) -> None:
        row = task_row(task)

        def insert(connection: sqlite3.Connection) -> int:
            try:
                ((task_no,),) = connection.execute(INSERT_TASK, row).fetchall()
            except sqlite3.IntegrityError:
                raise StoreError(
                    f"task {task.id} already exists in {self._path}",
                    hint="use update_task() to change it, or create a task with a new id",
                ) from None
            return int(task_no)

        task_no = self._one_statement(tx, insert)
        # where its log starts, known without reading it: kept even when the creation is in a
        # transaction that rolls back later, for the first step then finds no task numbered so
        # and reads again (see _append_rows)
        self._tails[task.id] = new_task_tail(task.id, task_no)

    def get_task(self, task_id: str) -> TaskRecord:
        with self._db.use() as connection:
            row = connection.execute("SELECT data FROM tasks WHERE id = ?", (task_id,)).fetchone()
            prefixed = []
            if row is None and len(task_id) >= MIN_ID_PREFIX:
                prefixed = connection.execute(
                    "SELECT id, data FROM tasks WHERE substr(id, 1, ?) = ? ORDER BY id LIMIT 6",
                    (len(task_id), task_id),
                ).fetchall()
        data = chosen_task(task_id, row[0] if row else None, prefixed, str(self._path))
        return self._decode(TaskRecord, data, f"task {task_id}")

    def list_tasks(self, *, status: str | None = None, limit: int | None = 100) -> list[TaskRecord]:
        sql, parameters = task_query(status, limit, mark="?", newest="rowid")
        with self._db.use() as connection:
            rows = connection.execute(sql, parameters).fetchall()
        return [self._decode(TaskRecord, data, f"task {task_id}") for task_id, data in rows]

    def scan_tasks(self, *, status: str | None = None, limit: int | None = 100) -> TaskScan:
        sql, parameters = task_query(status, limit, mark="?", newest="rowid")
        with self._db.use() as connection:
            rows = connection.execute(sql, parameters).fetchall()
        scan = TaskScan()
        for task_id, data in rows:
            try:
                scan.tasks.append(load_record(TaskRecord, data, where="its record"))
            except StoreError as error:  # damaged, or written by a newer subagents
                scan.unreadable.append(UnreadableTask(str(task_id), error.message))
        return scan

    def update_task(self, task: TaskRecord, *, tx: Transaction | None = None) -> None:
        row = task_row(task)
        parameters = (*row[1:], row[0])
        changed = self._one_statement(tx, lambda db: db.execute(UPDATE_TASK, parameters).rowcount)
        if changed == 0:
            raise StoreError(
                f"no task {task.id} in {self._path}", hint="create it with create_task() first"
            )

    def _one_statement(
        self, tx: Transaction | None, statement: Callable[[sqlite3.Connection], T]
    ) -> T:
        """``statement(connection)``, which runs one statement: a transaction of its own
        when none is open (SQLite's autocommit: a BEGIN and a COMMIT fewer), else in the
        open one or ``tx``."""
        if tx is None:
            done = self._db.run_alone(lambda connection: (statement(connection),))
            if done is not None:
                return done[0]
        with self._db.write(tx, one_change=True) as connection:
            return statement(connection)

    def delete_task(self, task_id: str) -> None:
        """Remove the task (exact id) and everything of it, its lease too; a missing task is
        not an error."""
        self._tails.pop(task_id, None)
        with self._db.write() as connection:
            _delete_task(connection, task_id)
            delete_lease(connection, task_id)

    # -- steps -------------------------------------------------------------------------------

    def commit(self, step: StepWrite, *, tx: Transaction | None = None) -> CheckpointRecord | None:
        sequence = self.append(encode_step(step), tx=tx)
        if step.checkpoint is None or sequence is None:
            return None
        return step.checkpoint.model_copy(update={"sequence": sequence})

    def append(self, step: EncodedStep, *, tx: Transaction | None = None) -> int | None:
        """:meth:`commit` of an encoded step. The tail this store keeps for the task serves
        a write that is a transaction of its own, or one inside :meth:`transaction` (which
        forgets the tails it moved when it rolls back); a write inside a transaction the
        caller owns (:meth:`join_transaction`) reads the tail afresh, and keeps none."""
        task_id = step.task_id
        alone = tx is None and not self._db.in_transaction
        kept = self._tails.pop(task_id, None)  # stale after any write that does not keep it
        riding = _riding_session(step)
        one_row = _one_row(step, riding)
        if alone and kept is not None and one_row:
            try:
                done = self._db.run_alone(lambda db: self._append_alone(db, kept, step, riding))
            except StaleTail:
                done = None  # the log moved: go the way of a transaction, from the rows
            if done is not None:
                return self._keep(kept, done[0])
        with self._db.write(tx, one_change=one_row) as connection:
            # under the store's lock: an open transaction of this store is this thread's
            scope = None if alone else self._scope(tx)
            tail = kept if alone or scope is not None else None
            try:
                if step.task is not None:
                    connection.execute(UPSERT_TASK, step.task)
                recorded = None
                if step.session is not None and riding is None:
                    stored = connection.execute(UPSERT_SESSION, step.session).rowcount
                    if stored and step.session[1] == task_id:  # not another task's session
                        recorded = step.session[0]
                if not step.rows:
                    return None
                sequence, tail = self._append_rows(
                    connection, task_id, step.rows, tail, recorded, riding
                )
            except sqlite3.IntegrityError as error:
                raise self._refused(connection, error, task_id) from error
        if scope is not None:
            scope.add(task_id)
        elif not alone:
            return sequence
        return self._keep(tail, sequence)

    def append_group(self, steps: Sequence[EncodedStep]) -> list[int | Exception | None]:
        """:meth:`append` of each of ``steps`` (a group commit's: concurrent sessions' steps)
        in one transaction, each standing or falling alone: the outcome of each, in order
        (its checkpoint's sequence, or the error that refused it). An error of the
        transaction itself (its COMMIT) is raised: then none is written.

        A step of one row whose task's tail is kept, the loop's usual step, is appended
        straight from that tail: one statement, which SQLite undoes whole if it fails, so it
        needs no savepoint, and none of :meth:`append`'s choosing between ways (a group of
        500 pays that 500 times). Any other step goes through :meth:`append`."""
        outcomes: list[int | Exception | None] = []
        with self.transaction() as tx:
            touched = self._open[-1]
            where = str(self._path)
            for step in steps:
                riding = _riding_session(step)
                tail = self._tails.get(step.task_id)
                if tail is None or not _one_row(step, riding):
                    outcomes.append(appended(self, step, tx))
                    continue
                try:
                    sequence = append_rows(tx.connection, tail, step.rows, where, session=riding)
                except StaleTail:  # the log moved: read it again, as append() does
                    self._tails.pop(step.task_id, None)
                    outcomes.append(appended(self, step, tx))
                    continue
                except sqlite3.IntegrityError as error:
                    outcomes.append(self._refused(tx.connection, error, step.task_id))
                    continue
                except sqlite3.Error as error:
                    outcomes.append(self._db.translate(error))
                    continue
                except Exception as error:  # it fails its own writer only
                    outcomes.append(error)
                    continue
                tail.fresh = False
                touched.add(step.task_id)
                outcomes.append(sequence)
        return outcomes

    def _scope(self, tx: Transaction | None) -> set[str] | None:
        """The innermost :meth:`transaction` a write joins, when it joins one of this store's
        own (not a transaction the caller owns)."""
        if not self._open or (tx is not None and self._db.own(tx).external):
            return None
        return self._open[-1]

    def _append_alone(
        self,
        connection: sqlite3.Connection,
        tail: Tail,
        step: EncodedStep,
        riding: tuple[str, str, str] | None,
    ) -> tuple[int | None]:
        """The step's one row (with ``riding``, its session's record), appended from the kept
        ``tail`` in a statement of its own: its checkpoint's sequence, in a tuple (None is the
        sequence of a step without one). StaleTail when the log has moved."""
        try:
            where = str(self._path)
            return (append_rows(connection, tail, step.rows, where, session=riding),)
        except sqlite3.IntegrityError as error:
            raise self._refused(connection, error, step.task_id) from error

    def _keep(self, tail: Tail, sequence: int | None) -> int | None:
        tail.fresh = False
        self._tails[tail.task_id] = tail  # kept once the step is committed
        return sequence

    def _append_rows(
        self,
        connection: sqlite3.Connection,
        task_id: str,
        rows: Sequence[StepRow],
        tail: Tail | None,
        recorded: str | None,
        session: tuple[str, str, str] | None,
    ) -> tuple[int | None, Tail]:
        where = str(self._path)
        for _ in range(8):
            if tail is None:
                tail = read_tail(connection, task_id, where)  # TaskNotFoundError when gone
            try:
                return append_rows(connection, tail, rows, where, recorded, session), tail
            except StaleTail:
                tail = None
        raise StoreError(
            f"{self._path}: the log of task {task_id} kept moving while this step was written",
            hint="another process writes the same task: run each task in one process at a time",
        )

    # -- reading a task's records -------------------------------------------------------------

    def get_session(self, session_id: str) -> SessionRecord:
        with self._db.use() as connection:
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
        with self._db.use() as connection:
            rows = connection.execute(
                "SELECT session_id, data FROM sessions WHERE task_id = ? ORDER BY rowid",
                (task_id,),
            ).fetchall()
        return [self._decode(SessionRecord, data, f"session {sid}") for sid, data in rows]

    def messages(self, session_id: str) -> list[dict[str, Any]]:
        with self._db.read() as connection:
            found = connection.execute(
                "SELECT task_id FROM sessions WHERE session_id = ?", (session_id,)
            ).fetchone()
            texts = [] if found is None else _column(connection, found[0], "messages", session_id)
        return message_values(texts, f"a message of session {session_id} in {self._path}")

    def latest_checkpoint(
        self, task_id: str, session_id: str | None = None
    ) -> CheckpointRecord | None:
        with self._db.read() as connection:
            texts = _column(connection, task_id, "checkpoint", session_id, latest=True)
        what = f"a checkpoint of task {task_id}"
        return checkpoint_records(texts, what)[0] if texts else None

    def checkpoints(self, task_id: str) -> list[CheckpointRecord]:
        with self._db.read() as connection:
            texts = _column(connection, task_id, "checkpoint")
        return checkpoint_records(texts, f"a checkpoint of task {task_id}")

    def ledger(self, task_id: str, session_id: str | None = None) -> list[ToolLedgerEntry]:
        with self._db.read() as connection:
            texts = _column(connection, task_id, "ledger", session_id)
        return ledger_records(texts, f"a ledger entry of task {task_id}")

    def traces(self, task_id: str) -> list[TraceRecord]:
        with self._db.read() as connection:
            texts = _column(connection, task_id, "traces")
        return trace_records(texts, f"a trace record of task {task_id}")

    # -- whole tasks (export / import) --------------------------------------------------------

    def load_bundle(self, task_id: str) -> TaskBundle:
        with self._db.read():
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
        encoded = encode_bundle(bundle)
        self._tails.pop(task_id, None)
        with self._db.write() as connection:
            exists = connection.execute("SELECT 1 FROM tasks WHERE id = ?", (task_id,)).fetchone()
            if exists is not None:
                if not replace:
                    raise StoreError(
                        f"task {task_id} already exists in {self._path}",
                        hint="import with --replace (replace=True) to overwrite it",
                    )
                _delete_task(connection, task_id)
            try:
                ((task_no,),) = connection.execute(INSERT_TASK, encoded.task).fetchall()
                connection.executemany(
                    "INSERT INTO sessions (session_id, task_id, data) VALUES (?, ?, ?)",
                    [session[:3] for session in encoded.sessions],
                )
                first, _ = task_range(task_no)
                connection.executemany(
                    INSERT_STEP, [_step_values(first, row) for row in encoded.steps]
                )
            except sqlite3.IntegrityError as error:
                raise self._refused(connection, error, task_id) from error

    # -- metadata ----------------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        with self._db.use() as connection:
            row = connection.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        if key == "schema_version":
            raise StoreError(
                "the store's schema_version is managed by the store itself",
                hint="choose another meta key",
            )
        with self._db.write(one_change=True) as connection:
            connection.execute(SET_META, (key, value))

    def claim_periodic(self, name: str, *, every: timedelta, now: datetime) -> bool:
        key = f"periodic.{name}"
        now = aware(now)
        with self._db.write() as connection:
            row = connection.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
            if not periodic_due(row[0] if row is not None else None, now, every):
                return False
            connection.execute(SET_META, (key, now.isoformat()))
        return True

    # -- task ownership (leases) -------------------------------------------------------------

    def claim_task(
        self,
        task_id: str,
        owner: TaskOwner,
        *,
        ttl: timedelta = DEFAULT_LEASE_TTL,
        now: datetime | None = None,
        force: bool = False,
    ) -> TaskLease | None:
        moment = aware(now)
        if not force and self._one_statement(
            None, lambda connection: claim_free_or_own(connection, task_id, owner, moment + ttl)
        ):
            return None  # free, or this owner's: no need to read whose it is
        with self._db.write(one_change=True) as connection:
            current = read_lease(connection, task_id, self._db.version)
            if (
                current is not None
                and current.owner != owner
                and not force
                and current.is_live(moment)
            ):
                return current
            write_lease(connection, task_id, owner, moment + ttl)
        return None

    def renew_lease(
        self,
        task_id: str,
        owner: TaskOwner,
        *,
        ttl: timedelta = DEFAULT_LEASE_TTL,
        now: datetime | None = None,
    ) -> TaskLease:
        moment = aware(now)
        with self._db.write(one_change=True) as connection:
            current = read_lease(connection, task_id, self._db.version)
            if current is not None and current.owner != owner and current.is_live(moment):
                raise lease_lost(current)
            return write_lease(connection, task_id, owner, moment + ttl)

    def task_lease(self, task_id: str) -> TaskLease | None:
        with self._db.use() as connection:
            return read_lease(connection, task_id, self._db.version)

    def release_task(self, task_id: str, owner: TaskOwner) -> None:
        self._one_statement(None, lambda connection: delete_lease(connection, task_id, owner))

    # -- health ------------------------------------------------------------------------------

    def integrity_check(self) -> list[str]:
        with self._db.read() as connection:
            return health.problems(connection)


def _one_row(step: EncodedStep, riding: tuple[str, str, str] | None) -> bool:
    """Whether ``step`` is one statement: one row, and maybe its session's record riding
    with it (the loop's step)."""
    return (
        step.task is None and len(step.rows) == 1 and (step.session is None or riding is not None)
    )


def _riding_session(step: EncodedStep) -> tuple[str, str, str] | None:
    """The session record of ``step`` when it is that of its one row's session, of its
    task: the two are written by one statement (see :mod:`subagents.store.sqlite.steps`)."""
    session = step.session
    if (
        session is not None
        and len(step.rows) == 1
        and session[0] == step.rows[0].session_id
        and session[1] == step.task_id
    ):
        return session
    return None


def _step_values(first_key: int, row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A row of a whole task (see :func:`~subagents.store.steplog.whole_task_rows`, where a
    session's messages are one row, from seq 0) as :data:`INSERT_STEP` takes it."""
    number, session_id, next_checkpoint, messages, *records = row
    first_seq = None if messages is None else 0
    return (first_key + number, session_id, next_checkpoint, first_seq, messages, *records)


def _delete_task(connection: sqlite3.Connection, task_id: str) -> None:
    """The task and its steps (its sessions go by the foreign key)."""
    found = connection.execute(TASK_NUMBER, (task_id,)).fetchone()
    if found is None:
        return
    connection.execute("DELETE FROM steps WHERE key BETWEEN ? AND ?", task_range(found[0]))
    connection.execute("DELETE FROM tasks WHERE id = ?", (task_id,))


def _column(
    connection: sqlite3.Connection,
    task_id: str,
    column: str,
    session_id: str | None = None,
    *,
    latest: bool = False,
) -> list[str]:
    """The non-null ``column`` of a task's steps (of one session's, with ``session_id``) in
    step order; only the last one with ``latest``. Nothing for a task not stored."""
    found = connection.execute(TASK_NUMBER, (task_id,)).fetchone()
    if found is None:
        return []
    sql = f"SELECT {column} FROM steps WHERE key BETWEEN ? AND ? AND {column} IS NOT NULL"
    parameters: list[Any] = [*task_range(found[0])]
    if session_id is not None:
        sql += " AND session_id = ?"
        parameters.append(session_id)
    sql += " ORDER BY key DESC LIMIT 1" if latest else " ORDER BY key"
    return [text for (text,) in connection.execute(sql, parameters)]
