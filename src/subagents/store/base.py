"""The ``Store`` protocol: where tasks, sessions, messages, checkpoints, the tool ledger and
traces are persisted. :class:`~subagents.store.sqlite.SQLiteStore` is the embedded default; a
server database can implement the same protocol. :func:`subagents.store.open_store` chooses the
implementation from a path or URL.

Two faces of one store. :class:`Store` is blocking: the runtime's recorder, the CLI and the
retention clean-up call it directly (a SQLite step costs tens of microseconds, less than a hop
to a thread). :class:`AsyncStore` has the same operations as coroutines; code on an event loop
that must never block on the database (a server, a worker waiting on a busy file) wraps a
blocking store in :class:`~subagents.store.threaded.ThreadedAsyncStore`.

Transactions. ``store.transaction()`` opens one and yields a :class:`Transaction`; the writes
that take ``tx=`` join it instead of committing on their own, and ``transaction(tx)`` nests a
savepoint in it. A store may also wrap a transaction its caller owns (for SQLite,
:meth:`~subagents.store.sqlite.SQLiteStore.join_transaction`), so that a workflow engine's own
commit carries the step.

Ownership. One runtime at a time runs a task: it holds the task's :class:`TaskLease`, which
expires unless the runner renews it (:class:`~subagents.store.lease.LeaseKeeper` does, while a
run goes on). An expired lease may be claimed by another owner; so may the lease of a process
on this host that is gone.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol

from subagents.store.records import (
    CheckpointRecord,
    SessionRecord,
    TaskRecord,
    ToolLedgerEntry,
    TraceRecord,
)

if TYPE_CHECKING:
    from subagents.store.steplog import EncodedStep

__all__ = [
    "DEFAULT_LEASE_TTL",
    "AsyncStore",
    "StepWrite",
    "Store",
    "StoredMessage",
    "TaskBundle",
    "TaskLease",
    "TaskOwner",
    "TaskScan",
    "Transaction",
    "UnreadableTask",
]

DEFAULT_LEASE_TTL = timedelta(minutes=2)
"""How long a claim on a task lasts unless renewed (:class:`~subagents.store.lease.LeaseKeeper`
renews it four times as often). A runner on another machine that died without releasing its
task holds it this long; one on this host whose process is gone, not at all."""

StoredMessage = tuple[str, int, dict[str, Any]]
"""``(session_id, seq, message dict)``: ``seq`` is 0-based and contiguous per session."""


@dataclass(slots=True, frozen=True)
class TaskOwner:
    """Who runs a task: at most one owner at a time may. ``token`` is random per runtime and is
    what identifies it; ``host`` and ``pid`` say where it runs, for people and to end the lease
    of a process on this host that is gone."""

    host: str
    pid: int
    token: str

    @classmethod
    def this_process(cls) -> TaskOwner:
        import os
        import socket
        import uuid

        return cls(socket.gethostname(), os.getpid(), uuid.uuid4().hex)

    def is_alive(self) -> bool:
        """Whether the owner still runs. A process on another host cannot be checked from
        here and counts as alive (``force`` overrides it)."""
        import os
        import socket

        if self.host != socket.gethostname():
            return True
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


@dataclass(slots=True, frozen=True)
class TaskLease:
    """``owner``'s claim on ``task_id``, valid until ``expires_at``."""

    task_id: str
    owner: TaskOwner
    expires_at: datetime | None
    """None for a claim written before leases existed (by an older subagents): it holds while
    its process runs, as claims did then."""

    def is_live(self, now: datetime) -> bool:
        """Whether the lease still keeps other owners out at ``now``."""
        if self.expires_at is None or self.expires_at > now:
            return self.owner.is_alive()
        return False


class Transaction(Protocol):
    """An open transaction of one store. Writes given it as ``tx`` land when it commits, or
    not at all; a transaction is used on the thread that opened it."""

    @property
    def active(self) -> bool:
        """False once it has committed or rolled back."""
        ...


@dataclass(slots=True)
class StepWrite:
    """Everything one step of a session writes; committed as one transaction.

    ``task`` and ``session`` are upserted; ``messages`` are appended (a ``seq`` that is already
    stored, or that leaves a gap, fails the whole step); ``checkpoint`` gets its ``sequence``
    from the store; ``ledger`` entries are upserted by (task, session, tool call id); ``traces``
    are appended. Every record must belong to ``task_id``.
    """

    task_id: str
    session: SessionRecord | None = None
    messages: Sequence[StoredMessage] = ()
    checkpoint: CheckpointRecord | None = None
    ledger: Sequence[ToolLedgerEntry] = ()
    traces: Sequence[TraceRecord] = ()
    task: TaskRecord | None = None


@dataclass(slots=True)
class TaskBundle:
    """Every record of one task, as export writes it and import reads it back."""

    task: TaskRecord
    sessions: list[SessionRecord] = field(default_factory=list)
    messages: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Session id -> its messages in ``seq`` order."""
    checkpoints: list[CheckpointRecord] = field(default_factory=list)
    ledger: list[ToolLedgerEntry] = field(default_factory=list)
    traces: list[TraceRecord] = field(default_factory=list)


@dataclass(slots=True, frozen=True)
class UnreadableTask:
    """A stored task whose record cannot be read (damaged, or written by a newer subagents):
    listed by id so that a person can inspect it, never judged or removed blindly."""

    task_id: str
    reason: str
    """Why, e.g. ``its record is unreadable (Expecting value: line 1 column 1 (char 0))``."""


@dataclass(slots=True)
class TaskScan:
    """What :meth:`Store.scan_tasks` found: the readable tasks, and the ones it could not read."""

    tasks: list[TaskRecord] = field(default_factory=list)
    unreadable: list[UnreadableTask] = field(default_factory=list)


class Store(Protocol):
    """Durable storage of tasks. Every method raises ``StoreError`` (or a subclass) on failure."""

    @property
    def location(self) -> str:
        """Where the store lives (a file path, or a URL for a server database)."""
        ...

    def create_task(self, task: TaskRecord, *, tx: Transaction | None = None) -> None:
        """Insert a new task; its id must not exist yet."""
        ...

    def get_task(self, task_id: str) -> TaskRecord:
        """The task with this id, or with this unique id prefix (4 characters or more)."""
        ...

    def list_tasks(self, *, status: str | None = None, limit: int | None = 100) -> list[TaskRecord]:
        """Tasks, newest first; ``limit=None`` lists them all."""
        ...

    def scan_tasks(self, *, status: str | None = None, limit: int | None = 100) -> TaskScan:
        """Like :meth:`list_tasks`, but a task whose record cannot be read is reported in
        ``unreadable`` instead of failing the whole listing."""
        ...

    def update_task(self, task: TaskRecord, *, tx: Transaction | None = None) -> None:
        """Replace a stored task (it must exist)."""
        ...

    def commit(self, step: StepWrite, *, tx: Transaction | None = None) -> CheckpointRecord | None:
        """Write one step atomically; returns the checkpoint with its assigned ``sequence``.
        With ``tx`` the step joins that transaction (still all or nothing by itself) and lands
        when it commits."""
        ...

    def append(self, step: EncodedStep, *, tx: Transaction | None = None) -> int | None:
        """:meth:`commit` for a step already encoded by code that built its records to their
        schemas (the runtime's recorder): nothing is validated again. Sets the sequence of
        its checkpoint and returns it (None without one)."""
        ...

    def transaction(self, tx: Transaction | None = None) -> AbstractContextManager[Transaction]:
        """A transaction: every write given it as ``tx`` (and, on the same thread, every
        ``commit`` inside it) lands together or not at all. With ``tx``, a nested one that
        rolls back alone."""
        ...

    def get_session(self, session_id: str) -> SessionRecord: ...

    def sessions(self, task_id: str) -> list[SessionRecord]:
        """The task's sessions in creation order."""
        ...

    def messages(self, session_id: str) -> list[dict[str, Any]]:
        """The session's messages in ``seq`` order."""
        ...

    def latest_checkpoint(
        self, task_id: str, session_id: str | None = None
    ) -> CheckpointRecord | None: ...

    def checkpoints(self, task_id: str) -> list[CheckpointRecord]:
        """The task's checkpoints by ``sequence``."""
        ...

    def ledger(self, task_id: str, session_id: str | None = None) -> list[ToolLedgerEntry]: ...

    def traces(self, task_id: str) -> list[TraceRecord]:
        """The task's trace records in the order they were written."""
        ...

    def delete_task(self, task_id: str) -> None:
        """Remove the task and everything of it (sessions, messages, checkpoints, ...)."""
        ...

    def load_bundle(self, task_id: str) -> TaskBundle:
        """Every record of one task (what export writes)."""
        ...

    def restore_bundle(self, bundle: TaskBundle, *, replace: bool = False) -> None:
        """Write a bundle back as is (checkpoint sequences kept), in one transaction."""
        ...

    def get_meta(self, key: str) -> str | None: ...

    def set_meta(self, key: str, value: str) -> None: ...

    def claim_periodic(self, name: str, *, every: timedelta, now: datetime) -> bool:
        """True (and the time recorded) when ``name`` last ran ``every`` or longer before
        ``now``; atomic, so two processes never both get True."""
        ...

    def claim_task(
        self,
        task_id: str,
        owner: TaskOwner,
        *,
        ttl: timedelta = DEFAULT_LEASE_TTL,
        now: datetime | None = None,
        force: bool = False,
    ) -> TaskLease | None:
        """Give ``owner`` the lease on ``task_id`` until ``now + ttl``, atomically. Returns
        the other owner's lease when it is live (nothing changes then); ``force`` takes the
        task anyway. ``now`` is the current time (injected by tests)."""
        ...

    def renew_lease(
        self,
        task_id: str,
        owner: TaskOwner,
        *,
        ttl: timedelta = DEFAULT_LEASE_TTL,
        now: datetime | None = None,
    ) -> TaskLease:
        """Extend ``owner``'s lease to ``now + ttl`` (taking it again if nobody else did);
        raises :class:`~subagents.errors.TaskLeasedError` when another owner holds it."""
        ...

    def task_lease(self, task_id: str) -> TaskLease | None:
        """The task's current lease, live or expired; None when nobody claimed it."""
        ...

    def release_task(self, task_id: str, owner: TaskOwner) -> None:
        """Give the task up, if ``owner`` still holds it."""
        ...

    def integrity_check(self) -> list[str]:
        """Problems found in the database and in the store's invariants; ``[]`` when fine."""
        ...

    def close(self) -> None: ...

    def __enter__(self) -> Store: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Closes the store."""
        ...


class AsyncStore(Protocol):
    """:class:`Store`'s operations as coroutines, for code that must not block its event loop.
    :class:`~subagents.store.threaded.ThreadedAsyncStore` makes one of any blocking store."""

    @property
    def location(self) -> str: ...

    async def create_task(self, task: TaskRecord, *, tx: Transaction | None = None) -> None: ...

    async def get_task(self, task_id: str) -> TaskRecord: ...

    async def list_tasks(
        self, *, status: str | None = None, limit: int | None = 100
    ) -> list[TaskRecord]: ...

    async def scan_tasks(
        self, *, status: str | None = None, limit: int | None = 100
    ) -> TaskScan: ...

    async def update_task(self, task: TaskRecord, *, tx: Transaction | None = None) -> None: ...

    async def commit(
        self, step: StepWrite, *, tx: Transaction | None = None
    ) -> CheckpointRecord | None: ...

    async def append(self, step: EncodedStep, *, tx: Transaction | None = None) -> int | None: ...

    def transaction(
        self, tx: Transaction | None = None
    ) -> AbstractAsyncContextManager[Transaction]:
        """``async with store.transaction() as tx:``; pass ``tx`` to the writes inside. Other
        callers' writes wait until it ends instead of joining it."""
        ...

    async def get_session(self, session_id: str) -> SessionRecord: ...

    async def sessions(self, task_id: str) -> list[SessionRecord]: ...

    async def messages(self, session_id: str) -> list[dict[str, Any]]: ...

    async def latest_checkpoint(
        self, task_id: str, session_id: str | None = None
    ) -> CheckpointRecord | None: ...

    async def checkpoints(self, task_id: str) -> list[CheckpointRecord]: ...

    async def ledger(
        self, task_id: str, session_id: str | None = None
    ) -> list[ToolLedgerEntry]: ...

    async def traces(self, task_id: str) -> list[TraceRecord]: ...

    async def delete_task(self, task_id: str) -> None: ...

    async def load_bundle(self, task_id: str) -> TaskBundle: ...

    async def restore_bundle(self, bundle: TaskBundle, *, replace: bool = False) -> None: ...

    async def get_meta(self, key: str) -> str | None: ...

    async def set_meta(self, key: str, value: str) -> None: ...

    async def claim_periodic(self, name: str, *, every: timedelta, now: datetime) -> bool: ...

    async def claim_task(
        self,
        task_id: str,
        owner: TaskOwner,
        *,
        ttl: timedelta = DEFAULT_LEASE_TTL,
        now: datetime | None = None,
        force: bool = False,
    ) -> TaskLease | None: ...

    async def renew_lease(
        self,
        task_id: str,
        owner: TaskOwner,
        *,
        ttl: timedelta = DEFAULT_LEASE_TTL,
        now: datetime | None = None,
    ) -> TaskLease: ...

    async def task_lease(self, task_id: str) -> TaskLease | None: ...

    async def release_task(self, task_id: str, owner: TaskOwner) -> None: ...

    async def integrity_check(self) -> list[str]: ...

    async def close(self) -> None: ...
