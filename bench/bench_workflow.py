"""What the workflow engine costs per node, against a plain agent run.

    python bench/bench_workflow.py [--iters N] [--nodes N]

Three measurements, each with the store on (the path users take: a durable task) and off:

- a plain run: ``Runtime.run(prompt, agent="echo")``, one model turn that answers at once;
- a workflow of N agent nodes in a row, each the same agent and the same one-turn answer,
  through ``Runtime.run_workflow``; per node = the run / N;
- a workflow of N condition nodes in a row (no agent): the engine alone (routing, state,
  checkpoint and trace per node).

The overhead of a node is its cost minus the plain run's. Models answer at once, so the
figures are the library's own CPU.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from subagents.definitions.model import AgentDefinition
from subagents.runtime.runtime import Runtime
from subagents.store.sqlite import open_store
from subagents.testing import FunctionModel
from subagents.workflows.graph import AgentNode, ConditionNode, Edge, Workflow


def chain(kind: str, nodes: int) -> Workflow:
    names = [f"n{i}" for i in range(nodes)]
    if kind == "agent":
        graph: dict[str, Any] = {n: AgentNode(agent="echo", prompt="go {{ input }}") for n in names}
    else:
        graph = {n: ConditionNode(expression="len(messages) > 0") for n in names}
    edges = [Edge.model_validate({"from": a, "to": b}) for a, b in itertools.pairwise(names)]
    return Workflow(name=f"{kind}-chain", entry_point=names[0], nodes=graph, edges=edges)


def runtime(workspace: Path, store: Any) -> Runtime:
    model = FunctionModel(lambda request: "done", name="bench:echo")
    return Runtime(
        cwd=workspace,
        agents=[AgentDefinition(name="echo", description="Echoes.", system_prompt="Echo.")],
        agent_models={"echo": model},
        model=model,
        store=store,
        builtin_tools=False,
        permission_mode="bypassPermissions",
    )


async def measure(what: str, nodes: int, iters: int, store_on: bool) -> float:
    """Median CPU µs of one unit (a plain run, or one node of a workflow run)."""
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        store = open_store(workspace / "state.db") if store_on else None
        rt = runtime(workspace, store)
        workflow = chain(what, nodes) if what != "plain" else None

        async def one() -> None:
            if workflow is None:
                result = await rt.run("go", agent="echo")
            else:
                result = await rt.run_workflow(workflow, "x")
            assert result.status == "completed", result.error

        for _ in range(max(3, iters // 10)):
            await one()
        gc.collect()
        samples = []
        for _ in range(iters):
            start = time.process_time()
            await one()
            samples.append(time.process_time() - start)
        await rt.aclose()
        if store is not None:
            store.close()
    per = 1 if workflow is None else nodes
    return statistics.median(samples) / per * 1e6


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iters", type=int, default=200)
    parser.add_argument("--nodes", type=int, default=10)
    args = parser.parse_args()
    print(f"Workflow engine, CPU µs (median of {args.iters}; {args.nodes} nodes per workflow)")
    print("| what | store off | store on |")
    print("|---|---|---|")
    rows = {}
    for what, label in (
        ("plain", "plain run: Runtime.run, one agent turn"),
        ("agent", "agent node (one agent turn), per node"),
        ("condition", "condition node (the engine alone), per node"),
    ):
        off = await measure(what, args.nodes, args.iters, False)
        on = await measure(what, args.nodes, args.iters, True)
        rows[what] = (off, on)
        print(f"| {label} | {off:.0f} | {on:.0f} |")
    (plain_off, plain_on), (agent_off, agent_on) = rows["plain"], rows["agent"]
    off, on = agent_off - plain_off, agent_on - plain_on
    print(f"| agent node minus plain run | {off:+.0f} | {on:+.0f} |")


if __name__ == "__main__":
    asyncio.run(main())
