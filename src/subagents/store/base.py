"""The ``Store`` protocol: where tasks, sessions, messages, checkpoints, the tool ledger and
traces are persisted. :class:`~subagents.store.sqlite.SQLiteStore` is the embedded default; a
server database can implement the same protocol.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

from subagents.store.records import (
    CheckpointRecord,
    SessionRecord,
    TaskRecord,
    ToolLedgerEntry,
    TraceRecord,
)

__all__ = [
    "StepWrite",
    "Store",
    "StoredMessage",
    "TaskBundle",
    "TaskOwner",
    "TaskScan",
    "UnreadableTask",
]

StoredMessage = tuple[str, int, dict[str, Any]]
"""``(session_id, seq, message dict)``: ``seq`` is 0-based and contiguous per session."""


@dataclass(slots=True, frozen=True)
class TaskOwner:
    """The process that runs a task: at most one at a time may."""

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

    def create_task(self, task: TaskRecord) -> None:
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

    def update_task(self, task: TaskRecord) -> None:
        """Replace a stored task (it must exist)."""
        ...

    def commit(self, step: StepWrite) -> CheckpointRecord | None:
        """Write one step atomically; returns the checkpoint with its assigned ``sequence``."""
        ...

    def transaction(self) -> AbstractContextManager[None]:
        """An outer transaction: every ``commit`` inside it lands together or not at all."""
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
        self, task_id: str, owner: TaskOwner, *, force: bool = False
    ) -> TaskOwner | None:
        """Make ``owner`` the one process running ``task_id``, atomically. Returns the other
        owner when a live one holds the task (nothing changes then); ``force`` takes it anyway."""
        ...

    def release_task(self, task_id: str, owner: TaskOwner) -> None:
        """Give the task up, if ``owner`` still holds it."""
        ...

    def integrity_check(self) -> list[str]:
        """Problems found in the database and in the store's invariants; ``[]`` when fine."""
        ...

    def close(self) -> None: ...
