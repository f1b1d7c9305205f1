"""End to end: a Runtime reads .mcp.json, starts the server, and a subagent restricted to
``mcp__calc`` calls ``mcp__calc__add``; the answer reaches the parent."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import psutil
import pytest

from mcp_servers.harness import CALC_SERVER
from subagents.messages import ToolResultMessage
from subagents.runtime.runtime import Runtime
from subagents.testing import ScriptedModel, tool_call_response, tool_calls_response

CALCULATOR = """\
---
name: calculator
description: Does arithmetic with the calc MCP server.
tools: mcp__calc, mcp__nowhere__search
---
You add numbers with your tools.
"""


def results(model: ScriptedModel, turn: int) -> list[ToolResultMessage]:
    return [m for m in model.requests[turn].messages if isinstance(m, ToolResultMessage)]


def wait_until_gone(pid: int, seconds: float = 15.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.slow
async def test_subagent_calls_an_mcp_tool_and_the_parent_gets_the_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEST_PYTHON", sys.executable)
    monkeypatch.setenv("TEST_CALC_SERVER", str(CALC_SERVER))
    (tmp_path / ".mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "calc": {
                        "command": "${TEST_PYTHON}",
                        "args": ["${TEST_CALC_SERVER}", "stdio"],
                        "timeout_seconds": 20,
                        "trusted": True,  # its readOnlyHint counts: add runs unasked
                    }
                }
            }
        )
    )
    agents = tmp_path / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "calculator.md").write_text(CALCULATOR)

    child = ScriptedModel(
        [
            tool_calls_response([("mcp__calc__add", {"a": 2, "b": 3}), ("mcp__calc__pid", {})]),
            "The sum is 5.",
        ]
    )
    main = ScriptedModel(
        [
            tool_call_response(
                "Task",
                {"description": "add", "prompt": "add 2 and 3", "subagent_type": "calculator"},
            ),
            "Done: 5",
        ]
    )
    runtime = Runtime(
        cwd=tmp_path, model=main, agent_models={"calculator": child}, permission_mode="default"
    )
    try:
        result = await runtime.run("What is 2 + 3?")
        mcp = (
            runtime.toolbox.mcp
        )  # a local: runtime.toolbox.mcp itself is None again after aclose()
        assert mcp is not None and mcp.failures == {}
        record = runtime.inventory.get("calculator")
    finally:
        await runtime.aclose()

    assert result.status == "completed" and result.output == "Done: 5"
    # the child was offered exactly the calc server's tools
    offered = [spec.name for spec in child.requests[0].tools]
    assert offered and all(name.startswith("mcp__calc__") for name in offered)
    assert "mcp__calc__add" in offered and "Read" not in offered
    # read-only add ran without approval; its result reached the child, then the parent
    add_result, pid_result = results(child, 1)
    assert (add_result.content, add_result.is_error) == ("5", False)
    parent_sees = results(main, 1)[0]
    assert "The sum is 5." in parent_sees.content and not parent_sees.is_error
    # the agent file stays valid; the unconfigured server's tool is a warning
    assert record.status == "active"
    assert any("nowhere" in warning for warning in record.definition.warnings)
    # the main session inherits every tool, MCP tools included
    assert "mcp__calc__add" in [spec.name for spec in main.requests[0].tools]
    # aclose stopped the server process
    assert runtime.toolbox.mcp is None
    assert wait_until_gone(int(pid_result.content))


async def test_runtime_without_mcp_servers_starts_nothing(tmp_path: Path) -> None:
    runtime = Runtime(cwd=tmp_path, model=ScriptedModel(["hi"]), mcp_servers={})
    result = await runtime.run("hello")
    await runtime.aclose()
    assert result.output == "hi"
    assert runtime.toolbox.mcp is None
    assert runtime.toolbox.mcp_config().servers == {}


async def test_a_server_that_cannot_start_is_reported_as_an_event(tmp_path: Path) -> None:
    from subagents.runtime import events as ev
    from subagents.runtime.events import EventBus

    (tmp_path / ".mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "ghost": {"command": str(tmp_path / "missing-server")},
                    "unset": {"command": "${SUBAGENTS_TEST_UNSET_VARIABLE}"},
                }
            }
        )
    )
    seen: list[ev.Event] = []
    runtime = Runtime(
        cwd=tmp_path, model=ScriptedModel(["no tools needed"]), events=EventBus([seen.append])
    )
    try:
        result = await runtime.run("hello")
    finally:
        await runtime.aclose()
    assert result.output == "no tools needed"
    failed = {e.server: e.error for e in seen if isinstance(e, ev.MCPServerFailed)}
    assert set(failed) == {"ghost", "unset"}
    assert "SUBAGENTS_TEST_UNSET_VARIABLE" in failed["unset"]
