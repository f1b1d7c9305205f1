"""MCP servers nobody here wrote, from an unchanged Claude Code ``.mcp.json``:
``mcp-server-time`` (PyPI) over stdio, and the reference ``server-everything`` (npm, installed
into the venv by ``make test`` when Node is there) over stdio and streamable HTTP. A scripted
subagent restricted to one server's tools uses them and is refused everything else."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from paths import REPO
from subagents.mcp.config import StreamableHTTPServerConfig
from subagents.mcp.connection import MCPManager
from subagents.messages import ToolResultMessage
from subagents.runtime.runtime import Runtime
from subagents.testing import ScriptedModel, tool_call_response, tool_calls_response

pytestmark = (
    pytest.mark.slow
)  # real subprocesses, servers or many examples: not in `make test-fast`

EVERYTHING = REPO / ".venv" / "node" / "node_modules" / ".bin"
EVERYTHING_BIN = EVERYTHING / "mcp-server-everything"
needs_everything = pytest.mark.skipif(
    not EVERYTHING_BIN.exists(),
    reason="server-everything is not installed (make test installs it from npm when Node and "
    "npm are there)",
)


def _results(model: ScriptedModel, turn: int) -> list[ToolResultMessage]:
    return [m for m in model.requests[turn].messages if isinstance(m, ToolResultMessage)]


async def test_a_subagent_restricted_to_the_time_server_uses_it_and_nothing_else(
    tmp_path: Path,
) -> None:
    (tmp_path / ".mcp.json").write_text(  # Claude Code's shape, unchanged
        json.dumps(
            {
                "mcpServers": {
                    "time": {
                        "command": sys.executable,
                        "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"],
                    }
                }
            }
        )
    )
    agents = tmp_path / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "clock.md").write_text(
        "---\nname: clock\ndescription: Tells the time anywhere.\ntools: mcp__time__*\n---\n"
        "Answer with the time.\n"
    )
    child = ScriptedModel(
        [
            tool_calls_response(
                [
                    ("mcp__time__get_current_time", {"timezone": "Europe/Paris"}),
                    ("Bash", {"command": "id"}),
                    ("Read", {"file_path": ".mcp.json"}),
                    ("mcp__time__convert_time", {"source_timezone": "UTC"}),  # missing arguments
                ]
            ),
            "It is evening in Paris.",
        ]
    )
    task = {"description": "time", "prompt": "what time is it in Paris?", "subagent_type": "clock"}
    main = ScriptedModel([tool_call_response("Task", task), "Done"])
    runtime = Runtime(
        cwd=tmp_path, model=main, agent_models={"clock": child}, permission_mode="bypassPermissions"
    )
    try:
        result = await runtime.run("what time is it in Paris?")
    finally:
        await runtime.aclose()

    assert result.status == "completed", result.error
    offered = sorted(spec.name for spec in child.requests[0].tools)
    assert offered == ["mcp__time__convert_time", "mcp__time__get_current_time"]
    now, bash, read, convert = _results(child, 1)
    assert not now.is_error and json.loads(now.content)["timezone"] == "Europe/Paris"
    for refused in (bash, read):
        assert refused.is_error and "is not available to this agent" in refused.content
    assert convert.is_error  # the server's own complaint about the missing arguments
    assert "It is evening in Paris." in _results(main, 1)[0].content


@needs_everything
async def test_server_everything_over_stdio_for_a_restricted_subagent(tmp_path: Path) -> None:
    (tmp_path / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"everything": {"command": str(EVERYTHING_BIN)}}})
    )
    agents = tmp_path / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "tester.md").write_text(
        "---\nname: tester\ndescription: Tries the reference server.\n"
        "tools: mcp__everything__echo, mcp__everything__get-sum\n---\nTry it.\n"
    )
    child = ScriptedModel(
        [
            tool_calls_response(
                [
                    ("mcp__everything__echo", {"message": "hello"}),
                    ("mcp__everything__get-sum", {"a": 2, "b": 3}),
                    ("mcp__everything__get-env", {}),  # the server has it; the agent may not
                ]
            ),
            "tried",
        ]
    )
    task = {"description": "try", "prompt": "try the server", "subagent_type": "tester"}
    main = ScriptedModel([tool_call_response("Task", task), "Done"])
    runtime = Runtime(
        cwd=tmp_path,
        model=main,
        agent_models={"tester": child},
        permission_mode="bypassPermissions",
    )
    try:
        result = await runtime.run("try it")
    finally:
        await runtime.aclose()
    assert result.status == "completed", result.error
    echo, total, env = _results(child, 1)
    assert (echo.is_error, "hello" in echo.content) == (False, True)
    assert not total.is_error and "5" in total.content
    assert env.is_error and "is not available to this agent" in env.content


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture
def everything_over_http() -> Iterator[str]:
    port = _free_port()
    process = subprocess.Popen(
        [str(EVERYTHING_BIN), "streamableHttp"],
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    try:
        while True:  # ready when it accepts a connection
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("server-everything did not start") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


@needs_everything
async def test_server_everything_over_streamable_http(everything_over_http: str) -> None:
    config = StreamableHTTPServerConfig(name="everything", url=everything_over_http)
    async with MCPManager([config]) as manager:
        assert manager.failures == {}
        tools = {tool.name: tool for tool in manager.tools()}
        echoed = await tools["mcp__everything__echo"].function(message="over http")
    assert "over http" in echoed
