"""MCP tools over stdio, streamable HTTP and SSE: listing, naming, calls, errors, timeouts.

One manager (with the three servers) is shared by the whole module: starting servers and
importing the SDK are the slow part.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio

from mcp_servers.harness import http_calc, stdio_calc
from subagents.mcp.config import MCPServerConfig
from subagents.mcp.connection import MCPManager
from subagents.messages import ToolCall
from subagents.tools.base import Tool, ToolContext, ToolRegistry
from subagents.tools.execution import ToolOutcome, execute_tool_call

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="module")]

TRANSPORTS = ["stdio", "http", "sse"]


@pytest.fixture(scope="module")
def configs() -> Iterator[list[MCPServerConfig]]:
    with http_calc("http") as (_, http), http_calc("sse") as (_, sse):
        yield [stdio_calc("stdio", timeout_seconds=7, trusted=True), http, sse]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def manager(configs: list[MCPServerConfig]) -> AsyncIterator[MCPManager]:
    async with MCPManager(configs) as started:
        yield started


async def call(registry: ToolRegistry, name: str, **arguments: object) -> ToolOutcome:
    ctx = ToolContext(workspace=Path.cwd())
    return await execute_tool_call(ToolCall("call_1", name, dict(arguments)), registry, ctx)


def registry(manager: MCPManager) -> ToolRegistry:
    return ToolRegistry(manager.tools())


@pytest.mark.slow
async def test_every_server_started(manager: MCPManager) -> None:
    assert manager.failures == {}
    assert sorted(manager.connections) == ["http", "sse", "stdio"]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_tools_are_listed_with_our_names(manager: MCPManager, transport: str) -> None:
    names = [tool.name for tool in manager.tools() if tool.name.startswith(f"mcp__{transport}__")]
    assert names == [
        f"mcp__{transport}__{tool}"
        for tool in (
            "add",
            "fail",
            "slow",
            "stuck_read",
            "crash",
            "pid",
            "env",
            "picture",
            "shout_loud",
        )
    ]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_add_is_called_over_each_transport(manager: MCPManager, transport: str) -> None:
    outcome = await call(registry(manager), f"mcp__{transport}__add", a=2, b=3)
    assert (outcome.status, outcome.message.content) == ("ok", "5")


async def test_tool_metadata_comes_from_the_server(manager: MCPManager) -> None:
    tools = {tool.name: tool for tool in manager.tools()}
    add, fail = tools["mcp__stdio__add"], tools["mcp__stdio__fail"]
    assert add.description == "Add two numbers."
    assert add.parameters["type"] == "object"
    assert add.parameters["required"] == ["a", "b"]
    assert add.input_model is None
    assert (add.read_only, add.idempotent, add.requires_approval) == (True, True, False)
    assert (fail.read_only, fail.idempotent, fail.requires_approval) == (False, False, True)
    assert add.timeout_seconds == 7  # the server's timeout_seconds
    assert tools["mcp__http__add"].timeout_seconds == 300  # the default


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_is_error_reaches_the_model_as_a_tool_error(
    manager: MCPManager, transport: str
) -> None:
    outcome = await call(registry(manager), f"mcp__{transport}__fail", message="disk is full")
    assert outcome.status == "error"
    assert outcome.message.is_error
    assert "disk is full" in outcome.message.content
    assert f"mcp__{transport}__fail reported an error" in outcome.message.content


async def test_bad_arguments_come_back_as_a_tool_error(manager: MCPManager) -> None:
    outcome = await call(registry(manager), "mcp__stdio__add", a="three")
    assert outcome.status == "error"
    assert "b" in outcome.message.content and "a" in outcome.message.content
    not_object = ToolCall("c", "mcp__stdio__add", ["a", "b"])  # type: ignore[arg-type]
    outcome = await execute_tool_call(not_object, registry(manager), ToolContext(Path.cwd()))
    assert outcome.status == "error" and "JSON object" in outcome.message.content


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_timeout_is_a_timeout_outcome_and_the_server_stays_usable(
    manager: MCPManager, transport: str
) -> None:
    slow = registry(manager)[f"mcp__{transport}__slow"]
    impatient = dataclasses.replace(slow, timeout_seconds=0.3, _spec=None)
    tools = ToolRegistry([impatient, registry(manager)[f"mcp__{transport}__add"]])
    outcome = await call(tools, impatient.name, seconds=30)
    assert outcome.status == "timeout"
    assert "timed out after 0.3 s" in outcome.message.content
    again = await call(tools, f"mcp__{transport}__add", a=1, b=1)
    assert (again.status, again.message.content) == ("ok", "2")


async def test_images_and_resources_become_text(manager: MCPManager) -> None:
    tools = registry(manager)
    picture = await call(tools, "mcp__http__picture")
    assert picture.message.content == "[image: image/png, 8 bytes; not shown in text]"
    shout = await call(tools, "mcp__sse__shout_loud", text="hey")
    assert shout.message.content == "HEY\n[resource memo://shout]\nmemo"


async def test_fallback_tool_answers_when_an_mcp_tool_fails(manager: MCPManager) -> None:
    def backup(message: str) -> str:
        return f"backup handled {message}"

    fail = dataclasses.replace(registry(manager)["mcp__http__fail"], fallback_tools=("backup",))
    spare = Tool("backup", "Backup.", {"type": "object"}, backup)
    outcome = await call(ToolRegistry([fail, spare]), "mcp__http__fail", message="x")
    assert outcome.status == "ok"
    assert outcome.message.content.endswith("backup handled x")
    assert "answered by fallback tool backup" in outcome.message.content
