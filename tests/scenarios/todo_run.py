"""A two-level scripted run that keeps todo lists, for the TodoWrite crash test (run as a
subprocess, and imported by the test to resume in-process).

    python todo_run.py STORE WORKSPACE TASK_ID

main writes its todo list and delegates to worker; worker writes its own list, then calls
`Wait`, which prints WAITING and, while HOLD is set in the environment, never returns, so the
test can SIGKILL the process at a known point. The models are functions of the history, so a
resumed run continues the same plan.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from subagents.definitions.model import AgentDefinition
from subagents.messages import ToolResultMessage
from subagents.models.base import ModelRequest, ModelResponse
from subagents.runtime.events import EventBus
from subagents.runtime.runtime import Runtime
from subagents.store.sqlite import open_store
from subagents.testing import FunctionModel, text_response, tool_call_response
from subagents.tools.decorator import tool

MAIN_TODOS = [
    {"content": "Plan the work", "status": "completed", "activeForm": "Planning the work"},
    {"content": "Delegate to worker", "status": "in_progress", "activeForm": "Delegating"},
    {"content": "Report", "status": "pending", "activeForm": "Reporting"},
]
WORKER_TODOS = [
    {"content": "Wait for the signal", "status": "in_progress", "activeForm": "Waiting"},
    {"content": "Say done", "status": "pending", "activeForm": "Saying done"},
]
PLANS: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "main": [
        ("TodoWrite", {"todos": MAIN_TODOS}),
        ("Task", {"description": "wait", "prompt": "wait, then finish", "subagent_type": "worker"}),
    ],
    "worker": [("TodoWrite", {"todos": WORKER_TODOS}), ("Wait", {})],
}


def planner(who: str) -> FunctionModel:
    def turn(request: ModelRequest) -> ModelResponse:
        done = sum(1 for m in request.messages if isinstance(m, ToolResultMessage))
        plan = PLANS[who]
        if done < len(plan):
            name, arguments = plan[done]
            return tool_call_response(name, arguments)
        return text_response(f"{who} done")

    return FunctionModel(turn, name=f"scripted:{who}")


def make_runtime(store_path: Path, workspace: Path, events: EventBus | None = None) -> Runtime:
    @tool(read_only=True)
    async def Wait() -> str:
        """Wait for the signal."""
        print("WAITING", flush=True)
        if os.environ.get("HOLD"):
            await asyncio.Event().wait()  # until the process is killed
        return "signalled"

    return Runtime(
        cwd=workspace,
        agents=[AgentDefinition(name="worker", description="Waits.", system_prompt="You wait.")],
        model=planner("main"),
        agent_models={"worker": planner("worker")},
        tools=[Wait],
        permission_mode="bypassPermissions",
        store=open_store(store_path),
        events=events,
    )


async def main() -> None:
    store_path, workspace, task_id = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    await make_runtime(store_path, workspace).run("work through the list", task_id=task_id)


if __name__ == "__main__":
    asyncio.run(main())
