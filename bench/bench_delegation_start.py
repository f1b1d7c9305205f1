"""Subagent selection and start: from the Task call to the subagent's first model request.

    python bench/bench_delegation_start.py [--iters N]

The parent's model makes one Task call; the subagent's model notes the moment it is first
asked and answers at once. Measured inside one process with a zero-latency model, over an
inventory holding the built-in agents plus 200 file-defined ones. Goal: under 1 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from subagents.messages import ToolResultMessage
from subagents.models.base import ModelRequest, ModelResponse
from subagents.runtime import events as ev
from subagents.runtime.events import EventBus
from subagents.runtime.runtime import Runtime
from subagents.testing import FunctionModel, text_response, tool_call_response

AGENT = """---
name: agent-{i}
description: Specialist number {i}; use it for topic {i}.
tools: Read, Grep, Glob
model: inherit
---
You are specialist {i}. Answer briefly.
"""


def project(root: Path, count: int) -> None:
    folder = root / ".claude" / "agents"
    folder.mkdir(parents=True)
    for i in range(count):
        (folder / f"agent-{i}.md").write_text(AGENT.format(i=i))


async def measure(root: Path, iters: int) -> list[float]:
    task_started: list[float] = []
    child_asked: list[float] = []

    def parent(request: ModelRequest) -> ModelResponse:
        if any(isinstance(m, ToolResultMessage) for m in request.messages):
            return text_response("done")
        arguments = {"description": "d", "prompt": "p", "subagent_type": "agent-150"}
        return tool_call_response("Task", arguments)

    def child(request: ModelRequest) -> ModelResponse:
        child_asked.append(time.perf_counter())
        return text_response("answer")

    def on_event(event: ev.Event) -> None:
        if isinstance(event, ev.ToolCallStarted) and event.call.name == "Task":
            task_started.append(time.perf_counter())

    runtime = Runtime(
        cwd=root,
        model=FunctionModel(parent, name="bench:parent", keep_requests=False),
        agent_models={"agent-150": FunctionModel(child, name="bench:child", keep_requests=False)},
        events=EventBus([on_event]),
    )
    for _ in range(iters + 20):
        result = await runtime.run("go")
        assert result.output == "done", result
    pairs = list(zip(task_started, child_asked, strict=True))[20:]
    return [(asked - started) * 1e6 for started, asked in pairs]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iters", type=int, default=500)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        project(root, 200)
        samples = sorted(asyncio.run(measure(root, args.iters)))
    median = statistics.median(samples)
    p90 = samples[int(0.9 * (len(samples) - 1))]
    print(
        f"subagent selection + start (Task call -> first model request), {len(samples)} runs: "
        f"median {median:.0f} µs, p90 {p90:.0f} µs (goal < 1000 µs)"
    )


if __name__ == "__main__":
    main()
