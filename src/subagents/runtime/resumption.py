"""Resuming a stored task: whether it may be resumed or continued, which person's decision goes
to which session, and an imported task made this workspace's own on its first resume.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from subagents.errors import StoreError
from subagents.runtime.mail import undelivered
from subagents.runtime.pause import HumanDecision, HumanQuestion, WaitPoint
from subagents.store.lease import lease_refusal

if TYPE_CHECKING:
    from pathlib import Path

    from subagents.runtime.permissions import RuleArguments, RunPermissions
    from subagents.runtime.services import Services
    from subagents.store.base import Store, TaskOwner
    from subagents.store.records import TaskRecord

__all__ = [
    "adopt_if_imported",
    "claim_to_continue",
    "decisions_for",
    "latest_conversation",
    "not_adopted",
    "pending_question",
]


def pending_question(store: Store, task: TaskRecord) -> HumanQuestion | None:
    """What ``task`` waits for a person to answer, if it does."""
    if task.status != "awaiting_human":
        return None
    checkpoint = store.latest_checkpoint(task.id)
    if checkpoint is None or checkpoint.question is None:
        return None
    return HumanQuestion.from_dict(checkpoint.question)


def not_adopted(task: TaskRecord) -> bool:
    """Whether ``task`` was imported and has not been resumed here yet."""
    imported = task.settings.get("imported")
    return isinstance(imported, dict) and not imported.get("adopted_at")


def decisions_for(
    services: Services, task: TaskRecord, decision: HumanDecision | None
) -> dict[WaitPoint, HumanDecision]:
    """The person's ``decision`` addressed to the session that asked; StoreError, saying what
    to do, when the task does not wait for one and got one, waits and got none, or is done.
    A task its budget stopped needs a larger budget (given to ``services``) instead of a
    decision."""
    store = services.store
    assert store is not None  # a resume has a store
    if not_adopted(task):
        # Someone else's question about someone else's call: not the person's to answer
        # blind. The first resume asks again, in this runtime's words and settings.
        if decision is not None:
            raise StoreError(
                f"Task {task.id} was imported and has not been resumed here yet, so "
                "there is no question of yours to answer.",
                hint=f"run 'subagents resume {task.id[:8]}' without a decision first: "
                "the calls it left pending ask again",
            )
        question = None
    else:
        question = pending_question(store, task)
    decisions: dict[WaitPoint, HumanDecision] = {}
    if question is not None and question.kind == "budget":
        _check_larger_budget(services, task, decision)
    elif question is not None:
        if decision is None and not _answered(store, question):
            raise StoreError(
                f"Task {task.id} is waiting for a person: {question.text}",
                hint=f"resume it with 'subagents resume {task.id[:8]} --approve', "
                "'--reject REASON' or '--modify JSON'",
            )
        if decision is not None:  # else the stored answer is handed over by the run
            decisions = {question.wait_point: decision}
    elif decision is not None:
        raise StoreError(
            f"Task {task.id} is not waiting for a decision (status {task.status}).",
            hint=f"run 'subagents resume {task.id[:8]}' without --approve/--reject/--modify",
        )
    if task.status == "completed" and not undelivered(store, task.id):
        raise StoreError(
            f"Task {task.id} has already completed; there is nothing to resume.",
            hint=f"see it with 'subagents tasks show {task.id[:8]}', or start a new run",
        )
    return decisions


def _answered(store: Store, question: HumanQuestion) -> bool:
    """Whether a person stored an answer to a question of ``question``'s task that waits
    (``subagents inbox``): the run goes on with it, and asks the rest again."""
    from subagents.runtime.inbox import waiting_questions

    return bool(waiting_questions(store, question.task_id, answered=True))


def _check_larger_budget(
    services: Services, task: TaskRecord, decision: HumanDecision | None
) -> None:
    """A task its budget stopped goes on with a budget that has room left."""
    from subagents.runtime.budget import budget_hint, restored_budget

    assert services.store is not None
    # on a copy: the task's settings change only when it really goes on
    going_on = restored_budget(
        task.model_copy(deep=True), services.store.sessions(task.id), services
    )
    if decision is not None:
        raise StoreError(
            f"Task {task.id} waits for a larger budget, not for a decision.",
            hint=f"run '{budget_hint(task.id[:8], going_on)}'",
        )
    if going_on.reached():
        raise StoreError(
            f"Task {task.id} stopped at its budget, and the budget it would go on with leaves "
            f"no room: {going_on.report()}.",
            hint=f"run '{budget_hint(task.id[:8], going_on)}'",
        )


def adopt_if_imported(
    task: TaskRecord, rules: RuleArguments, *, workspace: Path, permissions: RunPermissions
) -> frozenset[str]:
    """The tool calls that must ask a person again because they were pending when the
    task was imported (see :func:`subagents.store.export.import_task`).

    An imported task is someone else's: the first resume runs it in this runtime's
    workspace and permission mode, never the ones the archive names, and records them as
    the task's own from then on.
    """
    imported = task.settings.get("imported")
    if not isinstance(imported, dict):
        return frozenset()
    pending = imported.get("pending_calls")
    calls = frozenset(str(c) for c in pending) if isinstance(pending, list) else frozenset()
    if not_adopted(task):
        from subagents.store.records import utc_now

        task.workspace = str(workspace)
        task.settings = {
            **permissions.task_settings(rules),
            "imported": {**imported, "adopted_at": utc_now().isoformat()},
        }
    return calls


def claim_to_continue(store: Store, task: TaskRecord, owner: TaskOwner, *, force: bool) -> None:
    """Claim ``task`` for a follow-up prompt in its conversation, or say why it cannot have
    one: a workflow run, a task waiting for a person, one that stopped before it finished, or
    one another live process holds."""
    if "workflow" in task.settings:
        raise StoreError(
            f"Task {task.id} is a workflow run; it has no conversation to continue.",
            hint="run the workflow again with 'subagents workflow run', or continue one of "
            "its agents' tasks",
        )
    if task.status == "awaiting_human":
        raise StoreError(
            f"Task {task.id} is waiting for a person; answer that first.",
            hint=f"run 'subagents resume {task.id[:8]} --approve' (or --reject REASON), "
            "then continue it",
        )
    if task.status in ("pending", "running") and not force:
        holder = store.claim_task(task.id, owner)
        if holder is not None:
            raise lease_refusal(holder)
        store.release_task(task.id, owner)
        raise StoreError(
            f"Task {task.id} stopped before it finished (status {task.status}).",
            hint=f"finish it with 'subagents resume {task.id[:8]}' first",
        )
    holder = store.claim_task(task.id, owner, force=force)
    if holder is not None:
        raise lease_refusal(holder)


def latest_conversation(store: Store, workspace: Path) -> str | None:
    """The newest task of ``workspace`` that can be continued (not a workflow, not waiting for
    a person, not running): what ``run --continue`` goes on with."""
    for task in store.list_tasks(limit=None):
        if task.workspace != str(workspace) or "workflow" in task.settings:
            continue
        if task.status in ("completed", "failed", "cancelled"):
            return task.id
    return None
