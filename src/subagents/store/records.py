"""The persisted records of a task: the task itself, its sessions, checkpoints, tool ledger
and trace records.

Every record carries ``schema_version``. A record written by an older subagents is upgraded
when read (see :data:`RECORD_SCHEMA_VERSION`); one written by a newer subagents is refused with
:class:`~subagents.errors.StoreVersionError` by the store. Timestamps are always timezone-aware:
a naive ``datetime`` given to a record is taken to be UTC.
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from subagents._preview import preview
from subagents.status import LedgerStatus, SessionStatus, TaskStatus, TraceStatus

__all__ = [
    "RECORD_SCHEMA_VERSION",
    "TASK_ID_PATTERN",
    "CheckpointRecord",
    "LedgerStatus",
    "RecordFields",
    "SessionRecord",
    "SessionStatus",
    "TaskRecord",
    "TaskStatus",
    "Timestamp",
    "ToolLedgerEntry",
    "TraceKind",
    "TraceRecord",
    "TraceStatus",
    "check_task_id",
    "is_safe_task_id",
    "new_id",
    "utc_now",
]

RECORD_SCHEMA_VERSION = 1
"""The ``schema_version`` this subagents writes; records above it are refused on read."""


TASK_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
"""What a task id may be: it names the task's folder in exports, so it must be a plain file
name (no separator, never ``.`` or ``..``). The UUIDs subagents generates always are."""
_TASK_ID_RULE = (
    "a task id is 1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit"
)


def is_safe_task_id(value: object) -> bool:
    """Whether ``value`` is a task id that is safe to use as a folder name."""
    return isinstance(value, str) and TASK_ID_PATTERN.fullmatch(value) is not None


def check_task_id(value: str) -> str:
    """``value`` when it is a safe task id, else ``ValueError`` saying what an id may be."""
    if not is_safe_task_id(value):
        raise ValueError(f"{preview(value, 60)} is not a valid task id: {_TASK_ID_RULE}")
    return value


RecordFields = dict[str, Any]
"""A record's fields as JSON values (timestamps as ISO 8601 text), in its model's order, built to
its model's schema by the runtime's recorder (its tests read every record it writes back
through the model): stores encode it as it is, and reading validates it as the model."""


def utc_now() -> datetime:
    return datetime.now(UTC)


def new_id() -> str:
    """A fresh UUID4 string, the id format of tasks, sessions and checkpoints."""
    return str(uuid.uuid4())


def _aware(value: datetime) -> datetime:
    # Naive and aware datetimes cannot be compared; retention compares them, so normalise.
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


Timestamp = Annotated[datetime, AfterValidator(_aware)]

_RECORD_CONFIG = ConfigDict(extra="forbid", validate_assignment=True)


class TaskRecord(BaseModel):
    """One run: what was asked, by whom, and how it ended."""

    model_config = _RECORD_CONFIG

    schema_version: int = RECORD_SCHEMA_VERSION
    id: Annotated[str, AfterValidator(check_task_id)] = Field(default_factory=new_id)
    description: str
    prompt: str
    status: TaskStatus = "pending"
    assigned_agent: str | None = None
    """``None`` means the main agent."""
    model: str | None = None
    workspace: str
    result: str | None = None
    error: str | None = None
    created_at: Timestamp = Field(default_factory=utc_now)
    started_at: Timestamp | None = None
    completed_at: Timestamp | None = None
    updated_at: Timestamp = Field(default_factory=utc_now)
    retention_days: int | None = Field(default=None, ge=0)
    parent_task_id: str | None = None
    tags: list[str] = Field(default_factory=list)
    settings: dict[str, Any] = Field(default_factory=dict)
    """Run settings needed to resume (permission mode and the like)."""


class SessionRecord(BaseModel):
    """One agent session of a task: the main agent's or a subagent's."""

    model_config = _RECORD_CONFIG

    schema_version: int = RECORD_SCHEMA_VERSION
    session_id: str = Field(min_length=1)
    task_id: str
    parent_session_id: str | None = None
    parent_tool_call_id: str | None = None
    agent_name: str
    """``"main"`` or the agent definition's name."""
    task_description: str = ""
    status: SessionStatus = "initializing"
    summary: str | None = None
    model: str
    tool_names: list[str] = Field(default_factory=list)
    system_prompt: str = ""
    depth: int = Field(default=0, ge=0)
    max_turns: int
    turns: int = 0
    tool_calls: int = 0
    usage: dict[str, int] = Field(default_factory=dict)
    background: bool = False
    created_at: Timestamp = Field(default_factory=utc_now)
    updated_at: Timestamp = Field(default_factory=utc_now)


class CheckpointRecord(BaseModel):
    """The state of one session after one step; ``sequence`` is assigned by the store."""

    model_config = _RECORD_CONFIG

    schema_version: int = RECORD_SCHEMA_VERSION
    checkpoint_id: str = Field(default_factory=new_id, min_length=1)
    task_id: str
    session_id: str
    sequence: int = 0
    """Strictly increasing per task; whatever the caller sets is replaced on commit."""
    position: str
    """Where in the loop: ``after_model``, ``after_tools``, ``awaiting_human``, ``finished``."""
    state: dict[str, Any] = Field(default_factory=dict)
    awaiting_human: bool = False
    question: dict[str, Any] | None = None
    """What a person is asked (session path, tool call, arguments) when ``awaiting_human``."""
    created_at: Timestamp = Field(default_factory=utc_now)


class ToolLedgerEntry(BaseModel):
    """One tool call's effect record: started, then completed or failed."""

    model_config = _RECORD_CONFIG

    schema_version: int = RECORD_SCHEMA_VERSION
    task_id: str
    session_id: str
    tool_call_id: str
    tool_name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    status: LedgerStatus
    read_only: bool = False
    idempotent: bool = False
    result: str | None = None
    """The call's result, whole, when the entry closed in a commit of its own (the result
    was in no message yet); ``None`` when it closed with the turn's commit, whose tool
    result message holds it."""
    is_error: bool = False
    started_at: Timestamp = Field(default_factory=utc_now)
    finished_at: Timestamp | None = None


TraceKind = Literal["step", "tool_call", "session", "wait"]


class TraceRecord(BaseModel):
    """One trace entry: a step, a tool call, a session event or a wait for a person."""

    model_config = _RECORD_CONFIG

    schema_version: int = RECORD_SCHEMA_VERSION
    task_id: str
    session_id: str | None = None
    kind: TraceKind
    step_name: str
    message: str = ""
    timestamp: Timestamp = Field(default_factory=utc_now)
    status: TraceStatus = "info"
    agent: str | None = None
    duration_ms: float | None = None
    data: dict[str, Any] = Field(default_factory=dict)
    """Tool calls: server, tool, arguments, result, error; token counts; and so on."""
