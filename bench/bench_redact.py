"""What redaction costs on the hot path: every step of every stored run passes through it.

    python bench/bench_redact.py [--iters N]

Two durable W1-style runs (20 tool turns, store on), each with the recorder's redactor wrapped
in a stopwatch: ``echo`` (small tool results, as bench_durability.py) and ``read`` (each tool
result is 16 kB of real source code, as a Read of a file gives). For each: CPU per step
(model turn) with the store on, the redactor's part of it, and its share. Then the redactor on
its own, on typical texts, in µs per call and MB/s.
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
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_subagents import W1_STEPS, WORKSPACE, echo, fake_model
from subagents.redaction import Redactor
from subagents.runtime.recorder import Recorder
from subagents.runtime.session import Session
from subagents.store.records import TaskRecord
from subagents.store.sqlite import open_store
from subagents.tools.base import Tool, ToolRegistry
from subagents.tools.decorator import tool

SOURCE = (
    Path(__file__).resolve().parents[1] / "src" / "subagents" / "store" / "sqlite.py"
).read_text(encoding="utf-8")[:16_000]
PROSE = (
    "The agent read the configuration, compared it with the documentation and found that the "
    "retry policy was set twice. It proposed a change, ran the tests and reported back. "
) * 100
LOG = "\n".join(
    f"2026-11-22T10:{i % 60:02d}:00Z INFO request id=3f2a9c1e-{i:04d} path=/api/items/{i} "
    f"status=200 took={i % 97}ms user=alice@example.com"
    for i in range(12_000)
)


def _read_source(x: str) -> str:
    """Return a source file (a new text each turn, as reading different files gives)."""
    return f"{x}\n{SOURCE}"


read_source = tool(name="echo", read_only=True, run_in_thread=False)(_read_source)


class Stopwatch:
    """Duck-types the redactor for the recorder and adds up the CPU time spent in it."""

    def __init__(self, inner: Redactor) -> None:
        self.inner = inner
        self.seconds = 0.0

    def text(self, value: str) -> str:
        start = time.process_time()
        try:
            return self.inner.text(value)
        finally:
            self.seconds += time.process_time() - start

    def value(self, value: Any) -> Any:
        start = time.process_time()
        try:
            return self.inner.value(value)
        finally:
            self.seconds += time.process_time() - start


async def durable_run(iters: int, store_dir: Path, workload: Tool) -> tuple[float, float]:
    """Median CPU µs per step of a durable run, and the redactor's median µs per step."""
    registry = ToolRegistry([workload])
    store = open_store(store_dir / "state.db")
    steps = W1_STEPS + 1

    async def one() -> tuple[float, float]:
        watch = Stopwatch(Redactor())  # one per run, as a Runtime makes one per run
        session = Session(
            model=fake_model(W1_STEPS, "echo"),
            system_prompt="agent",
            tools=registry,
            workspace=WORKSPACE,
        )
        task = TaskRecord(description="w1", prompt="go", workspace=str(WORKSPACE))
        recorder = Recorder(store, task, watch)  # type: ignore[arg-type]
        recorder.start_task()
        session.recorder = recorder
        start = time.process_time()
        await session.run("go")
        return (time.process_time() - start) * 1e6 / steps, watch.seconds * 1e6 / steps

    for _ in range(max(5, iters // 10)):
        await one()
    gc.collect()
    totals, redacting = [], []
    for _ in range(iters):
        total, redact = await one()
        totals.append(total)
        redacting.append(redact)
    store.close()
    return statistics.median(totals), statistics.median(redacting)


def micro(iters: int) -> list[tuple[str, int, float]]:
    redactor = Redactor(["a-known-credential-0123456789"])
    texts = {
        "16 kB source code": SOURCE,
        "16 kB prose": PROSE[:16_000],
        "1 MB log": LOG[:1_000_000],
        "2 kB with secrets": (
            "token=ghp_0123456789abcdefghijABCDEFGHIJ012345 and AKIAABCDEFGHIJKLMNOP "
            "postgres://u:pw@h/db sk-0123456789abcdef0123 "
        )
        * 12,
    }
    rows = []
    for name, text in texts.items():
        repeats = max(3, iters // (1 + len(text) // 16_000))
        samples: list[float] = []
        for _ in range(repeats):
            start = time.perf_counter()
            redactor.text(text + str(len(samples)))
            samples.append(time.perf_counter() - start)
        rows.append((name, len(text), statistics.median(samples) * 1e6))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iters", type=int, default=100)
    args = parser.parse_args()
    print(f"durable W1 ({W1_STEPS + 1} model turns), median of {args.iters} runs:")
    for name, workload in (("echo", echo), ("read 16 kB", read_source)):
        with tempfile.TemporaryDirectory() as directory:
            total, redact = asyncio.run(durable_run(args.iters, Path(directory), workload))
        print(
            f"  {name:<11} {total:7.0f} µs CPU per step, redactor {redact:6.1f} µs "
            f"({redact / total:.1%})"
        )
    print("redactor alone (median wall):")
    for name, size, micros in micro(args.iters * 5):
        print(f"  {name:<18} {micros:9.1f} µs  {size / micros:7.1f} MB/s")


if __name__ == "__main__":
    main()
