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
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from subagents.errors import StoreCorruptError, StoreError
from subagents.store.base import StepWrite
from subagents.store.codec import dump_record, load_json, load_record, record_from_data
from subagents.store.records import CheckpointRecord, ToolLedgerEntry, TraceRecord
from subagents.store.sqlite.rows import message, message_rows, require_owner

__all__ = [
    "INSERT_STEP",
    "LAST_STEP",
    "StepRow",
    "append_rows",
    "checkpoint_records",
    "json_array",
    "ledger_records",
    "message_values",
    "step_rows",
    "task_range",
    "trace_records",
    "whole_task_rows",
]

_STEP_BITS = 32
_LAST_STEP_NUMBER = (1 << _STEP_BITS) - 1

INSERT_STEP = (
    "INSERT INTO steps (key, session_id, next_checkpoint, messages, checkpoint, ledger, traces) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)"
)
LAST_STEP = (
    "SELECT key, next_checkpoint FROM steps WHERE key BETWEEN ? AND ? ORDER BY key DESC LIMIT 1"
)
_ADVANCE_SEQ = (
    "UPDATE sessions SET next_seq = ? WHERE session_id = ? AND task_id = ? AND next_seq = ?"
)


def task_range(task_no: int) -> tuple[int, int]:
    """The first and last key a task's rows may have."""
    first = task_no << _STEP_BITS
    return first, first | _LAST_STEP_NUMBER


@dataclass(slots=True)
class StepRow:
    """One session's part of a step, encoded but for its checkpoint (whose sequence the
    store assigns in the write transaction)."""

    session_id: str | None
    messages: list[str] = field(default_factory=list)
    first_seq: int = 0
    checkpoint: CheckpointRecord | None = None
    ledger: list[str] = field(default_factory=list)
    traces: list[str] = field(default_factory=list)


def json_array(items: Sequence[str]) -> str | None:
    """Encoded JSON values as one JSON array; None for none."""
    return f"[{','.join(items)}]" if items else None


def step_rows(step: StepWrite) -> list[StepRow]:
    """``step`` split by session, in the order its sessions first appear, every record
    checked to belong to its task and encoded."""
    task_id = step.task_id
    rows: dict[str | None, StepRow] = {}

    def row(session_id: str | None) -> StepRow:
        found = rows.get(session_id)
        if found is None:
            found = rows[session_id] = StepRow(session_id)
        return found

    for session_id, seq, text in message_rows(step.messages):
        part = row(session_id)
        if not part.messages:
            part.first_seq = seq
        else:
            _check_follows(session_id, seq, part.first_seq + len(part.messages))
        part.messages.append(text)
    if step.checkpoint is not None:
        require_owner(task_id, step.checkpoint.task_id, "the checkpoint")
        row(step.checkpoint.session_id).checkpoint = step.checkpoint
    for entry in step.ledger:
        require_owner(task_id, entry.task_id, "a ledger entry")
        row(entry.session_id).ledger.append(dump_record(entry))
    for trace in step.traces:
        require_owner(task_id, trace.task_id, "a trace record")
        row(trace.session_id).traces.append(dump_record(trace))
    return list(rows.values())


def _check_follows(session_id: str, seq: int, expected: int) -> None:
    if seq > expected:
        raise StoreError(
            f"message {seq} of session {session_id} would leave a gap (the next seq is {expected})",
            hint="commit every message of the session, in order",
        )
    if seq < expected:
        raise StoreError(
            f"message {seq} of session {session_id} is already in this step "
            f"(messages are append-only; the next seq is {expected})",
            hint="append new messages with the next seq instead of rewriting history",
        )


def append_rows(
    connection: sqlite3.Connection, task_id: str, task_no: int, rows: Iterable[StepRow]
) -> CheckpointRecord | None:
    """Append ``rows`` to the task's log (inside the caller's write transaction); the
    checkpoint among them as stored, with its sequence."""
    first, last = task_range(task_no)
    found = connection.execute(LAST_STEP, (first, last)).fetchone()
    key, next_checkpoint = (first - 1, 0) if found is None else found
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
    if found is None:
        raise StoreError(
            f"a message of task {task_id} belongs to a session that is not stored",
            hint="put the session record in the StepWrite of its first messages",
        )
    owner, expected = found
    if owner != task_id:
        raise StoreError(
            f"a session id of task {task_id} belongs to another task",
            hint="give every session a fresh id",
        )
    if part.first_seq < expected:
        raise StoreError(
            f"message {part.first_seq} of session {part.session_id} is already stored "
            f"(messages are append-only; the next seq is {expected})",
            hint="append new messages with the next seq instead of rewriting history",
        )
    raise StoreError(
        f"message {part.first_seq} of session {part.session_id} would leave a gap "
        f"(the next seq is {expected})",
        hint="commit every message of the session, in order",
    )


def whole_task_rows(
    task_no: int,
    messages: Iterable[tuple[str, Sequence[str]]],
    checkpoints: Iterable[tuple[str, int, str]],
    ledger: Iterable[tuple[str, str]],
    traces: Iterable[tuple[str | None, str]],
) -> list[tuple[Any, ...]]:
    """The rows of a whole task written at once (an import, an upgrade), from encoded
    records: a row of messages per session, a row per checkpoint (in sequence order, each
    keeping its sequence), then the ledger and the traces in rows of consecutive entries of
    one session, so that every list reads back in its order."""
    first, _ = task_range(task_no)
    rows: list[tuple[Any, ...]] = []
    next_checkpoint = 0

    def add(session_id: str | None, column: int, value: str) -> None:
        row: list[Any] = [first + len(rows), session_id, next_checkpoint, None, None, None, None]
        row[column] = value
        rows.append(tuple(row))

    for session_id, texts in messages:
        if texts:
            add(session_id, 3, f"[{','.join(texts)}]")
    for session_id, sequence, text in sorted(checkpoints, key=lambda item: item[1]):
        next_checkpoint = max(next_checkpoint, sequence + 1)
        add(session_id, 4, text)
    for column, entries in ((5, ledger), (6, traces)):
        for owner, run in _runs(entries):
            add(owner, column, f"[{','.join(run)}]")
    return rows


def _runs(entries: Iterable[tuple[str | None, str]]) -> Iterator[tuple[str | None, list[str]]]:
    """Consecutive entries of one session, together."""
    current: list[str] = []
    owner: str | None = None
    for session_id, text in entries:
        if current and session_id != owner:
            yield owner, current
            current = []
        owner = session_id
        current.append(text)
    if current:
        yield owner, current


# -- reading ---------------------------------------------------------------------------------


def _items(texts: Iterable[str], where: str) -> Iterator[Any]:
    for text in texts:
        values = load_json(text, where=where)
        if not isinstance(values, list):
            raise StoreCorruptError(
                f"{where} is not a JSON array",
                hint="export the other tasks with 'subagents export', or move the store aside",
            )
        yield from values


def message_values(texts: Iterable[str], where: str) -> list[dict[str, Any]]:
    """The messages of ``texts`` (``messages`` columns, in key order)."""
    return [message(value, where) for value in _items(texts, where)]


def checkpoint_records(texts: Iterable[str], where: str) -> list[CheckpointRecord]:
    return [load_record(CheckpointRecord, text, where=where) for text in texts]


def ledger_records(texts: Iterable[str], where: str) -> list[ToolLedgerEntry]:
    """The ledger as it stands: a later entry for a call replaces the earlier one, which
    keeps its place."""
    entries: dict[tuple[str, str], ToolLedgerEntry] = {}
    for value in _items(texts, where):
        entry = record_from_data(ToolLedgerEntry, value, where=where)
        entries[entry.session_id, entry.tool_call_id] = entry
    return list(entries.values())


def trace_records(texts: Iterable[str], where: str) -> list[TraceRecord]:
    return [record_from_data(TraceRecord, value, where=where) for value in _items(texts, where)]
