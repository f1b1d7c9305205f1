"""Every status vocabulary, defined once, and the maps between them.

A run ends with a :data:`RunStatus`; the store keeps a :data:`TaskStatus` for the task and a
:data:`SessionStatus` for each agent's conversation; the run UI shows a :data:`BlockStatus`
per agent; trace records carry a :data:`TraceStatus`. Where one vocabulary becomes another,
the translation is a table here, total over its source (``tests/core/test_status.py`` checks every
value maps), so a status added to one vocabulary cannot silently fall into another's default.

The modules that used these names before (``runtime.result``, ``store.records``,
``cli.blocks``, ...) re-export them. This module imports nothing but ``typing``: the CLI's
startup path and every layer may use it.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, Literal

__all__ = [
    "BLOCK_STATUS_OF_RUN",
    "BLOCK_STATUS_OF_SESSION",
    "FINISHED_SESSION_STATUSES",
    "FINISHED_TASK_STATUSES",
    "SESSION_STATUS_OF_RUN",
    "TASK_STATUS_OF_RUN",
    "TRACE_STATUS_OF_OUTCOME",
    "TRACE_STATUS_OF_SESSION",
    "AgentStatus",
    "BlockStatus",
    "HookEvent",
    "LedgerStatus",
    "OutcomeStatus",
    "PermissionMode",
    "ProbeStatus",
    "RunStatus",
    "SessionStatus",
    "TaskStatus",
    "TodoStatus",
    "TraceStatus",
    "block_status",
    "session_status",
    "task_status",
]

# -- the vocabularies -------------------------------------------------------------------------

RunStatus = Literal["completed", "max_turns", "failed", "cancelled", "awaiting_human"]
"""How one session run ended (:class:`~subagents.runtime.result.RunResult`)."""

SessionStatus = Literal[
    "initializing", "active", "completed", "error", "cancelled", "awaiting_human"
]
"""Where one agent's conversation stands, live and in the store."""

TaskStatus = Literal["pending", "running", "completed", "failed", "awaiting_human", "cancelled"]
"""Where a stored task stands (``subagents tasks list``)."""

LedgerStatus = Literal["started", "completed", "failed"]
"""A side-effecting tool call in the ledger: started, then finished one way or the other."""

TraceStatus = Literal["info", "warning", "error"]
"""The severity of one trace record."""

BlockStatus = Literal["initializing", "active", "completed", "error", "cancelled", "paused"]
"""One agent's block in the run UI."""

OutcomeStatus = Literal["ok", "error", "denied", "timeout"]
"""How one tool call ended (:class:`~subagents.tools.execution.ToolOutcome`)."""

AgentStatus = Literal["active", "invalid", "disabled"]
"""Whether an agent definition can be used."""

TodoStatus = Literal["pending", "in_progress", "completed"]
"""One TodoWrite item."""

ProbeStatus = Literal["yes", "no", "skipped"]
"""One capability a model check probed (``subagents models check``)."""

PermissionMode = Literal["default", "acceptEdits", "plan", "bypassPermissions", "dontAsk"]
"""Claude Code's permission modes: config, agent frontmatter and the runtime share them."""

HookEvent = Literal[
    "SubagentStart", "SubagentStop", "PreToolUse", "PostToolUse", "Stop", "Notification"
]
"""The hook events subagents fires (config ``[hooks]`` and :class:`~subagents.Hooks`)."""

# -- the maps between them --------------------------------------------------------------------

TASK_STATUS_OF_RUN: Final[Mapping[RunStatus, TaskStatus]] = MappingProxyType(
    {
        "completed": "completed",
        "max_turns": "failed",  # resumable with a fresh turn budget, like any failure
        "failed": "failed",
        "cancelled": "cancelled",
        "awaiting_human": "awaiting_human",
    }
)
"""The stored task's status once its main session's run ends."""

SESSION_STATUS_OF_RUN: Final[Mapping[RunStatus, SessionStatus]] = MappingProxyType(
    {
        "completed": "completed",
        "max_turns": "error",
        "failed": "error",
        "cancelled": "cancelled",
        "awaiting_human": "awaiting_human",
    }
)
"""A session's status once one of its runs ends."""

BLOCK_STATUS_OF_RUN: Final[Mapping[RunStatus, BlockStatus]] = MappingProxyType(
    {
        "completed": "completed",
        "max_turns": "error",
        "failed": "error",
        "cancelled": "cancelled",
        "awaiting_human": "paused",
    }
)
"""An agent's block in the run UI once its run ends."""

BLOCK_STATUS_OF_SESSION: Final[Mapping[SessionStatus, BlockStatus]] = MappingProxyType(
    {
        "initializing": "initializing",
        "active": "active",
        "completed": "completed",
        "error": "error",
        "cancelled": "cancelled",
        "awaiting_human": "paused",
    }
)
"""An agent's block for a stored session (a background subagent re-bound after a restart
reports its session's status, not a run's)."""

TRACE_STATUS_OF_OUTCOME: Final[Mapping[OutcomeStatus, TraceStatus]] = MappingProxyType(
    {"ok": "info", "error": "error", "denied": "error", "timeout": "error"}
)
"""A tool call's trace record: anything but ``ok`` is an error the trace shows in red."""

TRACE_STATUS_OF_SESSION: Final[Mapping[SessionStatus, TraceStatus]] = MappingProxyType(
    {
        "initializing": "info",
        "active": "info",
        "completed": "info",
        "error": "error",
        "cancelled": "info",  # the user stopped it: nothing went wrong
        "awaiting_human": "info",
    }
)
"""A session's own trace records (started, finished)."""

FINISHED_TASK_STATUSES: Final[frozenset[TaskStatus]] = frozenset(
    {"completed", "failed", "cancelled"}
)
"""Task statuses that end a run: the task gets a ``completed_at``."""

FINISHED_SESSION_STATUSES: Final[frozenset[SessionStatus]] = frozenset(
    {"completed", "error", "cancelled"}
)
"""Session statuses after which the session runs no more unless resumed."""

# Run and session statuses share names (completed, cancelled, awaiting_human) and agree on
# them (a test checks), so one table answers for both.
_BLOCK_STATUS_OF_EITHER: Final[Mapping[str, BlockStatus]] = MappingProxyType(
    dict([*BLOCK_STATUS_OF_SESSION.items(), *BLOCK_STATUS_OF_RUN.items()])
)


def task_status(run: RunStatus) -> TaskStatus:
    """The stored task's status for its main run's :data:`RunStatus`."""
    return TASK_STATUS_OF_RUN[run]


def session_status(run: RunStatus) -> SessionStatus:
    """A session's status once its run ended with ``run``."""
    return SESSION_STATUS_OF_RUN[run]


def block_status(status: str) -> BlockStatus:
    """The UI block status for a run's status or a stored session's.

    A :class:`~subagents.runtime.result.SpawnResult` carries either (its ``status`` is a
    ``str``); one neither vocabulary knows, from a newer runtime's store, shows as ``error``.
    """
    return _BLOCK_STATUS_OF_EITHER.get(status, "error")
