"""One SQLite store file: opening it (writable, else read-only), its schema, the transactions
on its connection, and what its errors mean to a person. See :mod:`subagents.store.sqlite` for
the concurrency, durability and damage model this implements.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from subagents.errors import StoreCorruptError, StoreError, StoreVersionError
from subagents.store.base import Transaction
from subagents.store.codec import UPGRADE_ADVICE
from subagents.store.sqlite.schema import (
    MIGRATIONS,
    SESSION_STEPS,
    SESSION_STEPS_VERSION,
    STORE_SCHEMA_VERSION,
)

__all__ = ["BUSY_TIMEOUT_SECONDS", "Database", "SQLiteTransaction"]

T = TypeVar("T")

BUSY_TIMEOUT_SECONDS = 10.0

_SQLITE_MAGIC = b"SQLite format 3\x00"
_SQLITE_BUSY, _SQLITE_LOCKED, _SQLITE_READONLY = 5, 6, 8
_SQLITE_CORRUPT, _SQLITE_FULL, _SQLITE_CANTOPEN, _SQLITE_NOTADB = 11, 13, 14, 26
_SQLITE_READONLY_DIRECTORY = _SQLITE_READONLY | (6 << 8)
_CLOSED_HINT = "open it again with subagents.store.open_store()"
_SET_META = (
    "INSERT INTO meta (key, value) VALUES (?, ?) "
    "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
)


@dataclass(slots=True, eq=False)
class SQLiteTransaction:
    """An open transaction on a connection to the store's file: the store's own
    (:meth:`SQLiteStore.transaction <subagents.store.sqlite.SQLiteStore.transaction>`) or one
    its caller owns and commits (:meth:`~subagents.store.sqlite.SQLiteStore.join_transaction`)."""

    connection: sqlite3.Connection
    database: Database
    external: bool
    """True when the caller owns the transaction: the store never commits or ends it."""
    active: bool = True


class Database:
    """The connection to one store file, and every use of it."""

    def __init__(self, path: Path | str, *, read_only: bool = False) -> None:
        self.path = Path(path).expanduser().absolute()
        self._lock = threading.RLock()
        self.read_only_reason: str | None = None
        """Why the store cannot be written here, or None when it can."""
        self.version = STORE_SCHEMA_VERSION
        """The schema the connection reads (a read-only older store is read from a copy
        upgraded in memory)."""
        self.upgraded_from: int | None = None
        """The schema of a read-only older store, read from an upgraded copy."""
        self._connection: sqlite3.Connection | None = (
            self._connect_read_only("it was opened read-only") if read_only else self._connect()
        )

    # -- opening -----------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        self._refuse_directory()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise StoreError(
                f"cannot create the directory {self.path.parent} ({error.strerror or error})",
                hint="check its permissions, or choose another store path",
            ) from None
        _check_file(self.path, self.corrupt)
        try:
            connection = sqlite3.connect(
                self.path,
                timeout=BUSY_TIMEOUT_SECONDS,
                isolation_level=None,
                check_same_thread=False,  # serialised by self._lock instead
            )
        except sqlite3.Error as error:
            raise self.translate(error) from error
        try:
            connection.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_SECONDS * 1000)}")
            connection.execute("PRAGMA journal_mode = WAL")
            connection.execute("PRAGMA synchronous = NORMAL")
            connection.execute("PRAGMA foreign_keys = ON")
            self._prepare_schema(connection)
        except BaseException as error:
            connection.close()
            if isinstance(error, sqlite3.Error):
                if _not_writable(error) and self.path.is_file():
                    return self._connect_read_only(self._why_not_writable(error))
                raise self.translate(error) from error
            raise
        return connection

    def _refuse_directory(self) -> None:
        if self.path.is_dir():
            raise StoreError(
                f"{self.path} is a directory, not a store file",
                hint=f"name the store file, e.g. --store {self.path / 'state.db'}",
            )

    def _connect_read_only(self, reason: str) -> sqlite3.Connection:
        """A connection that never writes: ``mode=ro``, else ``immutable=1`` when SQLite
        cannot create the ``-shm`` index it needs and no ``-wal`` holds changes."""
        self._refuse_directory()
        if not self.path.is_file():
            raise StoreError(
                f"no store at {self.path} to open read-only",
                hint="run a task first ('subagents run'), or name the store with --store",
            )
        _check_file(self.path, self.corrupt)
        self.read_only_reason = reason
        try:
            return self._open_uri("mode=ro")
        except sqlite3.Error as error:
            if not _not_writable(error):
                raise self.translate(error) from error
            wal = Path(f"{self.path}-wal")
            if wal.exists() and wal.stat().st_size > 0:
                raise self._unindexable_log(wal) from error
        try:
            return self._open_uri("mode=ro&immutable=1")
        except sqlite3.Error as error:
            raise self.translate(error) from error

    def _open_uri(self, parameters: str) -> sqlite3.Connection:
        connection = sqlite3.connect(
            f"{self.path.as_uri()}?{parameters}",
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
        if version < STORE_SCHEMA_VERSION:
            return self._upgraded_copy(connection, version)
        self.version = version
        return connection

    def _upgraded_copy(self, connection: sqlite3.Connection, version: int) -> sqlite3.Connection:
        """An older store that cannot be upgraded where it is: read from a copy in memory,
        upgraded there (a snapshot: what its writer adds later is not seen)."""
        copy = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        try:
            with self.translated():
                connection.backup(copy)
            copy.execute("PRAGMA foreign_keys = ON")
            self._prepare_schema(copy)
        except BaseException:
            copy.close()
            raise
        finally:
            connection.close()
        self.upgraded_from = version
        return copy

    def _why_not_writable(self, error: sqlite3.Error) -> str:
        code = getattr(error, "sqlite_errorcode", None)
        if code == _SQLITE_READONLY_DIRECTORY:
            return f"its folder {self.path.parent} is not writable"
        if isinstance(code, int) and code & 0xFF == _SQLITE_CANTOPEN:
            return f"SQLite cannot create its -wal and -shm files in {self.path.parent}"
        return "the file is not writable"

    def _unindexable_log(self, wal: Path) -> StoreError:
        return StoreError(
            f"{self.path} cannot be read here: its write-ahead log {wal} holds changes, and "
            f"SQLite needs to create {self.path}-shm beside it to read them, but the folder "
            f"{self.path.parent} is not writable",
            hint=f"copy the store with its log to a writable folder (cp {self.path} {wal} "
            "DIR/) and name the copy with --store DIR/" + self.path.name,
        )

    def _prepare_schema(self, connection: sqlite3.Connection) -> None:
        version, missing = self._schema_state(connection)
        if version == STORE_SCHEMA_VERSION and not missing:
            return
        connection.execute("BEGIN IMMEDIATE")
        try:
            # Read again under the write lock: another process may have migrated meanwhile.
            version, missing = self._schema_state(connection)
            while version < STORE_SCHEMA_VERSION:
                for step in MIGRATIONS[version]:
                    if isinstance(step, str):
                        connection.execute(step)
                    else:
                        step(connection)
                version += 1
            for statement in missing:
                connection.execute(statement)
            connection.execute(_SET_META, ("schema_version", str(version)))
            connection.execute("COMMIT")
        except BaseException:
            quietly(connection, "ROLLBACK")
            raise

    def _schema_state(self, connection: sqlite3.Connection) -> tuple[int, list[str]]:
        """The store's schema version, and the statements that put back the view and trigger
        of :data:`SESSION_STEPS` where they are gone (dropped by hand, say): a store whose
        tables are all there gets them back on opening, instead of failing its first step."""
        version, names = self._schema(connection)
        if version < SESSION_STEPS_VERSION:
            return version, []
        view, trigger = SESSION_STEPS
        if "session_steps" not in names:
            return version, [view, trigger]
        return version, [] if "session_steps_insert" in names else [trigger]

    def _schema_version(self, connection: sqlite3.Connection) -> int:
        return self._schema(connection)[0]

    def _schema(self, connection: sqlite3.Connection) -> tuple[int, set[str]]:
        """The store's schema version, and the names of its views and triggers."""
        tables: set[str] = set()
        names: set[str] = set()
        for name, kind in connection.execute(
            "SELECT name, type FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"
        ):
            if kind == "table":
                tables.add(name)
            elif kind in ("view", "trigger"):
                names.add(name)
        if "meta" not in tables:
            if tables:
                raise StoreError(
                    f"{self.path} is an SQLite database but not a subagents store "
                    f"(it holds the table(s) {', '.join(sorted(tables))})",
                    hint="use another store path, or move that file aside",
                )
            return 0, names
        row = connection.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        try:
            version = int(row[0]) if row is not None else -1
        except ValueError:
            version = -1
        if version < 0:
            raise self.corrupt("its schema version is missing")
        if version > STORE_SCHEMA_VERSION:
            raise StoreVersionError(
                f"{self.path}: this database was written by a newer subagents "
                f"(schema {version}; this one knows up to {STORE_SCHEMA_VERSION})",
                hint=UPGRADE_ADVICE,
            )
        return version, names

    # -- using the connection ----------------------------------------------------------------

    def close(self) -> None:
        with self._lock:
            connection, self._connection = self._connection, None
            if connection is not None:
                connection.close()

    @property
    def in_transaction(self) -> bool:
        """Whether a transaction is open on the store's connection (any thread's)."""
        connection = self._connection
        return connection is not None and connection.in_transaction

    @contextmanager
    def use(self) -> Iterator[sqlite3.Connection]:
        """The connection, held for this thread alone until the block ends."""
        with self._lock:
            connection = self._connection
            if connection is None:
                raise StoreError(f"the store {self.path} is closed", hint=_CLOSED_HINT)
            with self.translated():
                yield connection

    @contextmanager
    def translated(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as error:
            raise self.translate(error) from error

    @contextmanager
    def write(
        self, tx: Transaction | None = None, *, one_change: bool = False
    ) -> Iterator[sqlite3.Connection]:
        """One write, all or nothing: its own transaction, or a savepoint inside ``tx`` (or
        inside the transaction this thread holds open on the store's connection). A write of
        ``one_change`` (a single statement that changes anything) needs no savepoint: SQLite
        undoes a failed statement whole by itself."""
        if self.read_only_reason is not None:
            raise self.refuse_writes(self.read_only_reason)
        if tx is not None:
            outer = self.own(tx)
            if outer.external:  # the caller's connection: the caller serialises its use
                with self.translated(), _savepoint(outer.connection, one_change):
                    yield outer.connection
                return
        with self._lock:  # self.use(), unrolled: a step pays for each context manager
            own = self._connection
            if own is None:
                raise StoreError(f"the store {self.path} is closed", hint=_CLOSED_HINT)
            try:
                if own.in_transaction:  # ``tx``, or the one this thread holds open
                    with _savepoint(own, one_change):
                        yield own
                    return
                own.execute("BEGIN IMMEDIATE")
                try:
                    yield own
                    own.execute("COMMIT")
                except BaseException:
                    quietly(own, "ROLLBACK")
                    raise
            except sqlite3.Error as error:
                raise self.translate(error) from error

    def run_alone(self, work: Callable[[sqlite3.Connection], T]) -> T | None:
        """``work(connection)`` with the connection to itself and no transaction open on it,
        so that each of its statements is a transaction of its own (SQLite's autocommit: one
        statement costs what a ``BEGIN``, the statement and a ``COMMIT`` do, less two trips);
        None, without running it, when a transaction is open."""
        if self.read_only_reason is not None:
            raise self.refuse_writes(self.read_only_reason)
        with self._lock:
            connection = self._connection
            if connection is None:
                raise StoreError(f"the store {self.path} is closed", hint=_CLOSED_HINT)
            if connection.in_transaction:
                return None
            try:
                return work(connection)
            except sqlite3.Error as error:
                raise self.translate(error) from error

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """Several reads that see one consistent snapshot."""
        with self.use() as connection:
            if connection.in_transaction:
                yield connection
                return
            connection.execute("BEGIN")
            try:
                yield connection
            finally:
                quietly(connection, "ROLLBACK")

    @contextmanager
    def transaction(self, tx: Transaction | None = None) -> Iterator[SQLiteTransaction]:
        with self.write(tx) as connection:
            external = tx is not None and self.own(tx).external
            handle = SQLiteTransaction(connection, self, external=external)
            try:
                yield handle
            finally:
                handle.active = False

    @contextmanager
    def join(self, connection: sqlite3.Connection) -> Iterator[SQLiteTransaction]:
        """Wrap the caller's open transaction on this file (see ``join_transaction``)."""
        if self.read_only_reason is not None:
            raise self.refuse_writes(self.read_only_reason)
        with self.translated():
            if not connection.in_transaction:
                raise StoreError(
                    "the connection handed to join_transaction() has no open transaction",
                    hint="run 'BEGIN IMMEDIATE' on it first; the store's writes join it and "
                    "its caller commits or rolls back",
                )
            files = [
                row[2] for row in connection.execute("PRAGMA database_list") if row[1] == "main"
            ]
            if not files or not files[0] or Path(files[0]).resolve() != self.path.resolve():
                raise StoreError(
                    f"the connection handed to join_transaction() is on "
                    f"{files[0] if files and files[0] else 'another database'}, not on {self.path}",
                    hint="open the outer transaction on the store's own file",
                )
            if connection.execute("PRAGMA foreign_keys").fetchone()[0] != 1:
                raise StoreError(
                    "the connection handed to join_transaction() does not enforce foreign keys",
                    hint="run 'PRAGMA foreign_keys = ON' on it before its transaction begins",
                )
        handle = SQLiteTransaction(connection, self, external=True)
        try:
            yield handle
        finally:
            handle.active = False

    def own(self, tx: Transaction) -> SQLiteTransaction:
        """``tx`` as a transaction of this store, or an error saying why it is not one."""
        if not isinstance(tx, SQLiteTransaction) or tx.database is not self:
            raise StoreError(
                f"the transaction handed to the store {self.path} belongs to another store",
                hint="open it with this store's transaction() (or join_transaction())",
            )
        if not tx.active:
            raise StoreError(
                "the transaction handed to the store has already ended",
                hint="write inside its 'with store.transaction() as tx:' block",
            )
        return tx

    # -- errors a person can act on ----------------------------------------------------------

    def refuse_writes(self, reason: str) -> StoreError:
        return StoreError(
            f"{self.path} is read-only here ({reason}), and this needs to write to it",
            hint="reading commands (tasks list, tasks show, trace, export) work on it; to run "
            "or change tasks, make the file and its folder writable, or copy the store to a "
            f"writable folder (cp {self.path} DIR/) and name the copy with --store",
        )

    def translate(self, error: sqlite3.Error) -> StoreError:
        code = getattr(error, "sqlite_errorcode", None)
        primary = code & 0xFF if isinstance(code, int) else None
        text = str(error)
        if primary in (_SQLITE_CORRUPT, _SQLITE_NOTADB) or "malformed" in text:
            return self.corrupt(text)
        if primary in (_SQLITE_BUSY, _SQLITE_LOCKED):
            return StoreError(
                f"{self.path} stayed locked by another process for over "
                f"{BUSY_TIMEOUT_SECONDS:g} s ({text})",
                hint="wait for the other subagents process to finish, or stop it, and run again",
            )
        if primary == _SQLITE_READONLY:
            return self.refuse_writes(self.read_only_reason or f"SQLite refused to write: {text}")
        if primary == _SQLITE_CANTOPEN:
            return StoreError(
                f"cannot open {self.path} ({text})",
                hint="check that its directory exists and is writable",
            )
        if primary == _SQLITE_FULL:
            return StoreError(f"{self.path}: the disk is full", hint="free some space and retry")
        return StoreError(
            f"{self.path}: database error ({text})",
            hint="run 'subagents tasks check' to examine the store",
        )

    def corrupt(self, detail: str) -> StoreCorruptError:
        moves = [f"mv {self.path} {self.path}.corrupt"]
        for suffix in ("-wal", "-shm"):
            companion = Path(f"{self.path}{suffix}")
            if companion.exists():
                moves.append(f"mv {companion} {self.path}.corrupt{suffix}")
        return StoreCorruptError(
            f"{self.path} is not a readable subagents database ({detail})",
            hint=f"move it aside ({'; '.join(moves)}) and run again; "
            "'subagents export' cannot read it",
        )


def _savepoint(
    connection: sqlite3.Connection, needless: bool = False
) -> AbstractContextManager[None]:
    """A savepoint around a block: undone whole when it raises. A plain class, not a
    generator: every grouped step enters one."""
    return _NO_SAVEPOINT if needless else _Savepoint(connection)


class _Savepoint:
    __slots__ = ("connection",)

    def __init__(self, connection: sqlite3.Connection) -> None:
        self.connection = connection

    def __enter__(self) -> None:
        self.connection.execute("SAVEPOINT step")

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if kind is None:
            self.connection.execute("RELEASE step")
            return
        quietly(self.connection, "ROLLBACK TO step")
        quietly(self.connection, "RELEASE step")


_NO_SAVEPOINT = nullcontext()


def quietly(connection: sqlite3.Connection, statement: str) -> None:
    with suppress(sqlite3.Error):
        connection.execute(statement)


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


def _not_writable(error: sqlite3.Error) -> bool:
    """Whether SQLite failed because it may not write the file or create files beside it."""
    code = getattr(error, "sqlite_errorcode", None)
    return isinstance(code, int) and code & 0xFF in (_SQLITE_READONLY, _SQLITE_CANTOPEN)
