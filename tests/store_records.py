"""Builders of store records shared by the store tests (this module holds no tests)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from subagents.messages import AssistantMessage, ToolCall, UserMessage, message_to_dict
from subagents.store import (
    CheckpointRecord,
    SessionRecord,
    StepWrite,
    TaskRecord,
    ToolLedgerEntry,
    TraceRecord,
)
from subagents.store.base import Store
from subagents.store.sqlite.schema import MIGRATIONS

__all__ = [
    "empty_store_of_schema",
    "make_checkpoint",
    "make_ledger",
    "make_session",
    "make_task",
    "make_trace",
    "message",
    "write_steps",
]


def make_task(**overrides: Any) -> TaskRecord:
    fields: dict[str, Any] = {
        "description": "Summarise the repository",
        "prompt": "Read the code and write a summary.",
        "workspace": "/tmp/project",
    }
    fields.update(overrides)
    return TaskRecord(**fields)


def make_session(task_id: str, session_id: str, **overrides: Any) -> SessionRecord:
    fields: dict[str, Any] = {
        "session_id": session_id,
        "task_id": task_id,
        "agent_name": "main",
        "model": "test:scripted",
        "tool_names": ["Read", "Grep"],
        "system_prompt": "You are helpful.",
        "max_turns": 20,
    }
    fields.update(overrides)
    return SessionRecord(**fields)


def make_checkpoint(task_id: str, session_id: str, **overrides: Any) -> CheckpointRecord:
    fields: dict[str, Any] = {
        "task_id": task_id,
        "session_id": session_id,
        "position": "after_model",
        "state": {"message_count": 1, "turns": 1},
    }
    fields.update(overrides)
    return CheckpointRecord(**fields)


def make_trace(task_id: str, session_id: str | None, **overrides: Any) -> TraceRecord:
    fields: dict[str, Any] = {
        "task_id": task_id,
        "session_id": session_id,
        "kind": "step",
        "step_name": "model_turn",
    }
    fields.update(overrides)
    return TraceRecord(**fields)


def make_ledger(task_id: str, session_id: str, call_id: str, **overrides: Any) -> ToolLedgerEntry:
    fields: dict[str, Any] = {
        "task_id": task_id,
        "session_id": session_id,
        "tool_call_id": call_id,
        "tool_name": "Write",
        "arguments": {"path": "notes.txt"},
        "status": "started",
    }
    fields.update(overrides)
    return ToolLedgerEntry(**fields)


def message(index: int) -> dict[str, Any]:
    """A realistic message dict: user turns alternate with assistant tool calls."""
    if index % 2 == 0:
        return message_to_dict(UserMessage(f"message {index}: " + "x" * 50))
    call = ToolCall(id=f"call_{index}", name="Read", arguments={"path": f"f{index}.py"})
    return message_to_dict(AssistantMessage(content=f"reply {index}", tool_calls=(call,)))


def write_steps(
    store: Store, session: SessionRecord, steps: int, *, start: int = 0
) -> list[CheckpointRecord]:
    """Commit ``steps`` steps of one session (one message, a checkpoint and a trace each)."""
    saved = []
    for seq in range(start, start + steps):
        checkpoint = store.commit(
            StepWrite(
                task_id=session.task_id,
                session=session,
                messages=[(session.session_id, seq, message(seq))],
                checkpoint=make_checkpoint(
                    session.task_id, session.session_id, state={"message_count": seq + 1}
                ),
                traces=[make_trace(session.task_id, session.session_id, message=f"step {seq}")],
            )
        )
        assert checkpoint is not None
        saved.append(checkpoint)
    return saved


def empty_store_of_schema(path: Path, version: int) -> sqlite3.Connection:
    """A SQLite store at ``path`` as a subagents of schema ``version`` created it, with no
    records yet: an open connection in autocommit, to fill it as that version wrote."""
    raw = sqlite3.connect(path, isolation_level=None)
    for earlier in range(version):
        for statement in MIGRATIONS[earlier]:
            if isinstance(statement, str):
                raw.execute(statement)
            else:
                statement(raw)
    raw.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(version),))
    return raw
