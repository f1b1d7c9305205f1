"""TodoWrite: replace the session's todo list (Claude Code's arguments and statuses)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from subagents.errors import ToolError
from subagents.todos import TodoItem, TodoStatus, todo_counts
from subagents.tools.base import ToolContext
from subagents.tools.decorator import tool

__all__ = ["MAX_TODOS", "MAX_TODO_CHARS", "MAX_TODO_LIST_CHARS", "TodoInput", "todo_write_tool"]

MAX_TODOS = 100
MAX_TODO_CHARS = 500
MAX_TODO_LIST_CHARS = 20_000
"""Bounds on one list (it is stored with every checkpoint of its session); a list beyond them
is refused with a tool error, never cut."""

_DESCRIPTION = f"""\
Keep a todo list for the current task, to plan multi-step work and show progress. Each call \
replaces the whole list: send every item each time, with its `status` (pending, in_progress \
or completed), its `content` (imperative: "Run the tests") and its `activeForm` (present \
continuous: "Running the tests", shown while it is in progress). Keep exactly one item \
in_progress while you work, and mark each completed as soon as it is done. Use it for tasks \
of three or more steps; skip it for a single simple step. At most {MAX_TODOS} items."""


class TodoInput(BaseModel):
    """One item of the list, as Claude Code sends it (``id`` and ``priority``, from its older
    versions, are accepted and not kept)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    content: Annotated[
        str, Field(min_length=1, max_length=MAX_TODO_CHARS, description="What to do.")
    ]
    status: Annotated[TodoStatus, Field(description="pending, in_progress or completed.")]
    active_form: Annotated[
        str,
        Field(
            alias="activeForm",
            max_length=MAX_TODO_CHARS,
            description='The item while it is being done, e.g. "Running the tests".',
        ),
    ] = ""
    id: Annotated[str | None, Field(description="Ignored (older clients send it).")] = None
    priority: Annotated[str | None, Field(description="Ignored (older clients send it).")] = None


def write_todos(
    todos: Annotated[
        list[TodoInput],
        Field(max_length=MAX_TODOS, description="The complete, updated todo list."),
    ],
    ctx: ToolContext,
) -> str:
    session = ctx.session
    if session is None:
        raise ToolError(
            "TodoWrite only works inside an agent session, which keeps the list; it was called "
            "outside one, so no list was kept."
        )
    items = tuple(
        TodoItem(item.content.strip() or item.content, item.status, item.active_form.strip())
        for item in todos
    )
    size = sum(len(item.content) + len(item.active_form) for item in items)
    if size > MAX_TODO_LIST_CHARS:
        raise ToolError(
            f"The todo list holds {size:,} characters, more than the limit of "
            f"{MAX_TODO_LIST_CHARS:,}; the previous list is kept. Write shorter items."
        )
    session.set_todos(items)
    if not items:
        return "The todo list is now empty."
    marks = {"completed": "[x]", "in_progress": "[>]", "pending": "[ ]"}
    lines = [f"Todo list updated ({todo_counts(items)}):"]
    lines += [f"{marks[item.status]} {item.content}" for item in items]
    working = sum(1 for item in items if item.status == "in_progress")
    if working > 1:
        lines.append(f"({working} items are in_progress; keep one at a time if you can.)")
    return "\n".join(lines)


# Runs on the event loop: it only swaps a list, and the events it emits must reach the UI's
# handlers on the loop's thread.
todo_write_tool = tool(
    name="TodoWrite",
    description=_DESCRIPTION,
    read_only=True,
    idempotent=True,
    run_in_thread=False,
)(write_todos)
