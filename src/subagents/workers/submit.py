"""Queue runs for the workers, cancel them, and wait for them: what ``run --remote``,
``resume --remote`` and ``tasks cancel`` do, from any machine that reaches the store.

A queued run is a task record (status ``pending``, with the workspace, permission mode and
rules of the process that queued it) plus a DBOS workflow of the same id on the queue. The
record is written first: a task whose workflow could not be queued is marked failed with the
reason, never left pending with nobody to run it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from subagents.errors import SubagentsError
from subagents.store.records import TaskRecord, new_id, utc_now
from subagents.workers.engine import (
    APP_VERSION,
    DEFAULT_QUEUE,
    WORKFLOW_NAME,
    WorkerError,
    dbos_client,
    put_decision,
    require_postgres,
)

if TYPE_CHECKING:
    from dbos import EnqueueOptions

    from subagents.runtime.pause import HumanDecision
    from subagents.runtime.runtime import Runtime
    from subagents.store.base import Store
    from subagents.workflows.graph import Workflow

__all__ = [
    "cancel_remote",
    "postgres_url",
    "queue_decision",
    "queue_run",
    "queue_workflow",
    "wait_for_task",
]

ENDED = frozenset({"completed", "failed", "cancelled", "max_turns", "awaiting_human"})
"""The statuses at which a run stops for now: a paused run waits for a person's decision."""


def queue_run(
    runtime: Runtime,
    prompt: str,
    *,
    agent: str | None = None,
    description: str | None = None,
    tags: tuple[str, ...] = (),
    retention_days: int | None = None,
    queue: str = DEFAULT_QUEUE,
) -> TaskRecord:
    """Queue ``prompt`` as a run of ``runtime``'s project for the workers of ``queue``; its
    task record (``runtime``'s store must be a PostgreSQL store)."""
    store = _store_of(runtime)
    store_url = postgres_url(store)
    task = _queued_task(runtime, prompt, agent, description, tags, retention_days)
    task.settings["remote"] = {"queue": queue}
    store.create_task(task)
    _enqueue(store, task, store_url, queue, task.id)
    return task


def _queued_task(
    runtime: Runtime,
    prompt: str,
    agent: str | None,
    description: str | None,
    tags: tuple[str, ...],
    retention_days: int | None,
) -> TaskRecord:
    """The record of a run that a worker will carry out: status ``pending``, ``runtime``'s
    workspace, mode and rules, its text redacted. ``agent`` must name an agent here; the
    model is the one ``runtime`` was given, or the worker's default when it was given none."""
    from subagents.runtime.budget import budget_setting
    from subagents.runtime.run import task_description

    if agent is not None:
        runtime.inventory.get(agent)  # an unknown agent is refused now, not on the worker
    main = runtime.model_chooser.main_given
    redactor = runtime.redactor()
    return TaskRecord(
        description=redactor.text(task_description(description, prompt)),
        prompt=redactor.text(prompt),
        assigned_agent=agent,
        model=main if isinstance(main, str) else None,
        workspace=str(runtime.workspace),
        tags=list(tags),
        retention_days=retention_days,
        settings=runtime.permissions.task_settings() | budget_setting(runtime.budget_limits),
    )


def queue_workflow(
    runtime: Runtime,
    workflow: Workflow,
    input: str | Mapping[str, Any] = "",
    *,
    description: str | None = None,
    queue: str = DEFAULT_QUEUE,
) -> TaskRecord:
    """Queue a run of ``workflow`` on ``input`` for the workers of ``queue`` (see
    :func:`queue_run`); its task record. The graph goes with the task, so a workflow built in
    code with Python conditions cannot be queued."""
    from subagents.redaction import Redactor
    from subagents.workflows.runner import workflow_task

    store = _store_of(runtime)
    store_url = postgres_url(store)
    runtime.check_workflow(workflow)
    task = workflow_task(runtime, workflow, input, description=description)
    if task.settings["workflow"]["definition"] is None:
        raise WorkerError(
            f"Workflow {workflow.name!r} has Python conditions, which cannot go to a worker.",
            hint="write its conditions as expressions (a .subagents/workflows file), or run it "
            "here with Runtime.run_workflow",
        )
    redactor = Redactor(runtime.credentials())
    task.prompt, task.description = redactor.text(task.prompt), redactor.text(task.description)
    task.settings["remote"] = {"queue": queue}
    store.create_task(task)
    _enqueue(store, task, store_url, queue, task.id)
    return task


def queue_decision(
    store: Store,
    task_id: str,
    decision: HumanDecision | None,
    *,
    queue: str = DEFAULT_QUEUE,
) -> TaskRecord:
    """Queue the resumption of the stored task ``task_id`` (with a person's ``decision`` when
    it waits for one) for the workers; its task record."""
    store_url = postgres_url(store)
    task = store.get_task(task_id)
    if task.status == "completed":
        raise WorkerError(
            f"Task {task.id} has already completed; there is nothing to resume.",
            hint=f"see it with 'subagents tasks show {task.id[:8]}'",
        )
    if task.status == "awaiting_human" and decision is None:
        raise WorkerError(
            f"Task {task.id} is waiting for a person.",
            hint=f"queue it with a decision: 'subagents resume {task.id[:8]} --remote "
            "--approve' (or --reject REASON, --modify JSON)",
        )
    if task.status != "awaiting_human" and decision is not None:
        raise WorkerError(
            f"Task {task.id} is not waiting for a decision (status {task.status}).",
            hint=f"run 'subagents resume {task.id[:8]} --remote' without a decision",
        )
    workflow_id = f"{task.id}:resume:{new_id()[:8]}"
    if decision is not None:
        dbos_client(store_url)  # its schema first, where the decision waits
        put_decision(store_url, workflow_id, decision)
    _enqueue(store, task, store_url, queue, workflow_id, resumes=decision is not None)
    return task


def cancel_remote(store: Store, task_id: str) -> list[str]:
    """Cancel the queued or running workflows of the task ``task_id``; their ids (none when
    it has none still going). A queued one never starts; a running one stops at the step it
    is in, within a beat of its worker."""
    task = store.get_task(task_id)
    client = dbos_client(postgres_url(store))
    going = client.list_workflows(
        workflow_id_prefix=task.id,
        status=["PENDING", "ENQUEUED"],
        load_input=False,
        load_output=False,
    )
    ids = [workflow.workflow_id for workflow in going]
    for workflow_id in ids:
        client.cancel_workflow(workflow_id)
    if ids and task.status == "pending":  # never started: nobody else will say so
        _mark_failed(store, task, "cancelled before a worker took it up", status="cancelled")
    return ids


def wait_for_task(
    store: Store,
    task_id: str,
    *,
    poll_seconds: float = 0.5,
    timeout: float | None = None,
    on_change: Callable[[TaskRecord], None] | None = None,
    since: datetime | None = None,
) -> TaskRecord:
    """The task ``task_id`` once it has ended or waits for a person (see :data:`ENDED`);
    with ``since``, once it has done so after that moment (a paused task being resumed waits
    for a person still, until a worker takes it up)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    status = None
    while True:
        task = store.get_task(task_id)
        if task.status != status:
            status = task.status
            if on_change is not None:
                on_change(task)
        if task.status in ENDED and (since is None or task.updated_at > since):
            return task
        if deadline is not None and time.monotonic() > deadline:
            raise WorkerError(
                f"Task {task.id} is still {task.status} after {timeout:g} s.",
                hint=f"follow it with 'subagents tasks show {task.id[:8]}'; is a "
                "'subagents worker' running on its queue?",
            )
        time.sleep(poll_seconds)


def _enqueue(
    store: Store,
    task: TaskRecord,
    store_url: str,
    queue: str,
    workflow_id: str,
    *,
    resumes: bool = False,
) -> None:
    try:
        client = dbos_client(store_url)
    except SubagentsError as error:
        _mark_failed(store, task, error.message)
        raise
    try:
        options: EnqueueOptions = {
            "queue_name": queue,
            "workflow_name": WORKFLOW_NAME,
            "workflow_id": workflow_id,
            "app_version": APP_VERSION,
        }
        client.enqueue(options, task.id, resumes)
    except Exception as error:
        _mark_failed(store, task, f"could not be queued: {error}")
        raise WorkerError(
            f"Could not queue task {task.id} on {queue!r}: {error}",
            hint="check the store's database, then run it again",
        ) from error


def postgres_url(store: Store) -> str:
    """The connection URL of ``store``, which must be a PostgreSQL store."""
    from subagents.store.postgres import PostgresStore

    if not isinstance(store, PostgresStore):
        require_postgres(store.location)  # says why not
    assert isinstance(store, PostgresStore)
    return store.connection_url


def _mark_failed(store: Store, task: TaskRecord, reason: str, *, status: str = "failed") -> None:
    if task.status != "pending":  # it ran before: its own record says how it stands
        return
    task.status = status  # type: ignore[assignment]
    task.error = reason
    task.completed_at = task.updated_at = utc_now()
    store.update_task(task)


def _store_of(runtime: Runtime) -> Store:
    store = runtime.store
    if store is None:
        raise WorkerError(
            "A run queued for the workers needs the runtime's store.",
            hint="build the Runtime with store=PostgresStore(URL)",
        )
    return store
