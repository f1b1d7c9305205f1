"""``subagents send TASK AGENT MESSAGE``: a person's message to one agent of a task.

The message is stored first (:mod:`subagents.runtime.mail`). When another process runs the
task, that process delivers it at the agent's next step; otherwise the task continues here, as
``subagents resume`` would, and the agent reads it at its next step (a finished one is run
again on it).
"""

from __future__ import annotations

import contextlib
from typing import Annotated

import typer

from subagents.cli.common import stderr_console, store_path, user_errors
from subagents.cli.options import CwdOption, StoreOption, TaskArgument

__all__ = ["send_command"]


def send_command(
    task: TaskArgument,
    agent: Annotated[
        str,
        typer.Argument(
            help="The agent: its agent_id (or its first 8+ characters), its type (the newest "
            "agent of that type), or 'main'."
        ),
    ],
    message: Annotated[str, typer.Argument(help="What to tell it.")],
    cwd: CwdOption = None,
    store: StoreOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Send MESSAGE to AGENT of TASK. It is stored first; a running task delivers it at the
    agent's next step, a stopped or finished one continues here with it (as 'subagents
    resume' does; a finished agent runs again on the message).

    Exit codes as for 'subagents resume'; 0 when the running task's process will deliver it.
    """
    from subagents.cli.answer import quote_markup
    from subagents.errors import StoreError, SubagentsError
    from subagents.runtime.mail import post_from_person, recipient
    from subagents.secrets import workspace_redactor
    from subagents.store.open import open_store
    from subagents.store.records import utc_now

    err = stderr_console()
    with user_errors():
        if not message.strip():
            raise SubagentsError("the message is empty", hint="say what the agent should know")
        path = store_path(cwd, store)
        if not path.exists():
            raise StoreError(
                f"no store at {path}, so no task to message",
                hint="run 'subagents send' in the project of the task, or name its store "
                "with --store",
            )
        with contextlib.closing(open_store(path.location)) as database:
            record = database.get_task(task)
            to = recipient(database.sessions(record.id), agent)
            redactor = workspace_redactor(cwd)
            post_from_person(database, record.id, to.session_id, to.agent_name, message, redactor)
            lease = database.task_lease(record.id)
            running = lease is not None and lease.is_live(utc_now())
        who = f"{to.agent_name} ({to.session_id[:8]})"
        if running:
            assert lease is not None
            err.print(
                f"Sent to {quote_markup(who)}: the process running task {record.id[:8]} (pid "
                f"{lease.owner.pid} on {quote_markup(lease.owner.host)}) delivers it at the "
                "agent's next step."
            )
            return
        if record.status == "awaiting_human":
            err.print(
                f"Sent to {quote_markup(who)}. Task {record.id[:8]} waits for a person; the "
                f"agent reads it once the task goes on: subagents resume {record.id[:8]} "
                "(or answer what waits: subagents inbox)"
            )
            return
        err.print(f"Sent to {quote_markup(who)}; task {record.id[:8]} continues here.")
    from subagents.cli.resume import resume_command

    resume_command(task=record.id, cwd=cwd, store=store, as_json=as_json)
