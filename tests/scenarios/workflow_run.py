"""A workflow of `examples/workflow-project` run or resumed in its own process.

    python workflow_run.py STORE PROJECT run WORKFLOW INPUT
    python workflow_run.py STORE PROJECT resume TASK [approve | reject REASON]

The agents run on the scripted models of `workflow_agents.py`. Prints one JSON line: task id,
status, error, the question's wait-point key, and the nodes of the path taken.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scenarios.workflow_agents import models
from subagents.runtime.pause import HumanDecision
from subagents.runtime.result import RunResult
from subagents.runtime.runtime import Runtime
from subagents.store.sqlite import open_store
from subagents.workflows.files import load_workflow_file
from subagents.workflows.graph import Workflow


def load(project: Path, name: str) -> Workflow:
    path = project / ".subagents" / "workflows" / f"{name}.yaml"
    return load_workflow_file(path)


async def main(store_path: Path, project: Path, action: str, args: list[str]) -> RunResult:
    with open_store(store_path) as store:
        runtime = Runtime(
            cwd=project,
            agent_models=models(),
            store=store,
            permission_mode="bypassPermissions",
        )
        try:
            if action == "run":
                return await runtime.run_workflow(load(project, args[0]), args[1])
            decision = None
            if len(args) > 1:
                decision = HumanDecision(
                    "approve" if args[1] == "approve" else "reject",
                    reason=args[2] if len(args) > 2 else None,
                )
            return await runtime.resume(args[0], decision)
        finally:
            await runtime.aclose()


if __name__ == "__main__":
    store_arg, project_arg, action_arg, *rest = sys.argv[1:]
    result = asyncio.run(main(Path(store_arg), Path(project_arg), action_arg, rest))
    outcome = result.workflow
    print(
        json.dumps(
            {
                "task_id": result.task_id,
                "status": result.status,
                "error": result.error,
                "output": result.output,
                "question": result.question.tool_call_id if result.question else None,
                "path": [visit.node for visit in outcome.path] if outcome else [],
            }
        )
    )
