"""The step log, whatever the database: a task's records as the rows of its steps.

Each step of a session is one row: its new messages, its checkpoint, its tool ledger entries
and its trace records, each a JSON value (``None`` when the step wrote none), numbered in its
task. ``next_checkpoint`` is the sequence the task's next checkpoint gets, carried forward from
row to row, so that a store hands out contiguous sequences by reading the task's last row. The
ledger reads as upserted (a later entry for a call replaces the earlier one, which keeps its
place). The databases keep these rows as they see fit (:mod:`subagents.store.sqlite.steps`,
:mod:`subagents.store.postgres`); this module is how records become rows and rows records.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from subagents.errors import StoreCorruptError, StoreError, TaskNotFoundError
from subagents.store.base import StepWrite, StoredMessage
from subagents.store.codec import dump_json, dump_record, load_json, load_record, record_from_data
from subagents.store.records import CheckpointRecord, ToolLedgerEntry, TraceRecord

__all__ = [
    "UNSET_SEQUENCE",
    "EncodedStep",
    "StepRow",
    "checkpoint_records",
    "checkpoint_text",
    "json_array",
    "ledger_records",
    "message",
    "message_rows",
    "message_text",
    "message_values",
    "require_owner",
    "seq_problem",
    "step_rows",
    "task_not_stored",
    "trace_records",
    "whole_task_rows",
    "with_sequence",
]


UNSET_SEQUENCE = -1
"""The ``sequence`` an encoded checkpoint carries until the store numbers it
(:func:`with_sequence`)."""
_UNSET = f'"sequence":{UNSET_SEQUENCE},'


class StepRow(NamedTuple):
    """One session's part of a step, encoded: its new messages (a JSON array of
    ``message_count``, the first numbered ``first_seq`` in the session), its checkpoint (a
    JSON object whose ``sequence`` is :data:`UNSET_SEQUENCE` until the store numbers it), its
    ledger entries and its trace records (JSON arrays); None where the step has none. Strings
    in a tuple: the steps waiting for a group commit hold nothing the garbage collector has to
    visit."""

    session_id: str | None
    messages: str | None = None
    message_count: int = 0
    first_seq: int = 0
    checkpoint: str | None = None
    ledger: str | None = None
    traces: str | None = None


class EncodedStep(NamedTuple):
    """One step as the stores write it: its task and session records as rows (when it has
    them) and its steps, every record checked to belong to ``task_id``. The recorder builds
    it directly; :func:`~subagents.store.shared.encode_step` makes one of a
    :class:`~subagents.store.base.StepWrite`."""

    task_id: str
    task: tuple[str, str, str | None, float, str] | None
    session: tuple[str, str, str] | None
    rows: tuple[StepRow, ...]


def with_sequence(checkpoint: str, sequence: int) -> str:
    """The encoded ``checkpoint`` numbered ``sequence``. Its first ``"sequence":-1,`` is the
    record's own field: the fields before it are an integer and strings, inside which JSON
    escapes every quote."""
    at = checkpoint.find(_UNSET)
    if at < 0:
        raise StoreError(
            "a checkpoint to store has no sequence to set",
            hint="encode checkpoints with steplog.checkpoint_text()",
        )
    return f'{checkpoint[:at]}"sequence":{sequence},{checkpoint[at + len(_UNSET) :]}'


def checkpoint_text(fields: dict[str, Any]) -> str:
    """A checkpoint's fields (JSON-ready, in the record's order, ``sequence`` among them
    before ``position``) encoded for a :class:`StepRow`: its sequence left for the store to
    set (:func:`with_sequence`)."""
    fields["sequence"] = UNSET_SEQUENCE
    return dump_json(fields)


def json_array(items: Sequence[str]) -> str | None:
    """Encoded JSON values as one JSON array; None for none."""
    return f"[{','.join(items)}]" if items else None


def step_rows(step: StepWrite) -> tuple[StepRow, ...]:
    """``step`` split by session, in the order its sessions first appear, every record
    checked to belong to its task and encoded."""
    task_id = step.task_id
    parts: dict[str | None, _Part] = {}

    def part(session_id: str | None) -> _Part:
        found = parts.get(session_id)
        if found is None:
            found = parts[session_id] = _Part()
        return found

    for session_id, seq, text in message_rows(step.messages):
        found = part(session_id)
        if not found.messages:
            found.first_seq = seq
        else:
            _check_follows(session_id, seq, found.first_seq + len(found.messages))
        found.messages.append(text)
    if step.checkpoint is not None:
        require_owner(task_id, step.checkpoint.task_id, "the checkpoint")
        part(step.checkpoint.session_id).checkpoint = checkpoint_text(step.checkpoint.model_dump())
    for entry in step.ledger:
        require_owner(task_id, entry.task_id, "a ledger entry")
        part(entry.session_id).ledger.append(dump_record(entry))
    for trace in step.traces:
        require_owner(task_id, trace.task_id, "a trace record")
        part(trace.session_id).traces.append(dump_record(trace))
    return tuple(
        StepRow(
            session_id,
            json_array(found.messages),
            len(found.messages),
            found.first_seq,
            found.checkpoint,
            json_array(found.ledger),
            json_array(found.traces),
        )
        for session_id, found in parts.items()
    )


@dataclass(slots=True)
class _Part:
    """A session's part of a step, being encoded."""

    messages: list[str] = field(default_factory=list)
    first_seq: int = 0
    checkpoint: str | None = None
    ledger: list[str] = field(default_factory=list)
    traces: list[str] = field(default_factory=list)


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


def task_not_stored(task_id: str, where: str) -> TaskNotFoundError:
    """The error of a step written for a task that ``where`` (a store's file or server) does
    not hold."""
    return TaskNotFoundError(
        f"no task {task_id} in {where}",
        hint="create the task with create_task() before writing its steps",
    )


def seq_problem(task_id: str, part: StepRow, found: tuple[str, int] | None) -> StoreError:
    """Why ``part``'s messages could not follow its session's (``found``: the session's
    task and next seq as stored, or None when it is not stored)."""
    if found is None:
        return StoreError(
            f"a message of task {task_id} belongs to a session that is not stored",
            hint="put the session record in the StepWrite of its first messages",
        )
    owner, expected = found
    if owner != task_id:
        return StoreError(
            f"a session id of task {task_id} belongs to another task",
            hint="give every session a fresh id",
        )
    if part.first_seq < expected:
        return StoreError(
            f"message {part.first_seq} of session {part.session_id} is already stored "
            f"(messages are append-only; the next seq is {expected})",
            hint="append new messages with the next seq instead of rewriting history",
        )
    return StoreError(
        f"message {part.first_seq} of session {part.session_id} would leave a gap "
        f"(the next seq is {expected})",
        hint="commit every message of the session, in order",
    )


def whole_task_rows(
    messages: Iterable[tuple[str, Sequence[str]]],
    checkpoints: Iterable[tuple[str, int, str]],
    ledger: Iterable[tuple[str, str]],
    traces: Iterable[tuple[str | None, str]],
) -> list[tuple[Any, ...]]:
    """The rows of a whole task written at once (an import, an upgrade), from encoded
    records, each ``(step number, session id, next_checkpoint, messages, checkpoint, ledger,
    traces)``: a row of messages per session, a row per checkpoint (in sequence order, each
    keeping its sequence), then the ledger and the traces in rows of consecutive entries of
    one session, so that every list reads back in its order."""
    rows: list[tuple[Any, ...]] = []
    next_checkpoint = 0

    def add(session_id: str | None, column: int, value: str) -> None:
        row: list[Any] = [len(rows), session_id, next_checkpoint, None, None, None, None]
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


def require_owner(task_id: str, owner: str, what: str) -> None:
    if owner != task_id:
        raise StoreError(
            f"{what} belongs to task {owner}, not to task {task_id} being written",
            hint="write each task's records in its own StepWrite",
        )


def message_rows(messages: Iterable[StoredMessage]) -> list[tuple[str, int, str]]:
    return [
        (session_id, seq, message_text(session_id, seq, value))
        for session_id, seq, value in messages
    ]


def message_text(session_id: str, seq: int, value: Any) -> str:
    """Message ``seq`` of ``session_id`` as stored JSON; an error saying why it cannot be."""
    try:
        return dump_json(value)
    except (TypeError, ValueError) as error:
        raise StoreError(
            f"cannot store message {seq} of session {session_id}: {error}",
            hint="store messages as dicts of JSON values "
            "(subagents.messages.message_to_dict makes them)",
        ) from None


def message(value: Any, where: str) -> dict[str, Any]:
    """A stored message as read back: it must be a JSON object."""
    if not isinstance(value, dict):
        raise StoreCorruptError(
            f"{where} is not a JSON object",
            hint="export the other tasks with 'subagents export', or move the store aside",
        )
    return value


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
