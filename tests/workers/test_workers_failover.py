"""The chaos test of the workers: two worker processes, twenty runs of a two-level delegation
whose leaf runs a side-effecting command, and one worker SIGKILLed while it has runs in flight.
Every run must complete, on the other worker, with no step lost and no side effect twice."""

from __future__ import annotations

import collections
import time
from pathlib import Path

import pytest

from subagents.runtime.runtime import Runtime
from subagents.workers.engine import dbos_client
from subagents.workers.submit import queue_run
from worker_support import Cluster, WorkerProcess, cluster

pytestmark = (
    pytest.mark.slow
)  # real subprocesses, servers or many examples: not in `make test-fast`

RUNS = 20


def test_a_killed_worker_loses_no_run_no_step_and_repeats_no_effect(tmp_path: Path) -> None:
    with cluster(tmp_path / "project") as built:
        doomed = built.start_worker("--concurrency", "4")
        survivor = built.start_worker("--concurrency", "4")
        task_ids = _queue_runs(built)
        busy = _wait_until_running_on(built, doomed.executor_id, at_least=2)
        killed_at = time.monotonic()
        doomed.kill()
        ended = {task_id: built.wait(task_id, timeout=240) for task_id in task_ids}
        taken_over = _takeover_seconds(survivor, killed_at)

        statuses = collections.Counter(task.status for task in ended.values())
        assert statuses == {"completed": RUNS}, statuses
        effects = collections.Counter(built.effects())
        assert all(count == 1 for count in effects.values()), effects  # none twice
        with built.store() as store:
            assert store.integrity_check() == []
            for task_id in task_ids:
                sessions = store.sessions(task_id)
                # a replayed parent re-attached to its child: one session per agent, no more
                assert sorted(s.agent_name for s in sessions) == ["leaf", "main", "middle"]
                assert all(s.status == "completed" for s in sessions)
                sequences = [c.sequence for c in store.checkpoints(task_id)]
                assert sequences == sorted(set(sequences)), sequences
                closed = [
                    entry
                    for entry in store.ledger(task_id)
                    if entry.tool_name == "Bash" and entry.status != "started"
                ]
                assert len(closed) == 1, closed  # the effect's call settled exactly once
        print(
            f"\nfailover: {len(busy)} runs were in flight on the killed worker; taken over "
            f"{taken_over:.1f} s after the kill; {len(effects)} of {RUNS} effects landed "
            f"(interrupted calls are not run again blind), none twice"
        )


def test_a_run_outlives_its_database_going_away_for_a_while(tmp_path: Path) -> None:
    from urllib.parse import urlsplit

    from fakes.tcp_proxy import TCPProxy

    with cluster(tmp_path / "project") as built:
        address = urlsplit(built.url)
        proxy = TCPProxy(address.hostname or "127.0.0.1", address.port or 5432)
        try:
            through_proxy = built.url.replace(
                address.netloc.split("@")[-1], f"127.0.0.1:{proxy.port}"
            )
            built.start_worker(store_url=through_proxy)
            with built.store() as store:
                runtime = Runtime(
                    cwd=built.project, store=store, permission_mode="bypassPermissions"
                )
                task_id = queue_run(runtime, "db1 pause=0.5").id
                _wait_for_bash(store, task_id)
                proxy.cut()  # the worker's every connection drops while the leaf's command runs
                time.sleep(3)  # the outage itself
                proxy.restore()
            ended = built.wait(task_id, timeout=240)
            assert ended.status == "completed", ended.error
            assert built.effects().count("db1") <= 1
            with built.store() as store:
                assert store.integrity_check() == []
                names = sorted(s.agent_name for s in store.sessions(task_id))
                assert names == ["leaf", "main", "middle"]
        finally:
            proxy.close()


def _wait_for_bash(store: object, task_id: str) -> None:
    deadline = time.monotonic() + 60
    while not any(e.tool_name == "Bash" for e in store.ledger(task_id)):  # type: ignore[attr-defined]
        assert time.monotonic() < deadline, "the leaf's Bash call never started"
        time.sleep(0.05)


def _queue_runs(built: Cluster) -> list[str]:
    with built.store() as store:
        runtime = Runtime(
            cwd=built.project, store=store, permission_mode="bypassPermissions", headless="pause"
        )
        return [queue_run(runtime, f"k{number:02d} pause=0.5").id for number in range(RUNS)]


def _wait_until_running_on(built: Cluster, executor: str | None, *, at_least: int) -> list[str]:
    """The workflows running on ``executor``, once it runs ``at_least`` of them."""
    assert executor is not None
    client = dbos_client(built.url)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        running = client.list_workflows(
            status="PENDING", executor_id=executor, load_input=False, load_output=False
        )
        if len(running) >= at_least:
            return [workflow.workflow_id for workflow in running]
        time.sleep(0.05)
    raise AssertionError(f"worker {executor} never ran {at_least} runs at once")


def _takeover_seconds(survivor: WorkerProcess, killed_at: float) -> float:
    """Seconds from the kill until the survivor said it took the runs over (it must have)."""
    noticed = survivor.first_line_with("went silent")
    assert noticed is not None, survivor.output
    return noticed - killed_at
