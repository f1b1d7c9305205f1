"""Runs per second on worker processes (DBOS on PostgreSQL) against the in-process path.

The workload is the one of the chaos test (tests/workers/test_workers_failover.py): a main
agent hands the prompt to ``middle``, which hands it to ``leaf``, which runs one Bash command;
each answers.
A run is 3 sessions, 6 model calls (an OpenAI-compatible server on 127.0.0.1 that computes each
answer from the conversation) and 3 tool calls (2 Task, 1 Bash): 9 steps.

Rows, each over ``--runs`` runs (40 by default):

- in-process, ``Runtime.run`` one run after another, on the SQLite store and on PostgreSQL;
- in-process, 4 runs at a time on one event loop (SQLite), as one process would serve them;
- ``subagents worker`` processes (1, 2, 4; 4 runs at a time each), the runs queued at once
  with ``queue_run``, and timed from the first queued to the last finished; the workers are
  started (and DBOS launched) and have carried out a warm-up batch before the clock starts.
  The worker processes' CPU time per run is given beside (psutil).

Engine overhead per step: (a run's wall time on one worker taking one run at a time - a run's
wall time in-process on the same PostgreSQL store) / 9.

    .venv/bin/python bench/bench_workers.py [--runs N] [--workers 1,2,4]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fakes.policy_server import PolicyServer, agent_files
from subagents.runtime.runtime import Runtime
from subagents.store.open import open_store
from subagents.store.postgres import PostgresStore
from subagents.workers.engine import dbos_schema
from subagents.workers.submit import queue_run, wait_for_task

BENCH_PG = os.environ.get("BENCH_PG", "postgresql://postgres@127.0.0.1:5432/test")
STEPS_PER_RUN = 9


@contextlib.contextmanager
def fresh_schema() -> Iterator[str]:
    import psycopg

    schema = f"bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(BENCH_PG, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
    url = f"{BENCH_PG}?options=-csearch_path%3D{schema}"
    try:
        yield url
    finally:
        with psycopg.connect(BENCH_PG, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA IF EXISTS {dbos_schema(url)} CASCADE")
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


def make_project(root: Path, server: PolicyServer) -> Path:
    (root / ".subagents").mkdir(parents=True)
    (root / ".subagents" / "config.toml").write_text(server.config_toml())
    for path, text in agent_files().items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return root


def prompt(number: int) -> str:
    return f"b{number:03d} pause=0"


async def in_process(project: Path, store_location: str, runs: int, at_once: int) -> float:
    """Seconds for ``runs`` runs through ``Runtime.run``, ``at_once`` at a time."""
    with open_store(store_location) as store:
        runtime = Runtime(cwd=project, store=store, permission_mode="bypassPermissions")
        gate = asyncio.Semaphore(at_once)

        async def one(number: int) -> None:
            async with gate:
                result = await runtime.run(prompt(number))
                assert result.status == "completed", result.error

        started = time.perf_counter()
        await asyncio.gather(*(one(n) for n in range(runs)))
        elapsed = time.perf_counter() - started
        await runtime.aclose()
    return elapsed


def on_workers(project: Path, url: str, runs: int, workers: int, concurrency: int) -> float:
    """Seconds for ``runs`` runs queued at once for ``workers`` worker processes."""
    env = {**os.environ, "SUBAGENTS_STORE": url}
    command = [sys.executable, "-m", "subagents", "worker", "--grace", "0"]
    processes = [
        subprocess.Popen(
            [*command, "--concurrency", str(concurrency)],
            cwd=project,
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(workers)
    ]
    try:
        for process in processes:  # started: DBOS launched, listening
            assert process.stderr is not None
            for line in process.stderr:
                if "takes runs from queue" in line:
                    break
        with PostgresStore(url) as store:
            runtime = Runtime(cwd=project, store=store, permission_mode="bypassPermissions")
            run_all(store, runtime, range(-workers * concurrency, 0))  # warm-up, not timed
            cpu_before = sum(_cpu_seconds(process.pid) for process in processes)
            started = time.perf_counter()
            run_all(store, runtime, range(runs))
            elapsed = time.perf_counter() - started
            cpu = sum(_cpu_seconds(process.pid) for process in processes) - cpu_before
            worker_cpu_ms.append(1000 * cpu / runs)
            return elapsed
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait()


def run_all(store: PostgresStore, runtime: Runtime, numbers: range) -> None:
    """Queue the runs ``numbers`` at once, then wait for each to complete."""
    ids = [queue_run(runtime, prompt(n)).id for n in numbers]
    for task_id in ids:
        task = wait_for_task(store, task_id, poll_seconds=0.02)
        assert task.status == "completed", task.error


def _cpu_seconds(pid: int) -> float:
    import psutil

    times = psutil.Process(pid).cpu_times()
    return float(times.user + times.system)


worker_cpu_ms: list[float] = []
"""Each worker row's CPU time of its worker processes, per run (ms)."""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--workers", default="1,2,4")
    args = parser.parse_args()
    runs = args.runs
    rows: list[tuple[str, float]] = []
    with PolicyServer() as server, tempfile.TemporaryDirectory() as tmp:
        project = make_project(Path(tmp) / "project", server)
        sqlite = str(Path(tmp) / "state.db")
        rows.append(
            ("in-process, SQLite, 1 at a time", asyncio.run(in_process(project, sqlite, runs, 1)))
        )
        rows.append(
            ("in-process, SQLite, 4 at a time", asyncio.run(in_process(project, sqlite, runs, 4)))
        )
        with fresh_schema() as url:
            rows.append(
                (
                    "in-process, PostgreSQL, 1 at a time",
                    asyncio.run(in_process(project, url, runs, 1)),
                )
            )
        with fresh_schema() as url:
            rows.append(("1 worker, 1 at a time", on_workers(project, url, runs, 1, 1)))
        for count in (int(n) for n in args.workers.split(",")):
            with fresh_schema() as url:
                rows.append(
                    (
                        f"{count} worker(s), 4 at a time each",
                        on_workers(project, url, runs, count, 4),
                    )
                )
    print(f"{runs} runs of {STEPS_PER_RUN} steps each (cpu count {os.cpu_count()})")
    print(f"{'path':<40} {'seconds':>8} {'runs/s':>8} {'ms/run':>8} {'worker CPU ms/run':>18}")
    cpu = iter(worker_cpu_ms)
    for name, seconds in rows:
        worker_cpu = f"{next(cpu):18.1f}" if "worker" in name else ""
        print(
            f"{name:<40} {seconds:8.2f} {runs / seconds:8.1f} {1000 * seconds / runs:8.1f}"
            f"{worker_cpu}"
        )
    by_name = dict(rows)
    overhead = by_name["1 worker, 1 at a time"] - by_name["in-process, PostgreSQL, 1 at a time"]
    print(f"engine overhead per step: {1000 * overhead / runs / STEPS_PER_RUN:.2f} ms")


if __name__ == "__main__":
    main()
