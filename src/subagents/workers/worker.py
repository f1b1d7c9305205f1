"""A worker: a process that carries out the runs queued on a shared PostgreSQL store.

Each queued run is a DBOS workflow whose id is the task's id (a decision that resumes a paused
task is a workflow of its own, ``<task id>:resume:<n>``). The workflow has one step, which
rebuilds the task's sessions from the store and continues them where they stopped, through
:meth:`Runtime.resume`: the same path a person's ``subagents resume`` takes.

What is durable where:

- the run's own steps (each model turn, each tool result, each checkpoint) are written to the
  store as they happen, exactly as in-process runs write them; a worker that dies loses at most
  the step in flight;
- DBOS holds the queue, who is running what (``executor_id``), and whether a run has finished;
- every worker beats in ``<dbos schema>.subagents_workers``. A worker that has not beaten for
  ``takeover_after`` seconds is presumed dead: another worker puts that worker's runs back on
  the queue, and whichever worker takes one up continues it from its last step. A
  side-effecting tool call that had started but not been recorded as finished is not run
  again blind: the tool-effect ledger answers it by the crash-recovery policy.

Concurrency is the queue's: at most ``concurrency`` runs at once per worker. Cancelling a run
(``subagents tasks cancel``) marks its workflow cancelled; the worker running it notices within
about a second and stops the run at the step it is in, which is recorded as ``cancelled``.

A worker that is stopped (SIGTERM, Ctrl-C) takes no more runs, lets those in flight finish for
a grace period while it goes on beating, and then leaves the rest where their last step put
them: its goodbye makes it silent at once, so another worker takes them over at its next beat.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dbos import DBOS, StepOptions

from subagents.errors import StoreUnavailableError, SubagentsError, TaskNotFoundError
from subagents.store.postgres.store import shown_url
from subagents.store.records import utc_now
from subagents.workers.engine import (
    DEFAULT_QUEUE,
    WORKFLOW_NAME,
    WorkerError,
    dbos_config,
    dbos_schema,
    drop_decision,
    require_postgres,
    take_decision,
)

if TYPE_CHECKING:
    from subagents.runtime.runtime import Runtime
    from subagents.store.postgres import PostgresStore
    from subagents.store.records import TaskRecord

__all__ = ["Worker"]

log = logging.getLogger("subagents.workers")

_worker: Worker | None = None
"""The worker of this process (DBOS runs one application per process)."""

_QUEUE_POLL_SECONDS = 0.05
"""How often a worker looks for queued runs (DBOS polls its queue table)."""

_DEFAULT_MODES = ("default", "acceptEdits", "bypassPermissions", "plan", "dontAsk")


def _store_away(error: BaseException) -> bool:
    return isinstance(error, StoreUnavailableError)


_RUN_STEP: StepOptions = {
    "name": "run",
    # the store's server away: the run is taken up again, from its last step, for about
    # four minutes (1 + 2 + 4 + ... s); any other error is the task's, and recorded on it
    "retries_allowed": True,
    "should_retry": _store_away,
    "interval_seconds": 1.0,
    "backoff_rate": 2.0,
    "max_attempts": 8,
}


@DBOS.workflow(name=WORKFLOW_NAME)
async def task_workflow(task_id: str, resumes: bool = False) -> str:
    """Carry out the queued task ``task_id`` (``resumes``: with the person's decision queued
    beside this workflow, see :func:`~subagents.workers.engine.put_decision`); the status it
    ended with."""
    return await DBOS.run_step_async(_RUN_STEP, _run_step, task_id, resumes)


async def _run_step(task_id: str, resumes: bool) -> str:
    worker = _worker
    if worker is None:  # a workflow started outside `Worker.start`: nothing to run it with
        raise WorkerError("This process has no worker to run a queued task.")
    return await worker.carry_out(task_id, resumes=resumes)


@dataclass
class _Running:
    loop: asyncio.AbstractEventLoop
    run: asyncio.Future[Any]
    runtime: Runtime
    cancel_requested: bool = False


@dataclass
class Worker:
    """One worker process's DBOS application, beat and takeover (see the module docstring).

    ``store_url`` names the shared PostgreSQL store; ``root`` the directory a run's workspace
    must lie in (a task names its own workspace, and whoever can write the store could name
    any); ``queue`` the queue this worker takes runs from; ``concurrency`` how many runs it
    carries out at once; ``takeover_after`` how long (seconds) another worker waits for a
    silent one before taking over its runs."""

    store_url: str
    root: Path = field(default_factory=Path.cwd)
    queue: str = DEFAULT_QUEUE
    concurrency: int = 4
    takeover_after: float = 30.0
    executor_id: str = field(
        default_factory=lambda: f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    )
    _store: PostgresStore | None = field(default=None, init=False, repr=False)
    _running: dict[str, _Running] = field(default_factory=dict, init=False, repr=False)
    _stop: threading.Event = field(default_factory=threading.Event, init=False, repr=False)
    _stopping: threading.Event = field(default_factory=threading.Event, init=False, repr=False)
    _beat_thread: threading.Thread | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        require_postgres(self.store_url)
        self.root = self.root.resolve()
        if self.concurrency < 1:
            raise WorkerError(
                f"A worker needs a concurrency of at least 1, not {self.concurrency}.",
                hint="pass --concurrency N with N >= 1",
            )
        if self.takeover_after <= 0:
            raise WorkerError(
                f"takeover_after must be positive, not {self.takeover_after}.",
                hint="pass --takeover-after SECONDS (30 by default)",
            )

    @property
    def beat_interval(self) -> float:
        return max(0.1, min(5.0, self.takeover_after / 5))

    @property
    def store(self) -> PostgresStore:
        store = self._store
        if store is None:
            raise WorkerError("The worker has not started.", hint="call Worker.start() first")
        return store

    # -- life ------------------------------------------------------------------------------

    def start(self) -> None:
        """Open the store, launch DBOS on this worker's queue and start beating."""
        global _worker
        from subagents.store.postgres import PostgresStore

        if _worker is not None:
            raise WorkerError("This process already runs a worker; one per process.")
        self._store = PostgresStore(self.store_url)
        _warm_up()
        _worker = self
        try:
            DBOS(config=dbos_config(self.store_url, executor_id=self.executor_id))
            DBOS.listen_queues([self.queue])
            self._heartbeat = _Heartbeats(self.store_url, self.executor_id, self.queue)
            self._heartbeat.beat()  # before launch: a worker that runs anything is known
            DBOS.launch()
            # DBOS keeps a queue's settings in its table, one per-worker limit for them all:
            # the worker started last sets it
            DBOS.register_queue(
                self.queue,
                worker_concurrency=self.concurrency,
                polling_interval_sec=_QUEUE_POLL_SECONDS,
                on_conflict="always_update",
            )
        except BaseException:
            self._close()
            raise
        self._beat_thread = threading.Thread(
            target=self._beat_loop, name="worker-beat", daemon=True
        )
        self._beat_thread.start()
        log.info(
            "worker %s takes runs from queue %r of %s, %d at once; stop with Ctrl-C or SIGTERM",
            self.executor_id,
            self.queue,
            shown_url(self.store_url),
            self.concurrency,
        )

    def stop(self, *, grace_seconds: int = 0) -> None:
        """Stop taking runs; wait up to ``grace_seconds`` for the runs in flight, still
        beating meanwhile. Those that do not finish are left where their last step put them,
        and another worker takes them over at its next beat."""
        self._stopping.set()  # from now on the beat only beats
        for entry in list(self._running.values()):  # what DBOS cancels stays running
            entry.runtime.hand_over()
        with contextlib.suppress(Exception):
            DBOS.destroy(workflow_completion_timeout_sec=grace_seconds)
        self._stop.set()
        if self._beat_thread is not None:
            self._beat_thread.join()
        self._close()

    def _close(self) -> None:
        global _worker
        _worker = None
        heartbeat = getattr(self, "_heartbeat", None)
        if heartbeat is not None:
            heartbeat.leave()
        if self._store is not None:
            self._store.close()
            self._store = None

    def __enter__(self) -> Worker:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- beat, takeover, cancellation ------------------------------------------------------

    def _beat_loop(self) -> None:
        """Beat, take over silent workers' runs, and notice cancelled runs (at least once a
        second, so that a cancellation takes effect within about a second)."""
        tick = min(1.0, self.beat_interval)
        last_beat = beating_since = time.monotonic()
        while not self._stop.wait(tick):
            try:
                if time.monotonic() - last_beat >= self.beat_interval - tick / 2:
                    self._heartbeat.beat()
                    last_beat = time.monotonic()
                    if self._may_take_over(beating_since):
                        with self._heartbeat.silent_workers(self.takeover_after) as silent:
                            for executor in silent:
                                self._take_over(executor)
                if not self._stopping.is_set():
                    self._notice_cancellations()
            except Exception as error:  # the database may be away for a while: keep beating
                log.warning("worker %s: beat failed: %s", self.executor_id, error)
                beating_since = time.monotonic()

    def _may_take_over(self, beating_since: float) -> bool:
        """Whether this worker may judge others silent: not while it stops, and not until it
        has itself beaten without a break for a whole silence window (after the database was
        away for everyone, every worker's last beat is old: each gets the time to beat again
        before another takes its runs)."""
        if self._stopping.is_set():
            return False
        return time.monotonic() - beating_since >= self.takeover_after

    def _take_over(self, executor: str) -> None:
        """Put the runs of the silent worker ``executor`` back on their queue."""
        pending = DBOS.list_workflows(
            status="PENDING", executor_id=executor, load_input=False, load_output=False
        )
        for workflow in pending:
            DBOS.resume_workflow(workflow.workflow_id, queue_name=workflow.queue_name or self.queue)
        log.warning(
            "worker %s: worker %s went silent; its %d run(s) are queued again",
            self.executor_id,
            executor,
            len(pending),
        )

    def _notice_cancellations(self) -> None:
        running = dict(self._running)
        if not running:
            return
        statuses = DBOS.list_workflows(
            workflow_ids=list(running), status="CANCELLED", load_input=False, load_output=False
        )
        for status in statuses:
            entry = running.get(status.workflow_id)
            if entry is not None and not entry.cancel_requested:
                entry.cancel_requested = True
                entry.loop.call_soon_threadsafe(entry.run.cancel)

    # -- carrying out a run ----------------------------------------------------------------

    async def carry_out(self, task_id: str, *, resumes: bool = False) -> str:
        """Run (or go on with) the task ``task_id``; the status it ended with. A task that
        cannot run here is marked failed with the reason; this never raises for it."""
        store = self.store
        try:
            task = store.get_task(task_id)
        except TaskNotFoundError:
            log.warning("worker %s: queued task %s is not in the store", self.executor_id, task_id)
            return "missing"
        if task.status == "completed":  # finished before its worker could say so: a replay
            return "completed"
        workflow_id = str(DBOS.workflow_id)
        try:
            runtime = self._runtime_for(task)
            chosen = take_decision(self.store_url, workflow_id) if resumes else None
        except SubagentsError as error:
            return self._fail(task, error)
        log.info("task %s: taken up (%s)", task_id[:8], "resumed" if resumes else task.status)
        run = asyncio.ensure_future(runtime.resume(task_id, chosen, force=True))
        entry = self._running[workflow_id] = _Running(asyncio.get_running_loop(), run, runtime)
        status: str
        try:
            status = (await run).status
        except asyncio.CancelledError:
            if not (entry.cancel_requested and run.cancelled()):
                raise
            status = "cancelled"
        except StoreUnavailableError as error:
            log.warning("task %s: %s; it is taken up again shortly", task_id[:8], error)
            raise  # not the task's fault: the step is taken up again, decision and all
        except SubagentsError as error:
            status = self._fail(store.get_task(task_id), error, runtime)
        finally:
            self._running.pop(workflow_id, None)
            await runtime.aclose()
        log.info("task %s: %s", task_id[:8], status)
        if resumes:  # delivered and recorded (redacted) by the run: the plain copy goes
            drop_decision(self.store_url, workflow_id)
        return status

    def _runtime_for(self, task: TaskRecord) -> Runtime:
        from subagents.config import resolve_home
        from subagents.mcp.consent import ProjectServerPolicy
        from subagents.runtime.runtime import Runtime

        workspace = Path(task.workspace)
        if not workspace.is_dir():
            raise WorkerError(
                f"Task {task.id}'s workspace {workspace} does not exist on this worker "
                f"({socket.gethostname()}).",
                hint="run workers where the project is checked out at the same path",
            )
        if not workspace.resolve().is_relative_to(self.root):
            raise WorkerError(
                f"Task {task.id}'s workspace {workspace} is outside this worker's root "
                f"{self.root}.",
                hint="start the worker in a directory that holds the project, or pass --root DIR",
            )
        settings = task.settings
        imported = settings.get("imported")
        if isinstance(imported, dict) and not imported.get("adopted_at"):
            raise WorkerError(
                f"Task {task.id} was imported and has not been resumed where it was imported.",
                hint=f"resume it once with 'subagents resume {task.id[:8]}' first",
            )
        mode = settings.get("permission_mode")
        headless = settings.get("headless")
        return Runtime(
            cwd=workspace,
            model=task.model,
            permission_mode=mode if mode in _DEFAULT_MODES else "default",
            headless=headless if headless in ("allow", "deny", "pause") else "pause",
            store=self.store,
            project_mcp=ProjectServerPolicy.from_environment(resolve_home(), ask=None),
        )

    def _fail(self, task: TaskRecord, error: SubagentsError, runtime: Runtime | None = None) -> str:
        from subagents.redaction import Redactor

        redactor = Redactor(runtime.credentials() if runtime is not None else ())
        reason = redactor.text(f"{error.message} ({error.hint})" if error.hint else error.message)
        log.warning("worker %s: task %s failed: %s", self.executor_id, task.id, reason)
        task.status = "failed"
        task.error = reason
        task.completed_at = task.updated_at = utc_now()
        self.store.update_task(task)
        return "failed"


def _warm_up() -> None:
    """Import what every run needs now, not in the first run (about a second on a small
    machine, with an SDK)."""
    import importlib
    import importlib.util

    importlib.import_module("subagents.runtime.runtime")
    importlib.import_module("subagents.mcp.consent")
    for sdk, provider in (("openai", "openai"), ("anthropic", "anthropic")):
        if importlib.util.find_spec(sdk) is not None:
            importlib.import_module(sdk)
            importlib.import_module(f"subagents.models.{provider}")


class _Heartbeats:
    """The workers' beats: one row per live worker in ``<dbos schema>.subagents_workers``."""

    def __init__(self, store_url: str, executor_id: str, queue: str) -> None:
        self.store_url, self.executor_id, self.queue = store_url, executor_id, queue
        schema = dbos_schema(store_url)
        self.table = f"{schema}.subagents_workers"
        self._connection: Any = None
        self.connection.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
        self.connection.execute(
            f"CREATE TABLE IF NOT EXISTS {self.table} ("
            "executor_id TEXT PRIMARY KEY, queue TEXT NOT NULL, host TEXT NOT NULL, "
            "pid INTEGER NOT NULL, started_at TIMESTAMPTZ NOT NULL DEFAULT now(), "
            "beat_at TIMESTAMPTZ NOT NULL DEFAULT now())"
        )

    @property
    def connection(self) -> Any:
        """The beat's own connection, made again after the server dropped it."""
        import psycopg

        if self._connection is None or self._connection.closed or self._connection.broken:
            if self._connection is not None:
                with contextlib.suppress(Exception):
                    self._connection.close()
            self._connection = psycopg.connect(self.store_url, autocommit=True, connect_timeout=5)
        return self._connection

    def beat(self) -> None:
        self.connection.execute(
            f"INSERT INTO {self.table} (executor_id, queue, host, pid) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT (executor_id) DO UPDATE SET beat_at = now()",
            (self.executor_id, self.queue, socket.gethostname(), os.getpid()),
        )

    @contextlib.contextmanager
    def silent_workers(self, after: float) -> Iterator[list[str]]:
        """The workers silent for ``after`` seconds, locked for this worker alone; their rows
        go when the block ends without an error (so a takeover that fails is tried again at
        the next beat, and two live workers never both take one over)."""
        with self.connection.transaction():
            rows = self.connection.execute(
                f"SELECT executor_id FROM {self.table} WHERE beat_at < now() - "
                "make_interval(secs => %s) AND executor_id <> %s FOR UPDATE SKIP LOCKED",
                (after, self.executor_id),
            ).fetchall()
            silent = [str(row[0]) for row in rows]
            yield silent
            if silent:
                self.connection.execute(
                    f"DELETE FROM {self.table} WHERE executor_id = ANY(%s)", (silent,)
                )

    def leave(self) -> None:
        """A worker that stops cleanly says so (its unfinished runs are queued again by the
        next beat of another worker, with no wait)."""
        with contextlib.suppress(Exception):
            self.connection.execute(
                f"UPDATE {self.table} SET beat_at = 'epoch' WHERE executor_id = %s",
                (self.executor_id,),
            )
            self.connection.close()
