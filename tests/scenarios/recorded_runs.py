"""Real scripted durable runs written to a real SQLite store, for the trace view, the trace
command and the OpenTelemetry export to read back: ``record_run`` (three levels deep, with
failures, a secret and a crash), ``record_paused_run`` and ``plant_leaky_record``."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from subagents.definitions.model import AgentDefinition
from subagents.errors import ToolError
from subagents.messages import ToolResultMessage, Usage
from subagents.models.base import ModelRequest, ModelResponse
from subagents.runtime.runtime import Runtime
from subagents.store.base import StepWrite
from subagents.store.records import TraceRecord
from subagents.store.sqlite import open_store
from subagents.testing import FunctionModel, text_response, tool_call_response
from subagents.tools.decorator import tool

SECRET_ENV = "DEMO_SERVICE_TOKEN"
SECRET = "tok-very-secret-0123456789"
PLANTED_KEY = "sk-ant-planted0123456789abcdefXYZ"
PLANTED_BEARER = "bearerplanted0123456789"
MODEL_CRASH = "RuntimeError: the model service fell over"

Plan = list[tuple[str, dict[str, Any]]]


def delegate(agent: str) -> tuple[str, dict[str, Any]]:
    return (
        "Task",
        {"description": f"to {agent}", "prompt": f"work, {agent}", "subagent_type": agent},
    )


PLANS: dict[str, Plan] = {
    "main": [("Read", {"file_path": "missing.txt"}), delegate("level1")],
    "level1": [("Fetch", {"url": "https://example.test/a"}), delegate("level2")],
    # level2 greps, fails a deploy, then its model crashes: a failed session at depth 2
    "level2": [("Grep", {"pattern": "hello"}), ("Deploy", {"version": "v2"})],
}
TOKENS = {"main": (110, 11), "level1": (120, 12), "level2": (130, 13)}
"""(input, output) tokens every model call of that agent reports."""

AGENTS = [
    AgentDefinition(name="level1", description="First level.", system_prompt="You are level1."),
    AgentDefinition(name="level2", description="Second level.", system_prompt="You are level2."),
]


def planner(name: str, plan: Plan, *, crash_at_end: bool = False) -> FunctionModel:
    """Follows ``plan`` one tool call per turn, then answers (or raises, for ``crash_at_end``)."""
    input_tokens, output_tokens = TOKENS[name]

    def turn(request: ModelRequest) -> ModelResponse:
        done = sum(1 for m in request.messages if isinstance(m, ToolResultMessage))
        if done < len(plan):
            response = tool_call_response(*plan[done])
        elif crash_at_end:
            raise RuntimeError("the model service fell over")
        else:
            response = text_response(f"{name}: finished")
        response.usage = Usage(input_tokens=input_tokens, output_tokens=output_tokens, requests=1)
        return response

    return FunctionModel(turn, name=f"scripted:{name}")


@tool
async def Fetch(url: str) -> str:
    """Fetch a URL (returns a body that contains a token from the environment)."""
    import os

    return f"body of {url}; token={os.environ.get(SECRET_ENV, '')}"


@tool
async def Deploy(version: str) -> str:
    """Deploy a version; always fails here."""
    raise ToolError(f"deploy of {version} failed: quota exceeded\nretry tomorrow")


@dataclass
class RecordedRun:
    store_path: Path
    task_id: str
    workspace: Path


def record_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> RecordedRun:
    """main -> level1 -> level2 with a failed Read, a secret in Fetch's result, a failed
    Deploy and a crashed level2 model; written to a real SQLite store."""
    monkeypatch.setenv(SECRET_ENV, SECRET)
    workspace = tmp_path / "work"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("hello\n")
    store_path = tmp_path / "state.db"

    async def run() -> str:
        with open_store(store_path) as store:
            runtime = Runtime(
                cwd=workspace,
                agents=AGENTS,
                model=planner("main", PLANS["main"]),
                agent_models={
                    "level1": planner("level1", PLANS["level1"]),
                    "level2": planner("level2", PLANS["level2"], crash_at_end=True),
                },
                tools=[Fetch, Deploy],
                permission_mode="bypassPermissions",
                store=store,
            )
            result = await runtime.run("do the work", description="traced run")
            assert result.status == "completed", result.error
            assert result.task_id is not None
            return result.task_id

    return RecordedRun(store_path, asyncio.run(run()), workspace)


def record_paused_run(tmp_path: Path) -> RecordedRun:
    """main delegates to level1, whose Write waits for a person: the Task call that started
    level1 has no trace record yet."""
    workspace = tmp_path / "work"
    workspace.mkdir()
    store_path = tmp_path / "state.db"
    plans: dict[str, Plan] = {
        "main": [delegate("level1")],
        "level1": [("Write", {"file_path": "out.txt", "content": "x"})],
    }

    async def run() -> str:
        with open_store(store_path) as store:
            runtime = Runtime(
                cwd=workspace,
                agents=AGENTS,
                model=planner("main", plans["main"]),
                agent_models={"level1": planner("level1", plans["level1"])},
                store=store,
                permission_mode="default",
                headless="pause",
            )
            result = await runtime.run("write it")
            assert result.status == "awaiting_human" and result.task_id is not None
            return result.task_id

    return RecordedRun(store_path, asyncio.run(run()), workspace)


def plant_leaky_record(run: RecordedRun) -> None:
    """A tool-call record holding secrets, as a writer that does not redact (an older
    subagents, another tool) could have stored it."""
    with open_store(run.store_path) as store:
        main = store.sessions(run.task_id)[0]
        leaky = TraceRecord(
            task_id=run.task_id,
            session_id=main.session_id,
            kind="tool_call",
            step_name="Bash",
            message="ok",
            agent="main",
            duration_ms=3.0,
            data={
                "server": "builtin",
                "tool": "Bash",
                "tool_call_id": "call_leaky",
                "arguments": {"command": f"curl -H 'Authorization: Bearer {PLANTED_BEARER}'"},
                "result": f"key is {PLANTED_KEY}",
                "error": None,
            },
        )
        store.commit(StepWrite(task_id=run.task_id, traces=[leaky]))
