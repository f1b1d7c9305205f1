"""TaskBatch: one agent type over a list of items, a subagent each, a compact summary back and
every result in a file; items finished before a stop are not run again."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from subagents.definitions.model import AgentDefinition
from subagents.messages import ToolResultMessage, UserMessage
from subagents.models.base import ModelRequest, ModelResponse
from subagents.runtime import events as ev
from subagents.runtime.runtime import Runtime
from subagents.store.sqlite import open_store
from subagents.testing import FunctionModel, text_response, tool_call_response

WORKER = AgentDefinition(name="worker", description="Works on one item.", system_prompt="Work.")


def batch(items: list[Any], **extra: Any) -> ModelResponse:
    arguments = {
        "description": "label files",
        "subagent_type": "worker",
        "prompt": "Label {{ item }} (number {{ index }}).",
        "items": items,
        **extra,
    }
    return tool_call_response("TaskBatch", arguments)


def opening(request: ModelRequest) -> str:
    first = request.messages[0]
    assert isinstance(first, UserMessage)
    return first.content


def main_model(items: list[Any], seen: list[str], **extra: Any) -> FunctionModel:
    def turn(request: ModelRequest) -> ModelResponse:
        results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
        if not results:
            return batch(items, **extra)
        seen.append(results[0].content)
        return text_response("labelled")

    return FunctionModel(turn)


async def test_a_batch_runs_each_item_and_answers_with_a_summary_and_a_file(
    tmp_path: Path,
) -> None:
    running = peak = 0
    prompts: list[str] = []

    async def worker(request: ModelRequest) -> ModelResponse:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        prompts.append(opening(request))
        await asyncio.sleep(0)
        running -= 1
        word = opening(request).split()[1]
        if word == "bad.py":
            raise RuntimeError("provider exploded")
        return text_response(f"label of {word}")

    seen: list[str] = []
    items = ["a.py", "b.py", "bad.py", "c.py", "d.py"]
    runtime = Runtime(
        cwd=tmp_path,
        agents=[WORKER],
        model=main_model(items, seen, max_concurrent=2),
        agent_models={"worker": FunctionModel(worker)},
        permission_mode="bypassPermissions",
    )
    result = await runtime.run("label the files")

    assert result.status == "completed" and peak <= 2
    assert sorted(prompts) == sorted(f"Label {item} (number {i})." for i, item in enumerate(items))
    (answer,) = seen
    assert answer.startswith("4 of 5 items completed, 1 did not (2).")
    assert "[0] label of a.py" in answer and "[2] FAILED (failed)" in answer
    path = answer.split("error): ")[1].splitlines()[0]
    lines = [json.loads(line) for line in (tmp_path / path).read_text().splitlines()]
    assert [line["item"] for line in lines] == items  # the list's order
    assert lines[1]["result"] == "label of b.py" and lines[2]["status"] == "failed"
    assert "provider exploded" in lines[2]["error"]


async def test_a_batch_with_a_schema_gives_values(tmp_path: Path) -> None:
    def worker(request: ModelRequest) -> ModelResponse:
        word = opening(request).split()[1]
        return text_response(json.dumps({"file": word, "size": len(word)}))

    schema = {
        "type": "object",
        "properties": {"file": {"type": "string"}, "size": {"type": "integer"}},
        "required": ["file", "size"],
    }
    seen: list[str] = []
    runtime = Runtime(
        cwd=tmp_path,
        agents=[WORKER],
        model=main_model(["x.py", "yy.py"], seen, output_schema=schema),
        agent_models={"worker": FunctionModel(worker)},
        permission_mode="bypassPermissions",
    )
    await runtime.run("sizes")
    path = seen[0].split("error): ")[1].splitlines()[0]
    lines = [json.loads(line) for line in (tmp_path / path).read_text().splitlines()]
    assert [line["result"] for line in lines] == [
        {"file": "x.py", "size": 4},
        {"file": "yy.py", "size": 5},
    ]


async def test_items_finished_before_a_stop_are_not_run_again(tmp_path: Path) -> None:
    calls: dict[str, int] = {}
    hold = asyncio.Event()
    slow_started = asyncio.Event()
    finished: list[str] = []
    three_finished = asyncio.Event()

    def count(event: object) -> None:
        if isinstance(event, ev.SubagentFinished):  # its last step is in the store
            finished.append(event.agent_id)
            if len(finished) == 3:
                three_finished.set()

    async def worker(request: ModelRequest) -> ModelResponse:
        word = opening(request).split()[1]
        calls[word] = calls.get(word, 0) + 1
        if word == "slow.py" and not hold.is_set():
            slow_started.set()
            await asyncio.Event().wait()  # stopped here, the first time
        return text_response(f"label of {word}")

    items = ["a.py", "b.py", "c.py", "slow.py"]
    task_id = "1" * 8 + "-0000-4000-8000-" + "0" * 12
    with open_store(tmp_path / "state.db") as store:

        def build() -> Runtime:
            bus = ev.EventBus()
            bus.subscribe(count)
            return Runtime(
                cwd=tmp_path,
                agents=[WORKER],
                model=main_model(items, [], max_concurrent=4),
                agent_models={"worker": FunctionModel(worker)},
                permission_mode="bypassPermissions",
                store=store,
                events=bus,
            )

        run = asyncio.ensure_future(build().run("label", task_id=task_id))
        await slow_started.wait()
        await three_finished.wait()
        run.cancel()  # a stop mid-batch: three items done, one in flight
        await asyncio.gather(run, return_exceptions=True)
        hold.set()
        resumed = await build().resume(task_id)

    assert resumed.status == "completed", resumed.error
    assert calls == {"a.py": 1, "b.py": 1, "c.py": 1, "slow.py": 2}
