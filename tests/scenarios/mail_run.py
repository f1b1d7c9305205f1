"""A parent messages its background subagent, for the crash test of SendMessage (run as a
subprocess).

    python mail_run.py STORE WORKSPACE run
    python mail_run.py STORE WORKSPACE resume TASK

``run``: main starts a background worker, whose first model call never returns, sends it a
message with SendMessage, prints ``{"sent": true}`` and waits for the worker: the test kills
the process there, between the send and the delivery. ``resume``: the worker's first call
returns, and the run goes on; prints the outcome and how often the worker's requests held
the message, as one JSON line.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from subagents.definitions.model import AgentDefinition
from subagents.messages import ToolResultMessage, UserMessage
from subagents.models.base import ModelRequest, ModelResponse
from subagents.runtime.runtime import Runtime
from subagents.store.sqlite import open_store
from subagents.testing import FunctionModel, text_response, tool_call_response

MESSAGE = "also count the hidden files"


def main_model(resuming: bool) -> FunctionModel:
    def turn(request: ModelRequest) -> ModelResponse:
        results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
        last = request.messages[-1]
        if isinstance(last, UserMessage) and "task-notification" in last.content:
            return text_response("final: " + last.content)
        if not results:
            arguments = {
                "description": "count files",
                "prompt": "count the files",
                "subagent_type": "worker",
                "run_in_background": True,
            }
            return tool_call_response("Task", arguments)
        if len(results) == 1:
            return tool_call_response("SendMessage", {"to": "worker", "message": MESSAGE})
        if not resuming:
            print(json.dumps({"sent": True}), flush=True)
        return text_response("waiting for the worker")

    return FunctionModel(turn, name="scripted:main")


def worker_model(resuming: bool, seen: list[int]) -> FunctionModel:
    async def turn(request: ModelRequest) -> ModelResponse:
        holding = [
            m for m in request.messages if isinstance(m, UserMessage) and MESSAGE in m.content
        ]
        seen.append(len(holding))
        if not any(isinstance(m, ToolResultMessage) for m in request.messages):
            if not resuming:
                await asyncio.Event().wait()  # busy when the message comes, and killed there
            return tool_call_response("LS", {})
        return text_response("saw the message" if holding else "saw no message")

    return FunctionModel(turn, name="scripted:worker")


async def main() -> None:
    store_path, workspace, mode = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    resuming = mode == "resume"
    seen: list[int] = []
    with open_store(store_path) as store:
        runtime = Runtime(
            cwd=workspace,
            model=main_model(resuming),
            agents=[AgentDefinition(name="worker", description="Counts.", system_prompt="Count.")],
            agent_models={"worker": worker_model(resuming, seen)},
            permission_mode="bypassPermissions",
            store=store,
        )
        if resuming:
            result = await runtime.resume(sys.argv[4])
        else:
            task_id = "0" * 8 + "-0000-4000-8000-" + "0" * 12
            print(json.dumps({"started": task_id}), flush=True)
            result = await runtime.run("count the files, with a worker", task_id=task_id)
        print(json.dumps({"status": result.status, "output": result.output, "seen": seen}))


if __name__ == "__main__":
    asyncio.run(main())
