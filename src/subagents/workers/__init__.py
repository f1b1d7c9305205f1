"""Runs carried out by worker processes that share a PostgreSQL store, on DBOS Transact.

``subagents worker`` starts one (:class:`Worker`); ``subagents run --remote`` and
:func:`queue_run` queue a run for the workers; ``resume --remote`` (:func:`queue_decision`)
queues a paused run's decision; ``tasks cancel`` (:func:`cancel_remote`) cancels one. The
``dbos`` package (the ``[workers]`` extra) is imported only by the worker itself and when a
run is queued.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from subagents._lazy import lazy_exports

if TYPE_CHECKING:
    from subagents.workers.engine import WorkerError
    from subagents.workers.submit import cancel_remote, queue_decision, queue_run, wait_for_task
    from subagents.workers.worker import Worker

__all__ = [
    "Worker",
    "WorkerError",
    "cancel_remote",
    "queue_decision",
    "queue_run",
    "wait_for_task",
]

_EXPORTS: dict[str, str] = {
    "Worker": "subagents.workers.worker",
    "WorkerError": "subagents.workers.engine",
    "cancel_remote": "subagents.workers.submit",
    "queue_decision": "subagents.workers.submit",
    "queue_run": "subagents.workers.submit",
    "wait_for_task": "subagents.workers.submit",
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
