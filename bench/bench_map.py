"""What a workflow's map node costs, durable (the path users take: a SQLite store).

    python bench/bench_map.py [--tool-items N] [--agent-items N] [--iters N]

- **tool items**: a map of N items (default 1,000) whose body is a side-effecting tool that
  returns at once: each item writes its ledger entry twice (started, then its result), the
  per-item durability a resumed map relies on; ``max_concurrent`` 100.
- **agent items**: a map of N items (default 200) whose body is an agent on a scripted model
  that answers after 50 ms, ``max_concurrent`` 100, W3's shape (100 subagents at once, each
  waiting on its model): the floor is N / 100 x 50 ms.

For each: wall time (median of ``--iters`` runs), what the store holds afterwards (the database
and its WAL, bytes), and the peak of Python's allocations during one more run (tracemalloc,
which slows the run, so it is not timed).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

from subagents.definitions.model import AgentDefinition
from subagents.models.base import ModelRequest, ModelResponse
from subagents.runtime.runtime import Runtime
from subagents.store.sqlite import open_store
from subagents.testing import FunctionModel, text_response
from subagents.tools.decorator import tool
from subagents.workflows.graph import Workflow

CONCURRENT = 100
MODEL_LATENCY_S = 0.05


@tool(run_in_thread=False, needs_approval=False)
def mark(n: int) -> str:
    """Mark item n as done (a side effect the ledger records)."""
    return f"marked {n}"


async def answer_later(request: ModelRequest) -> ModelResponse:
    await asyncio.sleep(MODEL_LATENCY_S)
    return text_response("item done")


def workflow(body: dict[str, Any]) -> Workflow:
    node = {"type": "map", "over": "items", "output": "results", "max_concurrent": CONCURRENT}
    return Workflow.model_validate(
        {"name": "map", "nodes": {"each": {**node, **body}}, "entry_point": "each", "edges": []}
    )


async def one_run(kind: str, items: int, folder: Path) -> tuple[float, int]:
    """(wall seconds, store bytes) of one durable map run."""
    path = folder / "state.db"
    with open_store(path) as store:
        model = FunctionModel(answer_later, name="bench:item")
        runtime = Runtime(
            cwd=folder,
            agents=[AgentDefinition(name="item", description="Does one.", system_prompt="Do.")],
            agent_models={"item": model},
            model=model,
            tools=[mark],
            builtin_tools=False,
            store=store,
            permission_mode="bypassPermissions",
        )
        body = (
            {"tool": "mark", "arguments": {"n": "{{ index }}"}}
            if kind == "tool"
            else {"agent": "item", "prompt": "Do item {{ item }}."}
        )
        started = time.perf_counter()
        result = await runtime.run_workflow(workflow(body), {"items": list(range(items))})
        wall = time.perf_counter() - started
        assert result.status == "completed", result.error
        await runtime.aclose()
    return wall, store_bytes(folder)


def store_bytes(folder: Path) -> int:
    """The database and its write-ahead log."""
    return sum(p.stat().st_size for p in folder.glob("state.db*"))


async def measure(kind: str, items: int, iters: int) -> dict[str, float]:
    walls, sizes = [], []
    for _ in range(iters):
        with tempfile.TemporaryDirectory() as folder:
            wall, size = await one_run(kind, items, Path(folder))
        walls.append(wall)
        sizes.append(size)
    with tempfile.TemporaryDirectory() as folder:
        tracemalloc.start()
        await one_run(kind, items, Path(folder))
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return {
        "wall_ms": statistics.median(walls) * 1000,
        "store_kb": statistics.median(sizes) / 1024,
        "peak_mb": peak / 1024 / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tool-items", type=int, default=1000)
    parser.add_argument("--agent-items", type=int, default=200)
    parser.add_argument("--iters", type=int, default=3)
    args = parser.parse_args()
    floor_ms = args.agent_items / CONCURRENT * MODEL_LATENCY_S * 1000
    print("| map | items | wall ms (median) | per item ms | store KB | peak MB |")
    print("|---|---|---|---|---|---|")
    for kind, items in (("tool", args.tool_items), ("agent", args.agent_items)):
        figures = asyncio.run(measure(kind, items, args.iters))
        print(
            f"| {kind} | {items} | {figures['wall_ms']:.0f} | "
            f"{figures['wall_ms'] / items:.2f} | {figures['store_kb']:.0f} | "
            f"{figures['peak_mb']:.1f} |"
        )
    print(f"\nagent items' floor (the model's waits alone): {floor_ms:.0f} ms")


if __name__ == "__main__":
    main()
