"""``subagents inbox``: what the agents of this project's tasks wait for a person to answer
(approvals, AskHuman questions, crash recovery), across every task, and the answers.

Agents in the background wait alone while the rest of their run goes on
(:mod:`subagents.runtime.inbox`). An answer is stored first: the process running the task
hands it over within a second; a task that nobody runs continues here, as ``subagents
resume`` would.
"""

from __future__ import annotations

import contextlib
import json
from typing import TYPE_CHECKING, Annotated

import typer

from subagents.cli.common import stderr_console, store_path, user_errors
from subagents.cli.options import CwdOption, StoreOption

if TYPE_CHECKING:
    from subagents.runtime.pause import HumanQuestion
    from subagents.store.base import Store

__all__ = ["inbox_command"]


def inbox_command(
    task: Annotated[
        str | None, typer.Argument(help="To answer: the task (its id or the start of it).")
    ] = None,
    key: Annotated[
        str | None,
        typer.Argument(help="To answer: the question's key (the tool call id the list shows)."),
    ] = None,
    approve: Annotated[bool, typer.Option("--approve", help="Approve the call.")] = False,
    reject: Annotated[
        str | None, typer.Option("--reject", help="Reject it, with the reason the agent sees.")
    ] = None,
    modify: Annotated[
        str | None,
        typer.Option("--modify", help="Run the call with other arguments: '{\"args\": {...}}'."),
    ] = None,
    set_values: Annotated[
        list[str] | None,
        typer.Option("--set", help="KEY=VALUE for the answer (AskHuman: answer=TEXT)."),
    ] = None,
    cwd: CwdOption = None,
    store: StoreOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List what agents wait for a person to answer, across the tasks of this project; with
    TASK KEY and a decision, answer one. Answer in any order: the other agents go on.

    A running task gets the answer within a second; one nobody runs continues here with it
    (exit codes as for 'subagents resume').
    """
    from subagents.cli.resume import parse_decision
    from subagents.errors import SubagentsError

    with user_errors():
        decision = parse_decision(approve, reject, modify, set_values or [])
        if (task is None) != (key is None) or (task is not None and decision is None):
            raise SubagentsError(
                "to answer, name the task and the question's key, with a decision",
                hint="subagents inbox TASK KEY --approve (or --reject REASON, --modify JSON, "
                "--set answer=TEXT); 'subagents inbox' lists the keys",
            )
        path = store_path(cwd, store)
        if not path.exists():
            if task is None:
                typer.echo("Nothing waits for you: there is no store here yet.")
                return
            raise SubagentsError(f"no store at {path}", hint="name its store with --store")
        from subagents.store.open import open_store

        with contextlib.closing(open_store(path.location)) as database:
            if task is None:
                _list(database, as_json=as_json)
                return
            assert key is not None and decision is not None
            answered, running = _answer(database, task, key, decision)
    err = stderr_console()
    where = f"task {answered.task_id[:8]}"
    if running:
        err.print(f"Answered; the process running {where} hands it to {answered.agent_type}.")
        return
    err.print(f"Answered; {where} continues here.")
    from subagents.cli.resume import resume_command

    resume_command(task=answered.task_id, cwd=cwd, store=store, as_json=as_json)


def _list(database: Store, *, as_json: bool) -> None:
    from subagents.cli import plain
    from subagents.runtime.inbox import waiting_questions

    found: list[HumanQuestion] = []
    for record in database.list_tasks(limit=None):
        if record.status in ("running", "awaiting_human"):
            found.extend(waiting_questions(database, record.id))
    if as_json:
        typer.echo(json.dumps([question.to_dict() for question in found], indent=2))
        return
    if not found:
        typer.echo("Nothing waits for you.")
        return
    typer.echo(f"{len(found)} question(s) wait for you:")
    for question in found:
        text = plain.clean(" ".join(question.text.split()))[:160]
        typer.echo(
            f"  {question.task_id[:8]}  {question.tool_call_id}  {question.agent_type} "
            f"({question.session_id[:8]}), {question.kind}: {text}"
        )
    typer.echo(
        "Answer one: subagents inbox TASK KEY --approve (or --reject REASON, --set answer=TEXT)"
    )


def _answer(database: Store, task: str, key: str, decision: object) -> tuple[HumanQuestion, bool]:
    from subagents.errors import SubagentsError
    from subagents.runtime.inbox import post_decision, waiting_questions
    from subagents.runtime.pause import DeliveredDecision, HumanDecision
    from subagents.store.records import utc_now

    assert isinstance(decision, HumanDecision)
    record = database.get_task(task)
    questions = waiting_questions(database, record.id)
    chosen = [q for q in questions if q.tool_call_id == key.strip()] or [
        q for q in questions if q.tool_call_id.startswith(key.strip())
    ]
    if len(chosen) != 1:
        keys = ", ".join(q.tool_call_id for q in questions) or "none"
        raise SubagentsError(
            f"no question of task {record.id[:8]} waits under {key!r} (waiting: {keys})",
            hint="'subagents inbox' lists what waits",
        )
    question = chosen[0]
    post_decision(database, DeliveredDecision(question.wait_point, decision, question.tool_name))
    lease = database.task_lease(record.id)
    return question, lease is not None and lease.is_live(utc_now())
