"""A three-level scripted run with side effects, for the crash tests (run as a subprocess).

    python crash_run.py STORE WORKSPACE run
    python crash_run.py STORE WORKSPACE resume TASK [approve|reject]

main -> worker -> nested; every level appends lines to `ledger.txt` through the side-effecting
`Append` tool and also calls read-only tools. With ``CRASH_SHAPE=parallel``, main starts three
workers in one turn instead, whose steps the store commits in groups (store/group.py). The
models are functions of the history, as a real model's next step depends only on what it has
seen, so a resumed run continues the same plan. ``HOLD_LINE`` (a line) and ``HOLD_MODEL`` (an
agent) keep the process waiting inside that tool call or that agent's first model call (with
``HOLD_MODEL`` it prints ``{"holding": AGENT}`` once there). Prints one JSON line with the
outcome.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from pathlib import Path

from subagents.definitions.model import AgentDefinition
from subagents.messages import AssistantMessage, ToolResultMessage
from subagents.models.base import ModelRequest, ModelResponse
from subagents.runtime.pause import HumanDecision
from subagents.runtime.runtime import Runtime
from subagents.store.sqlite import open_store
from subagents.testing import (
    FunctionModel,
    text_response,
    tool_call_response,
    tool_calls_response,
)
from subagents.tools.decorator import tool

PLANS: dict[str, list[tuple[str, dict[str, object]]]] = {
    "main": [
        ("Append", {"line": "main-1"}),
        ("Task", {"description": "delegate", "prompt": "do the work", "subagent_type": "worker"}),
        ("Read", {"file_path": "ledger.txt"}),
    ],
    "worker": [
        ("Append", {"line": "worker-1"}),
        ("Task", {"description": "nest", "prompt": "go deeper", "subagent_type": "nested"}),
        ("Append", {"line": "worker-2"}),
    ],
    "nested": [
        ("Append", {"line": "nested-1"}),
        ("Append", {"line": "nested-2"}),
        ("LS", {}),
    ],
}
EXPECTED_LINES = ["main-1", "worker-1", "nested-1", "nested-2", "worker-2"]

PARALLEL = os.environ.get("CRASH_SHAPE") == "parallel"
PARALLEL_WORKERS = ("alpha", "beta", "gamma")
Step = tuple[str, dict[str, object]]


def _parallel_plans() -> dict[str, list[Step]]:
    tasks: list[Step] = [
        ("Task", {"description": f"part {name}", "prompt": "do it", "subagent_type": name})
        for name in PARALLEL_WORKERS
    ]
    plans: dict[str, list[Step]] = {
        "main": [("Append", {"line": "main-1"}), *tasks, ("Read", {"file_path": "ledger.txt"})]
    }
    for name in PARALLEL_WORKERS:
        plans[name] = [("Append", {"line": f"{name}-1"}), ("Append", {"line": f"{name}-2"})]
    return plans


if PARALLEL:
    PLANS = _parallel_plans()


def planner(who: str) -> FunctionModel:
    async def turn(request: ModelRequest) -> ModelResponse:
        # HOLD_MODEL keeps the process alive inside that agent's first model call (a line
        # on stdout says it got there)
        first = not any(isinstance(m, AssistantMessage) for m in request.messages)
        if os.environ.get("HOLD_MODEL") == who and first:
            print(json.dumps({"holding": who}), flush=True)
            await asyncio.sleep(60)
        await asyncio.sleep(0.01)
        done = sum(1 for m in request.messages if isinstance(m, ToolResultMessage))
        plan = PLANS[who]
        if done < len(plan):
            name, arguments = plan[done]
            if name == "Task" and PARALLEL:  # every Task of the plan, in one turn
                tasks = [step for step in plan[done:] if step[0] == "Task"]
                return tool_calls_response(tasks)
            return tool_call_response(name, arguments)
        results = [m.content for m in request.messages if isinstance(m, ToolResultMessage)]
        return text_response(f"{who} done after {len(results)} steps")

    return FunctionModel(turn, name=f"scripted:{who}")


def make_runtime(store_path: Path, workspace: Path) -> Runtime:
    @tool
    async def Append(line: str) -> str:
        """Append a line to ledger.txt (a side effect that must happen once)."""
        with (workspace / "ledger.txt").open("a") as handle:
            handle.write(line + "\n")
        # HOLD_LINE keeps the process alive inside this tool, outside any store transaction
        await asyncio.sleep(60 if os.environ.get("HOLD_LINE") == line else 0.005)
        return f"appended {line}"

    agents = [
        AgentDefinition(name=name, description="Works.", system_prompt="You work.")
        for name in ("worker", "nested", *PARALLEL_WORKERS)
    ]
    return Runtime(
        cwd=workspace,
        agents=agents,
        model=planner("main"),
        agent_models={name: planner(name) for name in PLANS if name != "main"},
        tools=[Append],
        permission_mode="bypassPermissions",
        store=open_store(store_path),
    )


def report(result: object) -> None:
    from subagents.runtime.result import RunResult

    assert isinstance(result, RunResult)
    question = result.question.to_dict() if result.question is not None else None
    print(
        json.dumps(
            {
                "task_id": result.task_id,
                "status": result.status,
                "output": result.output,
                "question": question,
            }
        ),
        flush=True,
    )


async def main() -> None:
    store_path, workspace, mode = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    runtime = make_runtime(store_path, workspace)
    if mode == "run":
        task_id = str(uuid.uuid4())
        print(json.dumps({"started": task_id}), flush=True)
        report(await runtime.run("run the plan", task_id=task_id))
    else:
        task_id = sys.argv[4]
        decision = HumanDecision(sys.argv[5]) if len(sys.argv) > 5 else None  # type: ignore[arg-type]
        report(await runtime.resume(task_id, decision))


if __name__ == "__main__":
    asyncio.run(main())
