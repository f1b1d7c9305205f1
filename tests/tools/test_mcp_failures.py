"""Servers that fail: missing commands, instant exits, crashes mid-run, killed processes."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

from mcp_servers.harness import free_port, http_calc, stdio_calc
from subagents.errors import MCPServerError
from subagents.mcp.config import (
    MCPServerConfig,
    MCPServersConfig,
    StdioServerConfig,
    StreamableHTTPServerConfig,
)
from subagents.mcp.connection import MCPConnection, MCPManager
from subagents.messages import ToolCall
from subagents.tools.base import ToolContext, ToolRegistry
from subagents.tools.execution import ToolOutcome, execute_tool_call

pytestmark = (
    pytest.mark.slow
)  # real subprocesses, servers or many examples: not in `make test-fast`

EXITS_AT_ONCE = StdioServerConfig(
    name="broken",
    command=sys.executable,
    args=["-c", "import sys; sys.stderr.write('fatal: GITHUB_TOKEN is not set\\n'); sys.exit(2)"],
)
MISSING = StdioServerConfig(name="ghost", command="no-such-mcp-server-command-4711")


async def call(tools: ToolRegistry, name: str, **arguments: object) -> ToolOutcome:
    ctx = ToolContext(workspace=Path.cwd())
    return await execute_tool_call(ToolCall("call_1", name, dict(arguments)), tools, ctx)


async def test_dead_servers_are_left_out_and_the_others_work() -> None:
    warnings: list[str] = []
    unreachable = StreamableHTTPServerConfig(
        name="offline", url=f"http://127.0.0.1:{free_port()}/mcp?token=abc123"
    )
    servers: list[MCPServerConfig] = [MISSING, EXITS_AT_ONCE, unreachable, stdio_calc()]
    async with MCPManager(servers, on_warning=warnings.append) as manager:
        assert list(manager.connections) == ["calc"]
        assert sorted(manager.failures) == ["broken", "ghost", "offline"]
        assert {tool.name.split("__")[1] for tool in manager.tools()} == {"calc"}
        outcome = await call(ToolRegistry(manager.tools()), "mcp__calc__add", a=1, b=2)
        assert outcome.message.content == "3"

    ghost = str(manager.failures["ghost"])
    assert "'ghost'" in ghost and "no-such-mcp-server-command-4711" in ghost
    assert "not found" in ghost and "fix 'command'" in ghost
    broken = str(manager.failures["broken"])
    assert "'broken'" in broken and "fatal: GITHUB_TOKEN is not set" in broken
    assert "by hand" in broken
    offline = str(manager.failures["offline"])
    assert "'offline'" in offline and "could not be reached" in offline
    assert "abc123" not in offline  # the query string may hold a token
    assert len(warnings) == 3 and all("tools are left out" in w for w in warnings)


async def test_connect_raises_a_clear_error_for_one_server() -> None:
    connection = MCPConnection(EXITS_AT_ONCE)
    with pytest.raises(MCPServerError) as caught:
        await connection.connect()
    assert caught.value.server == "broken"
    assert "GITHUB_TOKEN" in str(caught.value)
    assert not connection.connected


async def test_startup_timeout_is_bounded() -> None:
    silent = StdioServerConfig(
        name="mute",
        command=sys.executable,
        args=["-c", "import time; time.sleep(60)"],
        startup_timeout_seconds=0.5,
    )
    connection = MCPConnection(silent)
    with pytest.raises(MCPServerError, match=r"did not finish starting within 0\.5 s") as caught:
        await connection.connect()
    assert "raise 'startup_timeout_seconds' for 'mute'" in str(caught.value)


async def test_unset_variable_server_is_a_failure_without_starting() -> None:
    config = MCPServersConfig(problems={"needs": ".mcp.json: uses ${TOKEN}, which is not set"})
    warnings: list[str] = []
    async with MCPManager(config, on_warning=warnings.append) as manager:
        assert manager.connections == {}
    assert "TOKEN" in str(manager.failures["needs"])
    assert "${VAR:-default}" in str(manager.failures["needs"])
    assert len(warnings) == 1


async def test_killed_server_is_restarted_and_a_read_only_call_retried() -> None:
    async with MCPManager([stdio_calc(trusted=True)]) as manager:
        tools = ToolRegistry(manager.tools())
        first_pid = int((await call(tools, "mcp__calc__pid")).message.content)
        os.kill(first_pid, signal.SIGKILL)
        outcome = await call(tools, "mcp__calc__add", a=20, b=22)
        assert (outcome.status, outcome.message.content) == ("ok", "42")
        second_pid = int((await call(tools, "mcp__calc__pid")).message.content)
        assert second_pid != first_pid
        assert manager.connections["calc"].reconnects == 1


async def test_an_untrusted_read_only_hint_does_not_make_a_call_repeatable() -> None:
    """The server says add is read-only and idempotent; nobody said to believe it, so a call
    whose connection broke is reported, not sent a second time."""
    async with MCPManager([stdio_calc()]) as manager:
        tools = ToolRegistry(manager.tools())
        assert not tools["mcp__calc__add"].read_only
        assert not tools["mcp__calc__add"].idempotent
        first_pid = int((await call(tools, "mcp__calc__pid")).message.content)
        os.kill(first_pid, signal.SIGKILL)
        outcome = await call(tools, "mcp__calc__add", a=20, b=22)
        assert outcome.status == "error"
        assert manager.connections["calc"].reconnects == 1


async def test_crash_during_a_call_restarts_but_does_not_repeat_the_call() -> None:
    async with MCPManager([stdio_calc()]) as manager:
        tools = ToolRegistry(manager.tools())
        crashed = await call(tools, "mcp__calc__crash")
        assert crashed.status == "error"
        assert "lost its connection during the call to crash" in crashed.message.content
        assert "whether the call took effect is unknown" in crashed.message.content
        assert manager.connections["calc"].reconnects == 1  # once, not a second crash
        after = await call(tools, "mcp__calc__add", a=1, b=1)
        assert after.message.content == "2"


async def test_http_server_gone_for_good_is_a_clear_tool_error() -> None:
    with http_calc("http") as (process, config):
        async with MCPManager([config]) as manager:
            tools = ToolRegistry(manager.tools())
            assert (await call(tools, "mcp__http__add", a=1, b=1)).message.content == "2"
            process.kill()
            process.wait(timeout=10)
            outcome = await call(tools, "mcp__http__add", a=1, b=1)
    assert outcome.status == "error"
    assert "MCP server 'http' could not be reached" in outcome.message.content
    assert "check that the server is running" in outcome.message.content
