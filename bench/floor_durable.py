"""The durable floor: the least a loop pays to keep the durability `subagents` keeps.

A hand-written asyncio loop with the peer-bench workloads' fake model (as
../shared/peer-bench/bench_baseline.py has it), that writes what a crash-safe run must have
written, with nothing else: before a tool runs, the model's message with the call marked
started; after it, the result with the call marked done; the final answer. Each write is one
``INSERT`` of a row of JSON into a SQLite file in WAL mode with ``synchronous = NORMAL``, a
transaction of its own, as the `subagents` store writes a step. No checkpoints, no trace, no
session records, no redaction: what `subagents` pays above this column is its own cost, and
this column is what any durable framework pays on this machine.

    python bench/floor_durable.py w1|w2|w3|check [--iters N --warmup N]

``check`` runs W1 once and checks its log: every tool call marked started in the row before
its result's.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

PEER_BENCH = Path(
    os.environ.get("PEER_BENCH_DIR", Path(__file__).resolve().parents[2] / "shared" / "peer-bench")
)
sys.path.insert(0, str(PEER_BENCH))

from common import (  # type: ignore[import-not-found]  # noqa: E402
    W1_STEPS,
    W2_SUB_STEPS,
    W3_FANOUT,
    W3_LATENCY,
    W3_SUB_ROUNDS,
    emit,
    parse_args,
    time_async,
)

W3_FANOUT = int(os.environ.get("W3_FANOUT", W3_FANOUT))
VERSIONS = {"floor": "hand-written loop, 2 SQLite commits a tool turn", "sqlite": sqlite3.version}
_ids = itertools.count()
_sessions = itertools.count(1)

Message = dict[str, Any]


class Log:
    """The step log: one row per write, keyed by session number and step, in its own
    transaction (autocommit)."""

    def __init__(self) -> None:
        path = Path(tempfile.mkdtemp(prefix="bench-floor-")) / "floor.db"
        self.db = sqlite3.connect(path, isolation_level=None)
        self.db.execute("PRAGMA journal_mode = WAL")
        self.db.execute("PRAGMA synchronous = NORMAL")
        self.db.execute("CREATE TABLE steps (key INTEGER PRIMARY KEY, messages TEXT, ledger TEXT)")

    def write(self, session: int, step: int, messages: list[Message], ledger: Any) -> None:
        self.db.execute(
            "INSERT INTO steps VALUES (?, ?, ?)",
            ((session << 32) | step, json.dumps(messages), json.dumps(ledger)),
        )


class FakeModel:
    """peer-bench's fake model: below ``rounds`` tool-call rounds it calls its tool
    ``fanout`` times, else it answers."""

    def __init__(self, rounds: int, tool: str, fanout: int = 1, latency: float = 0.0) -> None:
        self.rounds, self.tool, self.fanout, self.latency = rounds, tool, fanout, latency

    async def __call__(self, messages: list[Message]) -> Message:
        if self.latency:
            await asyncio.sleep(self.latency)
        done = sum(1 for m in messages if m["role"] == "assistant" and m.get("tool_calls"))
        if done >= self.rounds:
            return {"role": "assistant", "content": "done"}
        calls = [
            {
                "id": f"call_{next(_ids)}",
                "name": self.tool,
                "arguments": json.dumps({"x": f"item-{done}-{j}"}),
            }
            for j in range(self.fanout)
        ]
        return {"role": "assistant", "content": "", "tool_calls": calls}


class Agent:
    def __init__(self, log: Log, model: FakeModel, tools: dict[str, Any]) -> None:
        self.log, self.model, self.tools = log, model, tools

    async def run(self, prompt: str) -> str:
        session, steps = next(_sessions), itertools.count()
        messages: list[Message] = [{"role": "user", "content": prompt}]
        self.log.write(session, next(steps), messages, None)
        while True:
            reply = await self.model(messages)
            messages.append(reply)
            calls = reply.get("tool_calls") or []
            started = [{"id": call["id"], "status": "started"} for call in calls]
            self.log.write(session, next(steps), [reply], started or None)
            if not calls:
                return str(reply["content"])
            results = await asyncio.gather(*(self.call(call) for call in calls))
            messages.extend(results)
            done = [{"id": call["id"], "status": "done"} for call in calls]
            self.log.write(session, next(steps), results, done)

    async def call(self, call: dict[str, Any]) -> Message:
        out = self.tools[call["name"]](**json.loads(call["arguments"]))
        if asyncio.iscoroutine(out):
            out = await out
        return {"role": "tool", "tool_call_id": call["id"], "content": str(out)}


def check(log: Log) -> dict[str, int]:
    """The rows of one W1 run, and how many calls were marked started in the row before
    the one holding their result and marked done there."""
    rows = [
        (json.loads(messages), json.loads(ledger) if ledger else None)
        for messages, ledger in log.db.execute("SELECT messages, ledger FROM steps ORDER BY key")
    ]
    kept = 0
    for (_, before), (messages, after) in itertools.pairwise(rows):
        ids = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
        if ids and before == [{"id": i, "status": "started"} for i in ids]:
            kept += after == [{"id": i, "status": "done"} for i in ids]
    return {"rows": len(rows), "calls_kept": kept}


def echo(x: str) -> str:
    return "ok:" + x


def parent(log: Log, sub: Agent, fanout: int = 1) -> Agent:
    async def delegate(x: str) -> str:
        return await sub.run(x)

    return Agent(log, FakeModel(1, "delegate", fanout=fanout), {"delegate": delegate})


async def main() -> None:
    args = parse_args()
    log = Log()
    if args.workload == "w1":
        agent = Agent(log, FakeModel(W1_STEPS, "echo"), {"echo": echo})
        stats = await time_async(lambda: agent.run("go"), args.warmup or 20, args.iters or 300)
        stats["per_model_turn_us"] = stats["median_ms"] * 1e3 / (W1_STEPS + 1)
        stats["cpu_per_model_turn_us"] = stats["cpu_median_ms"] * 1e3 / (W1_STEPS + 1)
    elif args.workload == "w2":
        top = parent(log, Agent(log, FakeModel(W2_SUB_STEPS, "echo"), {"echo": echo}))
        stats = await time_async(lambda: top.run("go"), args.warmup or 20, args.iters or 300)
    elif args.workload == "w3":
        sub = Agent(log, FakeModel(W3_SUB_ROUNDS, "echo", latency=W3_LATENCY), {"echo": echo})
        top = parent(log, sub, fanout=W3_FANOUT)
        await top.run("go")
        walls, cpus = [], []
        for _ in range(args.iters or 5):
            cpu, wall = time.process_time(), time.perf_counter()
            await top.run("go")
            walls.append((time.perf_counter() - wall) * 1e3)
            cpus.append((time.process_time() - cpu) * 1e3)
        stats = {
            "wall_ms_each": walls,
            "median_ms": sorted(walls)[len(walls) // 2],
            "cpu_ms_each": cpus,
        }
    elif args.workload == "check":
        await Agent(log, FakeModel(W1_STEPS, "echo"), {"echo": echo}).run("go")
        print(json.dumps(check(log)))
        return
    else:
        raise SystemExit(f"floor_durable.py runs w1, w2, w3 or check, not {args.workload}")
    emit("floor_durable", args.workload, stats, VERSIONS)


if __name__ == "__main__":
    asyncio.run(main())
