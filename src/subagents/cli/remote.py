"""What ``run --remote`` and ``resume --remote`` print: the queued task, and with ``--wait``
how it ended (see :mod:`subagents.workers`)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import typer

from subagents.cli.render import Ending, print_ending

if TYPE_CHECKING:
    from rich.console import Console

    from subagents.redaction import Redactor
    from subagents.store.base import Store
    from subagents.store.records import TaskRecord

__all__ = ["report_queued"]


def report_queued(
    err: Console,
    store: Store,
    task: TaskRecord,
    *,
    queue: str,
    wait: bool,
    as_json: bool,
    redactor: Redactor,
) -> None:
    """Say that ``task`` is queued; with ``wait``, wait for it to end (or pause) and print
    its result, exiting with the code ``run`` would have."""
    from subagents.cli.answer import quote_markup
    from subagents.workers.submit import wait_for_task

    short = task.id[:8]
    if not wait:
        if as_json:
            typer.echo(json.dumps({"task_id": task.id, "status": "queued", "queue": queue}))
        else:
            err.print(
                f"Queued task {task.id} on {quote_markup(queue)!r}. Follow it with: subagents "
                f"tasks show {short}  (or 'subagents trace {short}')"
            )
        return
    if not as_json:
        err.print(f"[dim]task {task.id} queued on {quote_markup(queue)!r}; waiting for a worker[/]")

    def on_change(current: TaskRecord) -> None:
        if not as_json and current.status == "running":
            err.print(f"[dim]task {short} is running[/]")

    ended = wait_for_task(store, task.id, on_change=on_change, since=task.updated_at)
    payload: dict[str, Any] = {
        "task_id": ended.id,
        "status": ended.status,
        "output": ended.result or "",
        "error": ended.error,
    }
    print_ending(
        Ending.of_task(ended),
        err,
        redactor,
        as_json=as_json,
        payload=payload,
        how_to_resume=f"see the question with 'subagents tasks show {short}', then: "
        f"subagents resume {short} --remote --approve | --reject REASON",
    )
