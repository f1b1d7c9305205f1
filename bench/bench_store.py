"""Cost of durability per step: ``SQLiteStore.commit()`` of a typical agent step.

A typical step writes 1-2 messages of about 1 KB, one checkpoint with a small state and one
trace record (the "step" case). The "tool step" case adds the session record upsert and a
ledger entry, as a step that ran a tool does. Each commit is timed on its own (wall clock and
CPU); the figures are the median, mean and p90 over ``--steps`` commits on a real file in WAL mode,
after ``--warmup`` commits. The mean is above the median because SQLite copies the WAL back
into the database file (and syncs it) every 1000 pages, i.e. every ~100 steps, inside a
commit. Goal: median well under 300 us.

    python bench/bench_store.py [--steps 5000 --warmup 500 --sessions 20]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from subagents.store import (
    CheckpointRecord,
    SessionRecord,
    StepWrite,
    TaskRecord,
    ToolLedgerEntry,
    TraceRecord,
)
from subagents.store.sqlite import SQLiteStore

__all__ = ["main"]

GOAL_US = 300.0
KB_TEXT = ("The quick brown fox reads the file and reports what it found. " * 17)[:1024]


class StepFactory:
    """Builds the StepWrite of the next step of one of ``sessions`` round-robin sessions."""

    def __init__(self, task_id: str, sessions: int) -> None:
        self.task_id = task_id
        self.sessions = [
            SessionRecord(
                session_id=f"{task_id}-s{index}",
                task_id=task_id,
                agent_name="main" if index == 0 else "worker",
                model="openai:gpt-4o-mini",
                tool_names=["Read", "Grep", "Glob", "Bash"],
                system_prompt=KB_TEXT,
                max_turns=50,
            )
            for index in range(sessions)
        ]
        self.next_seq = [0] * sessions
        self.turn = 0

    def step(self, *, with_tool: bool) -> StepWrite:
        index = self.turn % len(self.sessions)
        self.turn += 1
        session = self.sessions[index]
        seq = self.next_seq[index]
        self.next_seq[index] = seq + 2
        call_id = f"call-{self.turn}"
        messages: list[tuple[str, int, dict[str, Any]]] = [
            (
                session.session_id,
                seq,
                {
                    "role": "assistant",
                    "content": KB_TEXT,
                    "tool_calls": [{"id": call_id, "name": "Read", "arguments": {"path": "a"}}],
                },
            ),
            (
                session.session_id,
                seq + 1,
                {"role": "tool", "tool_call_id": call_id, "tool_name": "Read", "content": KB_TEXT},
            ),
        ]
        checkpoint = CheckpointRecord(
            task_id=self.task_id,
            session_id=session.session_id,
            position="after_tools",
            state={
                "message_count": seq + 2,
                "turns": self.turn,
                "usage": {"input_tokens": 1200, "output_tokens": 300},
                "pending_calls": [],
            },
        )
        trace = TraceRecord(
            task_id=self.task_id,
            session_id=session.session_id,
            kind="step",
            step_name="model_turn",
            agent=session.agent_name,
            duration_ms=12.5,
            data={"input_tokens": 1200, "output_tokens": 300},
        )
        step = StepWrite(
            task_id=self.task_id, messages=messages, checkpoint=checkpoint, traces=[trace]
        )
        if with_tool:
            step.session = session
            step.ledger = [
                ToolLedgerEntry(
                    task_id=self.task_id,
                    session_id=session.session_id,
                    tool_call_id=call_id,
                    tool_name="Read",
                    arguments={"path": "a"},
                    status="completed",
                    read_only=True,
                    result=KB_TEXT[:200],
                )
            ]
        return step


def measure(commit: Callable[[], object], steps: int, warmup: int) -> dict[str, float]:
    for _ in range(warmup):
        commit()
    wall: list[float] = []
    cpu: list[float] = []
    for _ in range(steps):
        w0, c0 = time.perf_counter_ns(), time.process_time_ns()
        commit()
        c1, w1 = time.process_time_ns(), time.perf_counter_ns()
        wall.append((w1 - w0) / 1000)
        cpu.append((c1 - c0) / 1000)
    wall.sort()
    return {
        "median_us": statistics.median(wall),
        "mean_us": statistics.fmean(wall),
        "p90_us": wall[int(len(wall) * 0.9)],
        "cpu_median_us": statistics.median(cpu),
    }


def run_case(
    directory: Path, name: str, *, with_tool: bool, args: argparse.Namespace
) -> dict[str, Any]:
    store = SQLiteStore(directory / f"{name}.db")
    try:
        task = TaskRecord(description="bench", prompt="go", workspace=str(directory))
        store.create_task(task)
        factory = StepFactory(task.id, args.sessions)
        for session in factory.sessions:  # each session's first step stores its record
            store.commit(StepWrite(task_id=task.id, session=session))
        # Building the records is the caller's work; only the commit is timed.
        pending = [factory.step(with_tool=with_tool) for _ in range(args.warmup + args.steps)]
        iterator = iter(pending)
        stats = measure(lambda: store.commit(next(iterator)), args.steps, args.warmup)
        problems = store.integrity_check()
        assert problems == [], problems
        return stats
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5000)
    parser.add_argument("--warmup", type=int, default=500)
    parser.add_argument("--sessions", type=int, default=20)
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, with_tool in (("step", False), ("tool_step", True)):
            results[name] = run_case(Path(tmp), name, with_tool=with_tool, args=args)
    results["goal_us"] = {"median": GOAL_US}
    print(json.dumps(results, indent=2))
    for name in ("step", "tool_step"):
        median, mean = results[name]["median_us"], results[name]["mean_us"]
        verdict = "ok" if median < GOAL_US else "OVER GOAL"
        print(
            f"{name}: median {median:.0f} us, mean {mean:.0f} us per commit "
            f"(goal: median < {GOAL_US:.0f} us): {verdict}"
        )


if __name__ == "__main__":
    main()
