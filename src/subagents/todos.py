"""A session's todo list: what TodoWrite sets, the store keeps and the UI, progress and trace
show.

Each session (the main agent's, each subagent's) has its own list; TodoWrite replaces it whole,
as in Claude Code. It is persisted in the session's checkpoint state under ``"todos"`` as a list
of ``{"content", "status", "activeForm"}`` dicts (Claude Code's field names). Checkpoints
written before todos existed have no such key and read back as an empty list; entries that are
not well formed are dropped when read, never raised about, since a damaged list must not stop
a resume.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, get_args

from subagents.status import TodoStatus

__all__ = [
    "TODO_STATUSES",
    "TodoItem",
    "TodoStatus",
    "todo_counts",
    "todos_from_state",
    "todos_to_state",
]

TODO_STATUSES: tuple[str, ...] = get_args(TodoStatus)


@dataclass(frozen=True, slots=True)
class TodoItem:
    """One entry: what to do, its status, and how to say it while it is being done."""

    content: str
    status: TodoStatus = "pending"
    active_form: str = ""

    @property
    def shown(self) -> str:
        """The text to show: the ``activeForm`` while in progress, else the content."""
        if self.status == "in_progress" and self.active_form:
            return self.active_form
        return self.content

    def to_dict(self) -> dict[str, str]:
        return {"content": self.content, "status": self.status, "activeForm": self.active_form}


def todos_to_state(todos: Iterable[TodoItem]) -> list[dict[str, str]]:
    """The list as stored in a checkpoint's state."""
    return [item.to_dict() for item in todos]


def todos_from_state(value: Any) -> tuple[TodoItem, ...]:
    """The list a checkpoint's ``"todos"`` holds; ``()`` for a missing or damaged one."""
    if not isinstance(value, list):
        return ()
    items: list[TodoItem] = []
    for entry in value:
        if not isinstance(entry, dict):
            continue
        content, status = entry.get("content"), entry.get("status")
        if not isinstance(content, str) or status not in TODO_STATUSES:
            continue
        active = entry.get("activeForm")
        items.append(TodoItem(content, status, active if isinstance(active, str) else ""))
    return tuple(items)


def todo_counts(todos: Sequence[TodoItem]) -> str:
    """``3 todos: 1 completed, 1 in progress, 1 pending`` (only the statuses present)."""
    counts = dict.fromkeys(TODO_STATUSES, 0)
    for item in todos:
        counts[item.status] += 1
    parts = [
        f"{count} {status.replace('_', ' ')}"
        for status in ("completed", "in_progress", "pending")
        if (count := counts[status])
    ]
    noun = "todo" if len(todos) == 1 else "todos"
    return f"{len(todos)} {noun}: {', '.join(parts)}" if parts else "no todos"
