"""What durability costs: workload W1 (20 tool turns) with the store on and off.

    python bench/bench_durability.py [--iters N]

With the store on, every turn commits the model's answer and the turn's tool results (two
SQLite transactions in WAL mode, with a checkpoint, trace records and the session record);
the difference in CPU per model turn is the cost of durability. Goal: at most 300 µs per step.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_subagents import W1_STEPS, WORKSPACE, echo, fake_model
from subagents.redaction import Redactor
from subagents.runtime.recorder import Recorder
from subagents.runtime.session import Session
from subagents.store.records import TaskRecord
from subagents.store.sqlite import open_store
from subagents.tools.base import ToolRegistry


async def measure(iters: int, store_dir: Path | None) -> tuple[float, float, int]:
    """Median CPU ms and wall ms of one W1 run, and the commits per run."""
    registry = ToolRegistry([echo])
    store = open_store(store_dir / "state.db") if store_dir is not None else None
    redactor = Redactor()
    commits = 0

    async def one() -> str | None:
        session = Session(
            model=fake_model(W1_STEPS, "echo"),
            system_prompt="agent",
            tools=registry,
            workspace=WORKSPACE,
        )
        if store is not None:
            task = TaskRecord(description="w1", prompt="go", workspace=str(WORKSPACE))
            recorder = Recorder(store, task, redactor)
            recorder.start_task()
            session.recorder = recorder
        result = await session.run("go")
        assert result.output == "done"
        return session.recorder.task_id if session.recorder is not None else None

    for _ in range(max(5, iters // 10)):
        task_id = await one()
    if store is not None and task_id is not None:
        commits = len(store.checkpoints(task_id))
    gc.collect()
    cpu, wall = [], []
    for _ in range(iters):
        c0, t0 = time.process_time(), time.perf_counter()
        await one()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - t0)
    if store is not None:
        store.close()
    return statistics.median(cpu) * 1e3, statistics.median(wall) * 1e3, commits


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iters", type=int, default=200)
    args = parser.parse_args()
    off_cpu, off_wall, _ = asyncio.run(measure(args.iters, None))
    with tempfile.TemporaryDirectory() as directory:
        on_cpu, on_wall, commits = asyncio.run(measure(args.iters, Path(directory)))
    turns = W1_STEPS + 1
    per_turn_cpu = (on_cpu - off_cpu) * 1e3 / turns
    per_turn_wall = (on_wall - off_wall) * 1e3 / turns
    print(f"W1 ({turns} model turns, {commits} checkpoints per run), median of {args.iters}:")
    print(f"  store off: {off_cpu:.2f} ms CPU, {off_wall:.2f} ms wall per run")
    print(f"  store on:  {on_cpu:.2f} ms CPU, {on_wall:.2f} ms wall per run")
    print(
        f"  durability per step (model turn): {per_turn_cpu:.0f} µs CPU, {per_turn_wall:.0f} µs "
        f"wall; per commit: {(on_wall - off_wall) * 1e3 / max(commits, 1):.0f} µs wall "
        "(goal: at most 300 µs per step)"
    )


if __name__ == "__main__":
    main()
