"""`subagents tasks usage`: what a run of three parallel subagents used, by agent and model,
read from a real store through Typer's runner; priced by `[prices]`, or said to be unknown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from subagents.cli.tasks import tasks_app
from subagents.definitions.model import AgentDefinition
from subagents.messages import ToolResultMessage, Usage
from subagents.models.base import ModelRequest, ModelResponse
from subagents.runtime.runtime import Runtime
from subagents.store.sqlite import open_store
from subagents.testing import FunctionModel, text_response, tool_call_response

WORKER = AgentDefinition(name="worker", description="Works.", system_prompt="You work.")


def main_turn(request: ModelRequest) -> ModelResponse:
    if not any(isinstance(m, ToolResultMessage) for m in request.messages):
        response = tool_call_response("Task", task("a"))
        response.tool_calls += tuple(
            tool_call_response("Task", task(part), id=f"call_{part}").tool_calls[0]
            for part in ("b", "c")
        )
    else:
        response = text_response("all three done")
    response.usage = Usage(input_tokens=1_000, output_tokens=100, requests=1)
    return response


def task(part: str) -> dict[str, str]:
    return {"description": f"part {part}", "prompt": f"do part {part}", "subagent_type": "worker"}


def worker_turn(request: ModelRequest) -> ModelResponse:
    response = text_response("done")
    response.usage = Usage(input_tokens=400, output_tokens=50, cache_read_tokens=300, requests=1)
    return response


@pytest.fixture
def fanned_out(tmp_path: Path) -> tuple[Path, str]:
    """A project, and the task of a run that fanned out to three workers."""
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    store_path = project / ".subagents" / "state.db"
    store_path.parent.mkdir()
    with open_store(store_path) as store:
        runtime = Runtime(
            cwd=project,
            agents=[WORKER],
            model=FunctionModel(main_turn, name="scripted:main"),
            agent_models={"worker": FunctionModel(worker_turn, name="scripted:worker")},
            store=store,
        )
        result = runtime.run_sync("split it in three")
    assert result.status == "completed" and result.task_id is not None
    assert len(result.subagents) == 3
    return project, result.task_id


def usage(project: Path, task_id: str, *args: str, columns: int | None = None) -> str:
    app = typer.Typer()
    app.add_typer(tasks_app, name="tasks")
    env = {"COLUMNS": str(columns)} if columns is not None else None
    argv = ["tasks", "usage", task_id[:8], "--cwd", str(project), *args]
    done = CliRunner().invoke(app, argv, env=env)
    assert done.exit_code == 0, done.output
    return done.stdout


def test_the_usage_of_a_fan_out_by_agent_and_model(fanned_out: tuple[Path, str]) -> None:
    project, task_id = fanned_out
    shown = json.loads(usage(project, task_id, "--json"))
    rows = {row["agent"]: row for row in shown["by_agent"]}
    assert rows["worker"]["sessions"] == 3 and rows["worker"]["requests"] == 3
    assert (rows["worker"]["input_tokens"], rows["worker"]["cache_read_tokens"]) == (1_200, 900)
    assert (rows["main"]["input_tokens"], rows["main"]["output_tokens"]) == (2_000, 200)
    assert shown["total"]["input_tokens"] == 3_200 and shown["total"]["output_tokens"] == 350
    assert shown["total"]["cost_known"] is False  # scripted models have no price
    assert shown["total"]["cache_hit_rate"] == pytest.approx(900 / 3_200)

    table = usage(project, task_id, columns=80)
    header = table.splitlines()[1]
    assert header.split() == ["Agent", "Model", "Sessions", "Calls", "Input", "Output", "Cache",
                              "read", "USD"]  # fmt: skip
    assert "no price for scripted:main, scripted:worker" in table
    assert "Cache hit rate: 28% of the input tokens" in table
    assert all(len(line) <= 80 for line in table.splitlines()), table


def test_prices_from_config_price_the_table(fanned_out: tuple[Path, str]) -> None:
    project, task_id = fanned_out
    (project / ".subagents" / "config.toml").write_text(
        '[prices."scripted:main"]\ninput_per_mtok = 1.0\noutput_per_mtok = 10.0\n\n'
        '[prices."scripted:worker"]\ninput_per_mtok = 2.0\noutput_per_mtok = 10.0\n'
        "cache_read_per_mtok = 0.2\n"
    )
    shown = json.loads(usage(project, task_id, "--json"))
    # main: 2,000 in x $1 + 200 out x $10 per million; workers: 300 plain x $2 + 900 read x
    # $0.2 + 150 out x $10 per million
    assert shown["total"]["cost_usd"] == pytest.approx(0.004 + 0.00228)
    assert shown["total"]["cost_known"] is True
