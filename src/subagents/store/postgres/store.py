"""``PostgresStore``: the :class:`~subagents.store.base.Store` on a PostgreSQL database.

Connections come from a pool (psycopg 3); each write is one transaction, or a savepoint inside
the transaction the calling thread holds open (``store.transaction()``, or ``tx=``), exactly as
in the SQLite store. A step appends rows to the task's step log (its task row locked for the
step, so that two writers of a task never hand out the same step or checkpoint number), a
claim on a task and a periodic job are serialised by a transaction-scoped advisory lock.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from subagents.errors import (
    StoreError,
    StoreUnavailableError,
    StoreVersionError,
)
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
from subagents.store.codec import UPGRADE_ADVICE, load_record
from subagents.store.lease import aware, lease_data, lease_lost, owner_from_data
from subagents.store.postgres.schema import MIGRATIONS, STORE_SCHEMA_VERSION
from subagents.store.records import (
    CheckpointRecord,
    SessionRecord,
    TaskRecord,
    ToolLedgerEntry,
    TraceRecord,
)
from subagents.store.shared import (
    MIN_ID_PREFIX,
    chosen_task,
    encode_bundle,
    encode_step,
    periodic_due,
    task_query,
    task_row,
)
from subagents.store.steplog import (
    EncodedStep,
    StepRow,
    checkpoint_records,
    ledger_records,
    message_values,
    seq_problem,
    task_not_stored,
    trace_records,
    with_sequence,
)

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

__all__ = ["PostgresStore", "PostgresTransaction", "shown_url"]

RecordT = TypeVar("RecordT", bound=BaseModel)

CONNECT_TIMEOUT_SECONDS = 10.0
_UPSERT_TASK = (
    "INSERT INTO tasks (id, status, parent_task_id, created_ts, data) "
    "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (id) DO UPDATE SET status = excluded.status, "
    "parent_task_id = excluded.parent_task_id, created_ts = excluded.created_ts, "
    "data = excluded.data"
)
_UPSERT_SESSION = (
    "INSERT INTO sessions (session_id, task_id, data) VALUES (%s, %s, %s) "
    "ON CONFLICT (session_id) DO UPDATE SET data = excluded.data "
    "WHERE sessions.task_id = excluded.task_id"
)
_INSERT_STEP = (
    "INSERT INTO steps (task_no, step, session_id, next_checkpoint, messages, checkpoint, "
    "ledger, traces) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
)
_SET_META = (
    "INSERT INTO meta (key, value) VALUES (%s, %s) "
    "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
)


def shown_url(url: str) -> str:
    """``url`` without its password, fit for messages."""
    import re

    return re.sub(r"(//[^/@:]*):[^/@]*@", r"\1:***@", url)


@dataclass(slots=True, eq=False)
class PostgresTransaction:
    """An open transaction of a :class:`PostgresStore`, on one pooled connection."""

    connection: psycopg.Connection[Any]
    store: PostgresStore
    active: bool = True
    external: bool = False
    """True when the caller owns the transaction (``join_transaction``): the store never
    commits or ends it."""


class PostgresStore:
    """The :class:`~subagents.store.base.Store` on the PostgreSQL database ``url`` names
    (``postgresql://user:password@host:5432/dbname``); its schema is created or upgraded when
    it opens."""

    def __init__(self, url: str, *, pool_size: int = 4) -> None:
        try:
            import psycopg
            from psycopg_pool import ConnectionPool
        except ImportError:
            raise StoreError(
                "a PostgreSQL store needs psycopg 3 and psycopg-pool, which are not installed",
                hint="run: pip install 'subagents[postgres]'",
            ) from None
        self._url = url
        self._location = shown_url(url)
        self._local = threading.local()
        try:  # once, directly: a pool would retry until its timeout and hide why
            psycopg.connect(url, connect_timeout=int(CONNECT_TIMEOUT_SECONDS)).close()
        except (psycopg.Error, ValueError) as error:
            raise StoreError(
                f"cannot connect to the PostgreSQL store {self._location} "
                f"({type(error).__name__}: {_first_line(error)})",
                hint="check the URL (--store, SUBAGENTS_STORE) and that the server runs and "
                "accepts this user",
            ) from None
        self._pool: ConnectionPool[Any] = ConnectionPool(
            url,
            min_size=1,
            max_size=pool_size,
            kwargs={"autocommit": True},
            open=False,
            name="subagents-store",
        )
        try:
            self._pool.open(wait=True, timeout=CONNECT_TIMEOUT_SECONDS)
        except Exception as error:
            self._pool.close()
            raise StoreError(
                f"cannot connect to the PostgreSQL store {self._location} "
                f"({type(error).__name__}: {str(error).strip() or 'no answer'})",
                hint="check the URL (--store, SUBAGENTS_STORE) and that the server runs and "
                "accepts this user",
            ) from None
        try:
            self._prepare_schema()
        except BaseException:
            self._pool.close()
            raise

    # -- plumbing ----------------------------------------------------------------------------

    @property
    def location(self) -> str:
        return self._location

    @property
    def connection_url(self) -> str:
        """The URL this store connects with, password included: for opening more connections
        to the same database (the workers' engine), never for showing."""
        return self._url

    @property
    def read_only(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"PostgresStore({self._location!r})"

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._pool.close()

    def _prepare_schema(self) -> None:
        with self._write() as connection:
            # one process migrates at a time; the others wait, then find it done
            connection.execute("SELECT pg_advisory_xact_lock(hashtext('subagents.schema'))")
            connection.execute(MIGRATIONS[0][0])  # meta, to read the version from
            row = connection.execute(
                "SELECT value FROM meta WHERE key = 'schema_version'"
            ).fetchone()
            version = int(row[0]) if row is not None else 0
            if version > STORE_SCHEMA_VERSION:
                raise StoreVersionError(
                    f"{self._location}: this database was written by a newer subagents "
                    f"(schema {version}; this one knows up to {STORE_SCHEMA_VERSION})",
                    hint=UPGRADE_ADVICE,
                )
            while version < STORE_SCHEMA_VERSION:
                for statement in MIGRATIONS[version][1 if version == 0 else 0 :]:
                    connection.execute(statement)
                version += 1
                connection.execute(_SET_META, ("schema_version", str(version)))

    @contextmanager
    def _translated(self) -> Iterator[None]:
        import psycopg

        try:
            yield
        except psycopg.errors.IntegrityError:
            raise
        except psycopg.OperationalError as error:
            raise StoreUnavailableError(
                f"the PostgreSQL store {self._location} failed "
                f"({type(error).__name__}: {str(error).strip()})",
                hint="check that the server runs and is reachable, then run again "
                "(what was committed is kept)",
            ) from None

    def _current(self) -> PostgresTransaction | None:
        current: PostgresTransaction | None = getattr(self._local, "tx", None)
        return current if current is not None and current.active else None

    @contextmanager
    def _read(self) -> Iterator[psycopg.Connection[Any]]:
        current = self._current()
        with self._translated():
            if current is not None:
                yield current.connection
                return
            with self._pool.connection() as connection:
                yield connection

    @contextmanager
    def _write(self, tx: Transaction | None = None) -> Iterator[psycopg.Connection[Any]]:
        outer = self._own(tx) if tx is not None else self._current()
        with self._translated():
            if outer is not None:
                with outer.connection.transaction():  # a savepoint in it
                    yield outer.connection
                return
            with self._pool.connection() as connection, connection.transaction():
                yield connection

    def _own(self, tx: Transaction) -> PostgresTransaction:
        if not isinstance(tx, PostgresTransaction) or tx.store is not self:
            raise StoreError(
                "the transaction given to this store belongs to another store",
                hint="pass the tx that this store's transaction() yielded",
            )
        if not tx.active:
            raise StoreError(
                "the transaction given to this store has ended",
                hint="write inside the 'with store.transaction() as tx:' block",
            )
        return tx

    @contextmanager
    def transaction(self, tx: Transaction | None = None) -> Iterator[PostgresTransaction]:
        """A transaction: writes given it as ``tx`` (and every write this thread makes
        inside the block) land together when it ends, or not at all when it raises; with
        ``tx`` (or inside another), a savepoint that rolls back alone."""
        outer = self._own(tx) if tx is not None else self._current()
        if outer is not None:
            with self._translated(), outer.connection.transaction():
                yield outer
            return
        with (
            self._translated(),
            self._pool.connection() as connection,
            connection.transaction(),
        ):
            handle = PostgresTransaction(connection, self)
            self._local.tx = handle
            try:
                yield handle
            finally:
                handle.active = False
                self._local.tx = None

    @contextmanager
    def join_transaction(
        self, connection: psycopg.Connection[Any]
    ) -> Iterator[PostgresTransaction]:
        """Let the store's writes join a transaction its caller owns on ``connection`` (to
        this same database and schema, with a transaction open): each write given the yielded
        ``tx`` (or made by this thread inside the block) is a savepoint on that connection,
        and lands when the caller commits, as a workflow engine's step record does. The store
        never commits or rolls it back."""
        import psycopg

        if connection.info.transaction_status != psycopg.pq.TransactionStatus.INTRANS:
            raise StoreError(
                "the connection handed to join_transaction() has no open transaction",
                hint="begin one on it first (with connection.transaction(), or BEGIN on a "
                "connection that is not in autocommit); its caller commits or rolls back",
            )
        where = "SELECT current_database(), current_schema()"
        with self._translated():
            theirs = connection.execute(where).fetchone()
            with self._pool.connection() as own:
                ours = own.execute(where).fetchone()
        if theirs != ours:
            raise StoreError(
                f"the connection handed to join_transaction() is on {theirs}, "
                f"not on this store's {ours}",
                hint="open the outer transaction on the store's own database and schema",
            )
        handle = PostgresTransaction(connection, self, external=True)
        self._local.tx = handle
        try:
            yield handle
        finally:
            handle.active = False
            self._local.tx = None

    def _decode(self, cls: type[RecordT], text: str, what: str) -> RecordT:
        return load_record(cls, text, where=f"{what} in {self._location}")

    # -- tasks -------------------------------------------------------------------------------

    def create_task(self, task: TaskRecord, *, tx: Transaction | None = None) -> None:
        import psycopg

        try:
            with self._write(tx) as connection:
                connection.execute(
                    "INSERT INTO tasks (id, status, parent_task_id, created_ts, data) "
                    "VALUES (%s, %s, %s, %s, %s)",
                    task_row(task),
                )
        except psycopg.errors.UniqueViolation:
            raise StoreError(
                f"task {task.id} already exists in {self._location}",
                hint="use update_task() to change it, or create a task with a new id",
            ) from None

    def get_task(self, task_id: str) -> TaskRecord:
        with self._read() as connection:
            row = connection.execute("SELECT data FROM tasks WHERE id = %s", (task_id,)).fetchone()
            prefixed = []
            if row is None and len(task_id) >= MIN_ID_PREFIX:
                prefixed = connection.execute(
                    "SELECT id, data FROM tasks WHERE substr(id, 1, %s) = %s ORDER BY id LIMIT 6",
                    (len(task_id), task_id),
                ).fetchall()
        data = chosen_task(task_id, row[0] if row else None, prefixed, self._location)
        return self._decode(TaskRecord, data, f"task {task_id}")

    def _task_rows(self, status: str | None, limit: int | None) -> list[tuple[str, str]]:
        sql, parameters = task_query(status, limit, mark="%s", newest="no")
        with self._read() as connection:
            return [(str(a), str(b)) for a, b in connection.execute(sql, parameters).fetchall()]

    def list_tasks(self, *, status: str | None = None, limit: int | None = 100) -> list[TaskRecord]:
        return [
            self._decode(TaskRecord, data, f"task {task_id}")
            for task_id, data in self._task_rows(status, limit)
        ]

    def scan_tasks(self, *, status: str | None = None, limit: int | None = 100) -> TaskScan:
        scan = TaskScan()
        for task_id, data in self._task_rows(status, limit):
            try:
                scan.tasks.append(load_record(TaskRecord, data, where="its record"))
            except StoreError as error:
                scan.unreadable.append(UnreadableTask(task_id, error.message))
        return scan

    def update_task(self, task: TaskRecord, *, tx: Transaction | None = None) -> None:
        row = task_row(task)
        with self._write(tx) as connection:
            cursor = connection.execute(
                "UPDATE tasks SET status = %s, parent_task_id = %s, created_ts = %s, data = %s "
                "WHERE id = %s",
                (*row[1:], row[0]),
            )
            if cursor.rowcount == 0:
                raise StoreError(
                    f"no task {task.id} in {self._location}",
                    hint="create it with create_task() first",
                )

    def delete_task(self, task_id: str) -> None:
        """Remove the task (exact id) and everything of it (its sessions and steps go by the
        foreign keys), its lease too; a missing task is not an error."""
        with self._write() as connection:
            connection.execute("DELETE FROM tasks WHERE id = %s", (task_id,))
            connection.execute("DELETE FROM leases WHERE task_id = %s", (task_id,))

    # -- steps -------------------------------------------------------------------------------

    def commit(self, step: StepWrite, *, tx: Transaction | None = None) -> CheckpointRecord | None:
        sequence = self.append(encode_step(step), tx=tx)
        if step.checkpoint is None or sequence is None:
            return None
        return step.checkpoint.model_copy(update={"sequence": sequence})

    def append(self, step: EncodedStep, *, tx: Transaction | None = None) -> int | None:
        import psycopg

        task_id = step.task_id
        try:
            with self._write(tx) as connection:
                if step.task is not None:
                    connection.execute(_UPSERT_TASK, step.task)
                if step.session is not None:
                    connection.execute(_UPSERT_SESSION, step.session)
                if not step.rows:
                    return None
                return self._append(connection, task_id, step.rows)
        except psycopg.errors.ForeignKeyViolation:
            raise task_not_stored(task_id, self._location) from None

    def _append(
        self, connection: psycopg.Connection[Any], task_id: str, rows: Sequence[StepRow]
    ) -> int | None:
        # One round trip locks the task's row and hands out the step's numbers...
        checkpoints = sum(1 for part in rows if part.checkpoint is not None)
        found = connection.execute(
            "UPDATE tasks SET last_step = last_step + %s, next_checkpoint = next_checkpoint + %s "
            "WHERE id = %s RETURNING no, last_step, next_checkpoint",
            (len(rows), checkpoints, task_id),
        ).fetchone()
        if found is None:
            raise task_not_stored(task_id, self._location)
        task_no, last_step, next_checkpoint = (int(value) for value in found)
        number, sequence = last_step - len(rows), next_checkpoint - checkpoints
        saved = None
        values = []
        for part in rows:
            checkpoint = part.checkpoint
            if checkpoint is not None:
                checkpoint = with_sequence(checkpoint, sequence)
                saved = sequence
                sequence += 1
            number += 1
            values.append(
                (
                    task_no,
                    number,
                    part.session_id,
                    sequence,
                    part.messages,
                    checkpoint,
                    part.ledger,
                    part.traces,
                )
            )
        # ...and one more sends the messages' seqs and the rows, pipelined.
        with connection.pipeline(), connection.cursor() as inserts:
            advanced = [
                (part, self._advance_seq(connection, task_id, part))
                for part in rows
                if part.messages is not None
            ]
            inserts.executemany(_INSERT_STEP, values)
        for part, cursor in advanced:
            if cursor.rowcount != 1:
                found_session = connection.execute(
                    "SELECT task_id, next_seq FROM sessions WHERE session_id = %s",
                    (part.session_id,),
                ).fetchone()
                owner = None if found_session is None else (found_session[0], int(found_session[1]))
                raise seq_problem(task_id, part, owner)
        return saved

    @staticmethod
    def _advance_seq(
        connection: psycopg.Connection[Any], task_id: str, part: StepRow
    ) -> psycopg.Cursor[Any]:
        following = part.first_seq + part.message_count
        return connection.execute(
            "UPDATE sessions SET next_seq = %s "
            "WHERE session_id = %s AND task_id = %s AND next_seq = %s",
            (following, part.session_id, task_id, part.first_seq),
        )

    # -- reading a task's records -------------------------------------------------------------

    def get_session(self, session_id: str) -> SessionRecord:
        with self._read() as connection:
            row = connection.execute(
                "SELECT data FROM sessions WHERE session_id = %s", (session_id,)
            ).fetchone()
        if row is None:
            raise StoreError(
                f"no session {session_id!r} in {self._location}",
                hint="run 'subagents tasks show TASK' to see a task's sessions",
            )
        return self._decode(SessionRecord, row[0], f"session {session_id}")

    def sessions(self, task_id: str) -> list[SessionRecord]:
        with self._read() as connection:
            rows = connection.execute(
                "SELECT session_id, data FROM sessions WHERE task_id = %s ORDER BY created",
                (task_id,),
            ).fetchall()
        return [self._decode(SessionRecord, data, f"session {sid}") for sid, data in rows]

    def _column(
        self, task_id: str, column: str, session_id: str | None = None, *, latest: bool = False
    ) -> list[str]:
        sql = (
            f"SELECT {column} FROM steps WHERE task_no = (SELECT no FROM tasks WHERE id = %s) "
            f"AND {column} IS NOT NULL"
        )
        parameters: list[Any] = [task_id]
        if session_id is not None:
            sql += " AND session_id = %s"
            parameters.append(session_id)
        sql += " ORDER BY step DESC LIMIT 1" if latest else " ORDER BY step"
        with self._read() as connection:
            return [str(text) for (text,) in connection.execute(sql, parameters).fetchall()]

    def messages(self, session_id: str) -> list[dict[str, Any]]:
        with self._read() as connection:
            found = connection.execute(
                "SELECT task_id FROM sessions WHERE session_id = %s", (session_id,)
            ).fetchone()
        texts = [] if found is None else self._column(found[0], "messages", session_id)
        return message_values(texts, f"a message of session {session_id} in {self._location}")

    def latest_checkpoint(
        self, task_id: str, session_id: str | None = None
    ) -> CheckpointRecord | None:
        texts = self._column(task_id, "checkpoint", session_id, latest=True)
        return checkpoint_records(texts, f"a checkpoint of task {task_id}")[0] if texts else None

    def checkpoints(self, task_id: str) -> list[CheckpointRecord]:
        return checkpoint_records(
            self._column(task_id, "checkpoint"), f"a checkpoint of task {task_id}"
        )

    def ledger(self, task_id: str, session_id: str | None = None) -> list[ToolLedgerEntry]:
        texts = self._column(task_id, "ledger", session_id)
        return ledger_records(texts, f"a ledger entry of task {task_id}")

    def traces(self, task_id: str) -> list[TraceRecord]:
        return trace_records(self._column(task_id, "traces"), f"a trace record of task {task_id}")

    # -- whole tasks (export / import) --------------------------------------------------------

    def load_bundle(self, task_id: str) -> TaskBundle:
        with self.transaction():  # one snapshot of the task
            task = self.get_task(task_id)
            sessions = self.sessions(task.id)
            return TaskBundle(
                task=task,
                sessions=sessions,
                messages={s.session_id: self.messages(s.session_id) for s in sessions},
                checkpoints=self.checkpoints(task.id),
                ledger=self.ledger(task.id),
                traces=self.traces(task.id),
            )

    def restore_bundle(self, bundle: TaskBundle, *, replace: bool = False) -> None:
        task_id = bundle.task.id
        encoded = encode_bundle(bundle)
        with self._write() as connection:
            exists = connection.execute("SELECT 1 FROM tasks WHERE id = %s", (task_id,)).fetchone()
            if exists is not None:
                if not replace:
                    raise StoreError(
                        f"task {task_id} already exists in {self._location}",
                        hint="import with --replace (replace=True) to overwrite it",
                    )
                connection.execute("DELETE FROM tasks WHERE id = %s", (task_id,))
            last_step, next_checkpoint = encoded.counters
            row = connection.execute(
                "INSERT INTO tasks (id, status, parent_task_id, created_ts, data, last_step, "
                "next_checkpoint) VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING no",
                (*encoded.task, last_step, next_checkpoint),
            ).fetchone()
            assert row is not None
            with connection.cursor() as cursor:
                cursor.executemany(
                    "INSERT INTO sessions (session_id, task_id, data, next_seq) "
                    "VALUES (%s, %s, %s, %s)",
                    encoded.sessions,
                )
                cursor.executemany(_INSERT_STEP, [(row[0], *step) for step in encoded.steps])

    # -- metadata ----------------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        with self._read() as connection:
            row = connection.execute("SELECT value FROM meta WHERE key = %s", (key,)).fetchone()
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
        now = aware(now)
        with self._write() as connection:
            connection.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (key,))
            row = connection.execute("SELECT value FROM meta WHERE key = %s", (key,)).fetchone()
            if not periodic_due(row[0] if row is not None else None, now, every):
                return False
            connection.execute(_SET_META, (key, now.isoformat()))
        return True

    # -- task ownership (leases) -------------------------------------------------------------

    def _lease(self, connection: psycopg.Connection[Any], task_id: str) -> TaskLease | None:
        row = connection.execute(
            "SELECT expires_ts, data FROM leases WHERE task_id = %s", (task_id,)
        ).fetchone()
        if row is None:
            return None
        owner = owner_from_data(row[1])
        if owner is None:
            return None
        from datetime import UTC

        expires_at = None if row[0] is None else datetime.fromtimestamp(row[0], UTC)
        return TaskLease(task_id, owner, expires_at)

    def _locked_lease(self, connection: psycopg.Connection[Any], task_id: str) -> TaskLease | None:
        """The task's lease, read under a lock on the task's claims held to the transaction's
        end: two claimers of one task take turns."""
        connection.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"lease.{task_id}",))
        return self._lease(connection, task_id)

    def _write_lease(
        self, connection: psycopg.Connection[Any], task_id: str, owner: TaskOwner, until: datetime
    ) -> TaskLease:
        connection.execute(
            "INSERT INTO leases (task_id, expires_ts, data) VALUES (%s, %s, %s) "
            "ON CONFLICT (task_id) DO UPDATE SET expires_ts = excluded.expires_ts, "
            "data = excluded.data",
            (task_id, until.timestamp(), lease_data(owner, until)),
        )
        return TaskLease(task_id, owner, until)

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
        with self._write() as connection:
            current = self._locked_lease(connection, task_id)
            if (
                current is not None
                and current.owner != owner
                and not force
                and current.is_live(moment)
            ):
                return current
            self._write_lease(connection, task_id, owner, moment + ttl)
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
        with self._write() as connection:
            current = self._locked_lease(connection, task_id)
            if current is not None and current.owner != owner and current.is_live(moment):
                raise lease_lost(current)
            return self._write_lease(connection, task_id, owner, moment + ttl)

    def task_lease(self, task_id: str) -> TaskLease | None:
        with self._read() as connection:
            return self._lease(connection, task_id)

    def release_task(self, task_id: str, owner: TaskOwner) -> None:
        with self._write() as connection:
            current = self._lease(connection, task_id)
            if current is not None and current.owner == owner:
                connection.execute("DELETE FROM leases WHERE task_id = %s", (task_id,))

    # -- health ------------------------------------------------------------------------------

    def integrity_check(self) -> list[str]:
        """Every record that cannot be read, and message counts that disagree with their
        session's; ``[]`` when the store is fine."""
        found: list[str] = []
        for task in self.scan_tasks(limit=None).unreadable:
            found.append(f"task {task.task_id}: {task.reason}")
        with self._read() as connection:
            task_ids = [str(row[0]) for row in connection.execute("SELECT id FROM tasks")]
            counts = {
                str(sid): int(seq)
                for sid, seq in connection.execute("SELECT session_id, next_seq FROM sessions")
            }
        for task_id in task_ids:
            try:
                bundle = self.load_bundle(task_id)
            except StoreError as error:
                found.append(f"task {task_id}: {error.message}")
                continue
            for session_id, values in bundle.messages.items():
                if len(values) != counts.get(session_id, 0):
                    found.append(
                        f"session {session_id}: {len(values)} messages stored, "
                        f"{counts.get(session_id, 0)} expected"
                    )
        return found


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return shown_url(lines[0]) if lines else "no answer"
