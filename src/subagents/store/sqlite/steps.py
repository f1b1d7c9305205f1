"""The step log: each step of a task is one row of ``steps``, appended.

A row holds what one session wrote in one step: its new messages, its checkpoint, its tool
ledger entries and its trace records, each column a JSON value (``NULL`` when the step wrote
none). The row's ``key`` is the task's number (``tasks.no``) shifted left by 32 bits, plus the
step's number in its task, so a task's rows are one contiguous range of the table's own
B-tree: appending a step writes one page of it, and reading a task is a range scan.
``first_seq`` is the seq of the row's first message in its session, so that the rows of a
session say themselves whether they follow each other (``tasks check`` reads them so).
``next_checkpoint`` is the sequence the task's next checkpoint gets, carried from row to row.

Appending a step is one ``INSERT``. A step that carries its session's record is one too,
into the view ``session_steps``: its trigger (:data:`~subagents.store.sqlite.schema.
SESSION_STEPS`) upserts the record and appends the row, so that the two stand or fall together
without a transaction of their own. The store keeps, for each task it writes, where the task's
log ends (:class:`Tail`: the task's number, its last key, its next checkpoint sequence and each
session's next message seq), read once from the rows and then kept up to date by its own
writes. The ``INSERT`` checks the two things another writer could have changed meanwhile: the
task still has its number (``WHERE EXISTS``: a task deleted, or deleted and its number handed
out again, takes no row), and no row has the key (its primary key: another writer appended
first). Either way the tail is read again from the rows and the step checked against it, so a
step is refused exactly when it would have been had the tail been read for it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field

from subagents.errors import StoreError
from subagents.store.steplog import StepRow, seq_problem, task_not_stored, with_sequence

__all__ = [
    "INSERT_STEP",
    "SESSION_OF_ANOTHER_TASK",
    "TASK_MOVED",
    "StaleTail",
    "Tail",
    "append_rows",
    "new_task_tail",
    "read_tail",
    "task_range",
]

_STEP_BITS = 32
_LAST_STEP_NUMBER = (1 << _STEP_BITS) - 1

INSERT_STEP = (
    "INSERT INTO steps (key, session_id, next_checkpoint, first_seq, messages, checkpoint, "
    "ledger, traces) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
_APPEND_STEP = (
    "INSERT INTO steps (key, session_id, next_checkpoint, first_seq, messages, checkpoint, "
    "ledger, traces) SELECT ?, ?, ?, ?, ?, ?, ?, ? "
    "WHERE EXISTS (SELECT 1 FROM tasks WHERE no = ? AND id = ?)"
)
_APPEND_SESSION_STEP = (
    "INSERT INTO session_steps (key, session_id, next_checkpoint, first_seq, messages, "
    "checkpoint, ledger, traces, task_no, task_id, session) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
TASK_MOVED = "subagents: the task is not numbered as the step says"
"""Why ``session_steps``' trigger refuses a step whose task was deleted or renumbered."""
SESSION_OF_ANOTHER_TASK = "subagents: the session belongs to another task"
"""Why ``session_steps``' trigger refuses a step whose session record is another task's."""
# A task's number, and its last row's key and next_checkpoint (NULLs before its first row), in
# one statement; no row for a task that is not stored.
_TASK_AND_LAST_STEP = (
    "SELECT tasks.no, steps.key, steps.next_checkpoint FROM tasks LEFT JOIN steps ON steps.key = "
    f"(SELECT key FROM steps WHERE key BETWEEN tasks.no << {_STEP_BITS} "
    f"AND (tasks.no << {_STEP_BITS}) | {_LAST_STEP_NUMBER} ORDER BY key DESC LIMIT 1) "
    "WHERE tasks.id = ?"
)
# A session's task, and the seq of its next message (from its last row of messages).
_SESSION_AND_NEXT_SEQ = (
    "SELECT task_id, (SELECT first_seq + json_array_length(messages) FROM steps "
    "WHERE key BETWEEN ? AND ? AND steps.session_id = sessions.session_id "
    "AND messages IS NOT NULL ORDER BY key DESC LIMIT 1) FROM sessions WHERE session_id = ?"
)


class StaleTail(Exception):
    """The log no longer ends where the tail says: another writer appended, or the task was
    deleted or given another number. Read the tail again."""


def task_range(task_no: int) -> tuple[int, int]:
    """The first and last key a task's rows may have."""
    first = task_no << _STEP_BITS
    return first, first | _LAST_STEP_NUMBER


@dataclass(slots=True)
class Tail:
    """Where one task's log ends (see the module docstring)."""

    task_id: str
    task_no: int
    last_key: int
    next_checkpoint: int
    next_seq: dict[str, int] = field(default_factory=dict)
    """The next message seq of each session this tail has seen write messages."""
    fresh: bool = True
    """Read from the rows within this write, not kept from an earlier one: a step that does
    not follow a kept tail may follow the log as it is (another writer moved it)."""
    whole: bool = False
    """Kept since the task was created, so ``next_seq`` holds every session that has written
    messages: one not there has none yet (were the tail stale, the step's key would clash)."""


def read_tail(connection: sqlite3.Connection, task_id: str, where: str) -> Tail:
    """The tail of ``task_id``'s log as its rows are now; TaskNotFoundError without the task."""
    found = connection.execute(_TASK_AND_LAST_STEP, (task_id,)).fetchone()
    if found is None:
        raise task_not_stored(task_id, where)
    task_no, key, next_checkpoint = found
    if key is None or next_checkpoint is None:
        key, next_checkpoint = task_range(task_no)[0] - 1, 0
    return Tail(task_id, int(task_no), int(key), int(next_checkpoint))


def new_task_tail(task_id: str, task_no: int) -> Tail:
    """The tail of a task just created, numbered ``task_no``: no rows yet."""
    return Tail(task_id, task_no, task_range(task_no)[0] - 1, 0, fresh=False, whole=True)


def append_rows(
    connection: sqlite3.Connection,
    tail: Tail,
    rows: Sequence[StepRow],
    where: str,
    recorded: str | None = None,
    session: tuple[str, str, str] | None = None,
) -> int | None:
    """Append ``rows`` to the log ``tail`` ends (inside the caller's write transaction, or as
    one statement of its own); ``tail`` moves on only when they are written. Returns the
    sequence of the last checkpoint among them; StaleTail when the log has moved (nothing
    was written). ``recorded``: a session whose record of this task the same write stored.
    ``session``: the record (id, task id, JSON) of the one row's session, of this task, to
    store with the row in the same statement."""
    task_id = tail.task_id
    if session is not None:
        recorded = session[0]
    next_seq = dict(tail.next_seq)
    key, next_checkpoint = tail.last_key, tail.next_checkpoint
    last = task_range(tail.task_no)[1]
    sequence = None
    values = []
    for part in rows:
        first_seq = None
        if part.messages is not None:
            first_seq = part.first_seq
            expected = _next_seq(connection, tail, next_seq, part, recorded, session)
            if first_seq != expected:
                if not tail.fresh:
                    raise StaleTail
                raise seq_problem(task_id, part, (task_id, expected))
            next_seq[part.session_id or ""] = first_seq + part.message_count
        checkpoint = part.checkpoint
        if checkpoint is not None:
            checkpoint = with_sequence(checkpoint, next_checkpoint)
            sequence = next_checkpoint
            next_checkpoint += 1
        key += 1
        if key > last:
            raise StoreError(
                f"task {task_id} has 2^32 steps stored: no more fit", hint="start a new task"
            )
        values.append(
            (
                key,
                part.session_id,
                next_checkpoint,
                first_seq,
                part.messages,
                checkpoint,
                part.ledger,
                part.traces,
                tail.task_no,
                task_id,
            )
        )
    try:
        if session is not None:  # the trigger raises where the rows' check would find none
            (row,) = values
            connection.execute(_APPEND_SESSION_STEP, (*row, session[2]))
        elif len(values) == 1:
            written = connection.execute(_APPEND_STEP, values[0]).rowcount
        else:
            written = connection.executemany(_APPEND_STEP, values).rowcount
    except sqlite3.IntegrityError as error:
        text = str(error)
        if "steps.key" in text or text == TASK_MOVED:
            raise StaleTail from None
        raise
    if session is None and written != len(values):  # all or none: the rows check one task
        raise StaleTail
    tail.last_key, tail.next_checkpoint, tail.next_seq = key, next_checkpoint, next_seq
    return sequence


def _next_seq(
    connection: sqlite3.Connection,
    tail: Tail,
    known: dict[str, int],
    part: StepRow,
    recorded: str | None,
    session: tuple[str, str, str] | None,
) -> int:
    """The seq ``part``'s session's next message must have: known to the tail, 0 for a
    session new to a whole tail whose record the write stored, or read from the session's
    last row (after checking that the session is stored, and is the task's); 0 too for a
    session not stored whose record the same statement stores (``session``)."""
    session_id = part.session_id or ""
    found = known.get(session_id)
    if found is not None:
        return found
    if tail.whole and session_id == recorded:
        return 0
    first, last = task_range(tail.task_no)
    found = connection.execute(_SESSION_AND_NEXT_SEQ, (first, last, session_id)).fetchone()
    if found is None and session is not None:
        return 0
    if found is None or found[0] != tail.task_id:
        raise seq_problem(tail.task_id, part, None if found is None else (found[0], 0))
    return 0 if found[1] is None else int(found[1])
