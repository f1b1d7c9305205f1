"""What the SQLite and the PostgreSQL stores do alike, whatever their SQL: a task as a row, the
query that lists tasks, the choice of a task by its id or a prefix of it, a step and a whole
task encoded (and checked) before the database is touched, a step of a group appended so that
it fails alone, and when a periodic job is due."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, get_args

from subagents.errors import StoreError, TaskNotFoundError
from subagents.store.base import StepWrite, Store, TaskBundle, Transaction
from subagents.store.codec import dump_record
from subagents.store.lease import aware
from subagents.store.records import TaskRecord, TaskStatus
from subagents.store.steplog import (
    EncodedStep,
    message_text,
    require_owner,
    step_rows,
    whole_task_rows,
)

__all__ = [
    "MIN_ID_PREFIX",
    "EncodedBundle",
    "appended",
    "chosen_task",
    "encode_bundle",
    "encode_step",
    "periodic_due",
    "task_query",
    "task_row",
]

MIN_ID_PREFIX = 4
"""A task may be named by a unique prefix of its id this long or longer, as in git."""

_TASK_STATUSES: tuple[str, ...] = get_args(TaskStatus)


def task_row(task: TaskRecord) -> tuple[str, str, str | None, float, str]:
    """``(id, status, parent_task_id, created_ts, data)``, as both stores' ``tasks`` keep it."""
    return (
        task.id,
        task.status,
        task.parent_task_id,
        task.created_at.timestamp(),
        dump_record(task),
    )


def task_query(
    status: str | None, limit: int | None, *, mark: str, newest: str
) -> tuple[str, list[Any]]:
    """The query of the tasks listed newest first (``mark``: the placeholder, ``newest``:
    the column that orders tasks created at the same moment)."""
    sql = "SELECT id, data FROM tasks"
    parameters: list[Any] = []
    if status is not None:
        if status not in _TASK_STATUSES:
            raise StoreError(
                f"unknown task status {status!r}",
                hint=f"use one of: {', '.join(_TASK_STATUSES)}",
            )
        sql += f" WHERE status = {mark}"
        parameters.append(status)
    sql += f" ORDER BY created_ts DESC, {newest} DESC"
    if limit is not None:
        sql += f" LIMIT {mark}"
        parameters.append(max(limit, 0))
    return sql, parameters


def chosen_task(
    task_id: str, exact: str | None, prefixed: Sequence[tuple[str, str]], where: str
) -> str:
    """The record (JSON) of the task ``task_id`` names: ``exact`` when its id matched, else
    the only one of ``prefixed`` (id, data: the first few tasks whose id starts with it, read
    only for a prefix of :data:`MIN_ID_PREFIX` characters or more); an error saying why not."""
    if exact is not None:
        return exact
    if len(prefixed) > 1:
        shown = ", ".join(task for task, _ in prefixed[:5])
        raise StoreError(
            f"the task id prefix {task_id!r} matches several tasks ({shown})",
            hint="give more characters of the id (see 'subagents tasks list')",
        )
    if not prefixed:
        raise TaskNotFoundError(
            f"no task {task_id!r} in {where}",
            hint="run 'subagents tasks list' to see the task ids",
        )
    return prefixed[0][1]


def encode_step(step: StepWrite) -> EncodedStep:
    task_id = step.task_id
    task = None
    if step.task is not None:
        require_owner(task_id, step.task.id, "the task record")
        task = task_row(step.task)
    session = None
    if step.session is not None:
        require_owner(task_id, step.session.task_id, "the session")
        session = (step.session.session_id, task_id, dump_record(step.session))
    return EncodedStep(task_id, task, session, step_rows(step))


@dataclass(slots=True)
class EncodedBundle:
    """A whole task as rows: its sessions ``(session_id, task_id, data, next_seq)`` and its
    steps, numbered from 0 (see :func:`~subagents.store.steplog.whole_task_rows`)."""

    task: tuple[str, str, str | None, float, str]
    sessions: list[tuple[str, str, str, int]]
    steps: list[tuple[Any, ...]]

    @property
    def counters(self) -> tuple[int, int]:
        """The task's last step number and the sequence its next checkpoint gets."""
        return len(self.steps) - 1, self.steps[-1][2] if self.steps else 0


def encode_bundle(bundle: TaskBundle) -> EncodedBundle:
    """``bundle`` as rows, every record checked to belong to its task and every message to a
    session the bundle has."""
    task_id = bundle.task.id
    owners = [
        *(("a session", s.task_id) for s in bundle.sessions),
        *(("a checkpoint", c.task_id) for c in bundle.checkpoints),
        *(("a ledger entry", e.task_id) for e in bundle.ledger),
        *(("a trace record", t.task_id) for t in bundle.traces),
    ]
    for what, owner in owners:
        require_owner(task_id, owner, what)
    stored = {session.session_id for session in bundle.sessions}
    if any(sid not in stored for sid, values in bundle.messages.items() if values):
        raise StoreError(
            f"a message of task {task_id} belongs to a session that is not stored",
            hint="put the session record in the StepWrite of its first messages",
        )
    sessions = [
        (s.session_id, task_id, dump_record(s), len(bundle.messages.get(s.session_id, ())))
        for s in bundle.sessions
    ]
    steps = whole_task_rows(
        [
            (sid, [message_text(sid, seq, value) for seq, value in enumerate(values)])
            for sid, values in bundle.messages.items()
        ],
        [(c.session_id, c.sequence, dump_record(c)) for c in bundle.checkpoints],
        [(entry.session_id, dump_record(entry)) for entry in bundle.ledger],
        [(trace.session_id, dump_record(trace)) for trace in bundle.traces],
    )
    return EncodedBundle(task_row(bundle.task), sessions, steps)


def periodic_due(recorded: str | None, now: datetime, every: timedelta) -> bool:
    """Whether a periodic job last recorded at ``recorded`` (ISO time, or None) is due at
    ``now``. A recorded time in the future (the clock was set back) does not block forever."""
    if recorded is None:
        return True
    try:
        last = aware(datetime.fromisoformat(recorded))
    except ValueError:
        return True
    return not last <= now < last + every


def appended(
    store: Store, write: EncodedStep, tx: Transaction | None = None
) -> int | Exception | None:
    """``write`` appended (in ``tx``, when given): its checkpoint's sequence, or the error
    that fails its writer only, returned rather than raised (each step of a group falls
    alone)."""
    try:
        return store.append(write, tx=tx)
    except Exception as error:
        return error
