"""The map node: a body (a tool or an agent) run for each item of a list, at most
``max_concurrent`` at a time, each item durable on its own; results in the list's order."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from subagents.definitions.model import AgentDefinition
from subagents.errors import ToolError
from subagents.models.base import ModelRequest, ModelResponse
from subagents.runtime import events as ev
from subagents.runtime.runtime import Runtime
from subagents.store.sqlite import open_store
from subagents.testing import FunctionModel, text_response
from subagents.tools.decorator import tool
from subagents.workflows.files import load_workflow_file
from subagents.workflows.graph import Workflow

SUBAGENTS = Path(sys.executable).with_name("subagents")


def map_workflow(**body: Any) -> Workflow:
    node = {"type": "map", "over": "items", "output": "results", "max_concurrent": 2, **body}
    return Workflow.model_validate(
        {"name": "each", "nodes": {"each": node}, "entry_point": "each", "edges": []}
    )


def shout_runtime(tmp_path: Path, seen: list[str], **kwargs: Any) -> Runtime:
    @tool(read_only=True, run_in_thread=False)
    def shout(word: str) -> str:
        """Shout a word."""
        seen.append(word)
        if word == "bad":
            raise ToolError("cannot shout that")
        return word.upper()

    return Runtime(cwd=tmp_path, tools=[shout], permission_mode="bypassPermissions", **kwargs)


async def test_a_tool_map_keeps_the_lists_order_and_counts_its_items(tmp_path: Path) -> None:
    seen: list[str] = []
    counts: list[tuple[int, int, int]] = []
    bus = ev.EventBus()
    bus.subscribe(
        lambda e: (
            counts.append((e.done, e.running, e.queued))
            if isinstance(e, ev.WorkflowMapProgress)
            else None
        )
    )
    runtime = shout_runtime(tmp_path, seen, events=bus)
    items = [f"w{n}" for n in range(7)]
    workflow = map_workflow(tool="shout", arguments={"word": "{{ item }}"})

    result = await runtime.run_workflow(workflow, {"items": items})

    assert result.status == "completed", result.error
    assert result.workflow is not None
    assert result.workflow.state.extra["results"] == [word.upper() for word in items]
    assert sorted(seen) == items
    assert counts[0] == (0, 0, 7) and counts[-1] == (7, 0, 0)
    assert max(running for _, running, _ in counts) <= 2  # max_concurrent


@pytest.mark.parametrize(
    ("on_item_error", "expected"),
    [
        ("collect", ["A", {"error": "shout failed: cannot shout that"}, "C"]),
        ("skip", ["A", "C"]),
    ],
)
async def test_a_failed_item_is_collected_or_skipped(
    tmp_path: Path, on_item_error: str, expected: list[Any]
) -> None:
    runtime = shout_runtime(tmp_path, [])
    workflow = map_workflow(
        tool="shout", arguments={"word": "{{ item }}"}, on_item_error=on_item_error
    )
    result = await runtime.run_workflow(workflow, {"items": ["a", "bad", "c"]})
    assert result.status == "completed", result.error
    assert result.workflow is not None
    results = result.workflow.state.extra["results"]
    assert [r if isinstance(r, str) else {"error": r["error"][:31]} for r in results] == expected


async def test_a_failed_item_fails_the_map_by_default_and_the_rest_never_start(
    tmp_path: Path,
) -> None:
    seen: list[str] = []
    runtime = shout_runtime(tmp_path, seen)
    workflow = map_workflow(tool="shout", arguments={"word": "{{ item }}"}, max_concurrent=1)
    result = await runtime.run_workflow(workflow, {"items": ["a", "bad", "c", "d"]})
    assert result.status == "failed"
    assert "item 1 failed" in (result.error or "") and "cannot shout that" in (result.error or "")
    assert seen == ["a", "bad"]


async def test_a_map_over_what_is_not_a_list_says_so(tmp_path: Path) -> None:
    runtime = shout_runtime(tmp_path, [])
    workflow = map_workflow(tool="shout", arguments={"word": "{{ item }}"})
    result = await runtime.run_workflow(workflow, {"items": "a, b"})
    assert result.status == "failed"
    assert "'items' holds str, not a list to map over" in (result.error or "")


def test_a_map_node_needs_one_body_and_a_valid_schema() -> None:
    with pytest.raises(ValueError, match="agent` \\(with `prompt`\\) or `tool`"):
        map_workflow()
    with pytest.raises(ValueError, match="outputSchema is not a valid JSON Schema"):
        map_workflow(tool="shout", outputSchema={"type": 5})


async def test_an_agent_map_holds_each_answer_to_the_schema(tmp_path: Path) -> None:
    def grader(request: ModelRequest) -> ModelResponse:
        asked = str(request.messages[0].content)
        word = asked.split("Grade ")[1].split(".")[0]
        return text_response(json.dumps({"word": word, "length": len(word)}))

    schema = {
        "type": "object",
        "properties": {"word": {"type": "string"}, "length": {"type": "integer"}},
        "required": ["word", "length"],
    }
    runtime = Runtime(
        cwd=tmp_path,
        agents=[AgentDefinition(name="grader", description="Grades.", system_prompt="Grade.")],
        agent_models={"grader": FunctionModel(grader)},
        permission_mode="bypassPermissions",
    )
    workflow = map_workflow(agent="grader", prompt="Grade {{ item }}.", outputSchema=schema)
    result = await runtime.run_workflow(workflow, {"items": ["ox", "heron", "a"]})
    assert result.status == "completed", result.error
    assert result.workflow is not None
    assert result.workflow.state.extra["results"] == [
        {"word": "ox", "length": 2},
        {"word": "heron", "length": 5},
        {"word": "a", "length": 1},
    ]


MAP_FILE = """\
name: effects
nodes:
  each:
    type: map
    over: items
    tool: Bash
    arguments:
      command: "echo {{ item }} >> effects.txt; sleep 0.2"
    max_concurrent: 4
    output: results
entry_point: each
edges: []
"""


@pytest.mark.slow
def test_a_40_item_map_killed_mid_way_resumes_without_redoing_finished_items(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    (project / ".subagents" / "workflows").mkdir(parents=True)
    (project / ".git").mkdir()
    (project / ".subagents" / "config.toml").write_text(
        '[subagents]\ninterrupted_tool_calls = "rerun"\n'
    )
    (project / ".subagents" / "workflows" / "effects.yaml").write_text(MAP_FILE)
    assert load_workflow_file(project / ".subagents" / "workflows" / "effects.yaml")
    items = [f"item-{n:02d}" for n in range(40)]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "SUBAGENTS_"))}
    env["SUBAGENTS_HOME"] = str(tmp_path / "home")
    run = [str(SUBAGENTS), "workflow", "run", "effects", "--set", f"items={json.dumps(items)}"]
    process = subprocess.Popen(
        [*run, "--yes"], cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    effects = project / "effects.txt"
    pause = threading.Event()  # never set: paces the look at the file
    for _ in range(3000):
        if effects.exists() and len(effects.read_text().split()) >= 8:
            break
        pause.wait(0.01)
    os.kill(process.pid, signal.SIGKILL)
    process.communicate(timeout=30)
    assert process.returncode == -signal.SIGKILL  # killed mid-way, not after the end
    before = effects.read_text().split()
    assert len(before) < 40
    with open_store(project / ".subagents" / "state.db") as store:
        (task,) = store.list_tasks(limit=None)
        finished = [
            entry.arguments["command"].split()[1]
            for entry in store.ledger(task.id)
            if entry.status == "completed"
        ]

    (mid_way,) = show(project, env, task.id)["maps"]  # where the items stand after the kill
    assert mid_way["total"] == 40 and mid_way["done"] == len(finished)
    assert mid_way["queued"] + mid_way["running"] == 40 - len(finished) > 0

    resumed = subprocess.run(
        [str(SUBAGENTS), "resume", task.id, "--json"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert resumed.returncode == 0, resumed.stdout[:1500]
    after = effects.read_text().split()
    assert sorted(set(after)) == items  # every item landed
    assert finished and all(after.count(item) == 1 for item in finished)  # never again
    assert len(after) - 40 <= 4  # only those in flight (max_concurrent) may have run twice
    with open_store(project / ".subagents" / "state.db") as store:
        checkpoint = store.latest_checkpoint(task.id)
    assert checkpoint is not None
    results = checkpoint.state["workflow"]["main"]["state"]["results"]
    assert len(results) == 40 and all(isinstance(value, str) for value in results)
    (ended,) = show(project, env, task.id)["maps"]
    assert ended["done"] == 40 and [item["index"] for item in ended["items"]] == list(range(40))


def show(project: Path, env: dict[str, str], task_id: str) -> dict[str, Any]:
    shown = subprocess.run(
        [str(SUBAGENTS), "tasks", "show", task_id, "--json"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    value: dict[str, Any] = json.loads(shown.stdout)
    return value


async def test_the_runs_budget_covers_the_whole_map(tmp_path: Path) -> None:
    from subagents.messages import Usage

    asked: list[str] = []

    def worker(request: ModelRequest) -> ModelResponse:
        asked.append(str(request.messages[0].content))
        return ModelResponse(text="done", usage=Usage(input_tokens=90, output_tokens=10))

    with open_store(tmp_path / "state.db") as store:

        def build(budget: int) -> Runtime:
            return Runtime(
                cwd=tmp_path,
                agents=[AgentDefinition(name="w", description="Works.", system_prompt="Work.")],
                agent_models={"w": FunctionModel(worker)},
                permission_mode="bypassPermissions",
                store=store,
                max_budget_tokens=budget,
            )

        workflow = map_workflow(agent="w", prompt="item {{ item }}", max_concurrent=1)
        paused = await build(250).run_workflow(workflow, {"items": list(range(6))})
        # 100 tokens an item: the third item's call is the last the budget has room for
        assert paused.status == "awaiting_human" and paused.question is not None
        assert paused.question.kind == "budget" and len(asked) == 3
        assert paused.task_id is not None
        done = await build(1000).resume(paused.task_id)  # with a larger budget

    assert done.status == "completed", done.error
    assert sorted(asked) == sorted(f"item {n}" for n in range(6))  # none twice
