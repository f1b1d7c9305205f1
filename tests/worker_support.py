"""A cluster for the worker tests: a PostgreSQL schema of its own, the policy model server, a
project using it, and ``subagents worker`` processes started and stopped at will."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from fakes.policy_server import PolicyServer, agent_files
from postgres_support import postgres_url
from subagents.store.postgres import PostgresStore
from subagents.store.records import TaskRecord
from subagents.workers.submit import wait_for_task

__all__ = ["Cluster", "WorkerProcess", "cluster"]

SUBAGENTS = [sys.executable, "-m", "subagents"]
STARTUP_TIMEOUT = 90.0


class WorkerProcess:
    """One ``subagents worker``: its process and what it printed (collected as it comes)."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self.lines: list[str] = []
        self.arrived: list[float] = []  # time.monotonic() of each line
        self.ready = threading.Event()
        self.executor_id: str | None = None
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.arrived.append(time.monotonic())
            self.lines.append(line.rstrip("\n"))
            if "takes runs from queue" in line:
                self.executor_id = line.split("worker ", 1)[1].split(" ", 1)[0]
                self.ready.set()

    def first_line_with(self, text: str) -> float | None:
        """When the first line containing ``text`` arrived, if one has."""
        for arrived, line in zip(self.arrived, self.lines, strict=False):
            if text in line:
                return arrived
        return None

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    def kill(self) -> None:
        """SIGKILL: no goodbye, no clean-up, as when a machine dies."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._reader.join(timeout=5)


class Cluster:
    def __init__(self, url: str, project: Path, server: PolicyServer) -> None:
        self.url, self.project, self.server = url, project, server
        self.workers: list[WorkerProcess] = []
        self.env = {**os.environ, "SUBAGENTS_STORE": url, "COLUMNS": "200"}

    def start_worker(
        self, *args: str, takeover_after: float = 2.0, store_url: str | None = None
    ) -> WorkerProcess:
        """A worker on the cluster's store (or on ``store_url``, the same database reached
        another way), started and listening."""
        env = self.env if store_url is None else {**self.env, "SUBAGENTS_STORE": store_url}
        process = subprocess.Popen(
            [*SUBAGENTS, "worker", "--takeover-after", str(takeover_after), "--grace", "0", *args],
            cwd=self.project,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        worker = WorkerProcess(process)
        self.workers.append(worker)
        if not worker.ready.wait(STARTUP_TIMEOUT):
            worker.stop()
            raise AssertionError(f"the worker did not start:\n{worker.output}")
        return worker

    def cli(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*SUBAGENTS, *args],
            cwd=cwd or self.project,
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=180,
        )

    @contextmanager
    def store(self) -> Iterator[PostgresStore]:
        with PostgresStore(self.url) as store:
            yield store

    def wait(self, task_id: str, timeout: float = 120.0) -> TaskRecord:
        with self.store() as store:
            return wait_for_task(store, task_id, poll_seconds=0.1, timeout=timeout)

    def effects(self) -> list[str]:
        log = self.project / "effects.log"
        return log.read_text().split() if log.exists() else []

    def stop_all(self) -> None:
        for worker in self.workers:
            worker.stop()
        self.workers.clear()


@contextmanager
def cluster(project: Path, *, interrupted: str = "fail") -> Iterator[Cluster]:
    """A cluster on a fresh schema with the policy server, its project in ``project``."""
    with postgres_url() as url, PolicyServer() as server:
        (project / ".subagents").mkdir(parents=True, exist_ok=True)
        (project / ".subagents" / "config.toml").write_text(
            server.config_toml(interrupted=interrupted)
        )
        for path, text in agent_files().items():
            (project / path).parent.mkdir(parents=True, exist_ok=True)
            (project / path).write_text(text)
        built = Cluster(url, project, server)
        try:
            yield built
        finally:
            built.stop_all()
            _drop_dbos_schema(url)


def _drop_dbos_schema(url: str) -> None:
    """DBOS's schema beside the test's (postgres_url drops the test's own)."""
    import psycopg

    from subagents.workers.engine import dbos_schema

    deadline = time.monotonic() + 10
    while True:
        try:
            with psycopg.connect(url, autocommit=True) as admin:
                admin.execute(f"DROP SCHEMA IF EXISTS {dbos_schema(url)} CASCADE")
            return
        except psycopg.errors.LockNotAvailable:
            if time.monotonic() > deadline:
                raise
