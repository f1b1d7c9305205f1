"""The step log: each step of a task is one row of ``steps``, appended.

A row holds what one session wrote in one step: its new messages, its checkpoint, its tool
ledger entries and its trace records, each column a JSON value (``NULL`` when the step wrote
none). The row's ``key`` is the task's number (``tasks.no``) shifted left by 32 bits, plus the
step's number in its task, so a task's rows are one contiguous range of the table's own
B-tree: appending a step writes one page of it (and, when it has messages, the page of its
session's row in ``sessions``, where ``next_seq`` keeps message seqs contiguous), and reading a
task is a range scan. Four indexed tables cost about ten WAL pages a step; this costs two.

``next_checkpoint`` is the sequence the task's next checkpoint gets, carried forward from row
to row, so that the store hands out contiguous sequences by reading the task's last row alone.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from subagents.errors import StoreError
from subagents.store.codec import dump_record
from subagents.store.records import CheckpointRecord
from subagents.store.steplog import StepRow, json_array, seq_problem

__all__ = ["INSERT_STEP", "TASK_AND_LAST_STEP", "append_rows", "task_range"]

_STEP_BITS = 32
_LAST_STEP_NUMBER = (1 << _STEP_BITS) - 1

INSERT_STEP = (
    "INSERT INTO steps (key, session_id, next_checkpoint, messages, checkpoint, ledger, traces) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)"
)
# A task's number, and its last row's key and next_checkpoint (NULLs before its first row), in
# one statement (two cost a tenth of a step more); no row for a task that is not stored.
TASK_AND_LAST_STEP = (
    "SELECT tasks.no, steps.key, steps.next_checkpoint FROM tasks LEFT JOIN steps ON steps.key = "
    f"(SELECT key FROM steps WHERE key BETWEEN tasks.no << {_STEP_BITS} "
    f"AND (tasks.no << {_STEP_BITS}) | {_LAST_STEP_NUMBER} ORDER BY key DESC LIMIT 1) "
    "WHERE tasks.id = ?"
)
_ADVANCE_SEQ = (
    "UPDATE sessions SET next_seq = ? WHERE session_id = ? AND task_id = ? AND next_seq = ?"
)


def task_range(task_no: int) -> tuple[int, int]:
    """The first and last key a task's rows may have."""
    first = task_no << _STEP_BITS
    return first, first | _LAST_STEP_NUMBER


def append_rows(
    connection: sqlite3.Connection,
    task_id: str,
    task: tuple[int, int | None, int | None],
    rows: Iterable[StepRow],
) -> CheckpointRecord | None:
    """Append ``rows`` to the task's log (inside the caller's write transaction); ``task``:
    its row of :data:`TASK_AND_LAST_STEP`. Returns the checkpoint among them as stored, with
    its sequence."""
    task_no, key, next_checkpoint = task
    first, last = task_range(task_no)
    if key is None or next_checkpoint is None:
        key, next_checkpoint = first - 1, 0
    saved = None
    values = []
    for part in rows:
        if part.messages:
            _advance_seq(connection, task_id, part)
        checkpoint = None
        if part.checkpoint is not None:
            saved = part.checkpoint.model_copy(update={"sequence": next_checkpoint})
            checkpoint = dump_record(saved)
            next_checkpoint += 1
        key += 1
        if key > last:
            raise StoreError(
                f"task {task_id} has 2^32 steps stored: no more fit",
                hint="start a new task",
            )
        values.append(
            (
                key,
                part.session_id,
                next_checkpoint,
                json_array(part.messages),
                checkpoint,
                json_array(part.ledger),
                json_array(part.traces),
            )
        )
    connection.executemany(INSERT_STEP, values)
    return saved


def _advance_seq(connection: sqlite3.Connection, task_id: str, part: StepRow) -> None:
    following = part.first_seq + len(part.messages)
    parameters = (following, part.session_id, task_id, part.first_seq)
    if connection.execute(_ADVANCE_SEQ, parameters).rowcount == 1:
        return
    found = connection.execute(
        "SELECT task_id, next_seq FROM sessions WHERE session_id = ?", (part.session_id,)
    ).fetchone()
    raise seq_problem(task_id, part, found)
