"""MCP servers as tool sources: configs (``.mcp.json``, ``mcp_servers.yaml``), connections
(stdio, SSE, streamable HTTP) and the tools they provide.

Nothing here imports the ``mcp`` SDK until a server is started. The names below load from
their modules on first use: reading the configuration (``subagents.mcp.config``, which every
run and ``tasks list`` do) must not load the connections and asyncio.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from subagents._lazy import lazy_exports

if TYPE_CHECKING:
    from subagents.mcp.config import (
        MCPServerConfig,
        MCPServersConfig,
        SSEServerConfig,
        StdioServerConfig,
        StreamableHTTPServerConfig,
        load_mcp_servers,
    )
    from subagents.mcp.connection import MCPConnection, MCPManager

__all__ = [
    "MCPConnection",
    "MCPManager",
    "MCPServerConfig",
    "MCPServersConfig",
    "SSEServerConfig",
    "StdioServerConfig",
    "StreamableHTTPServerConfig",
    "load_mcp_servers",
]

_EXPORTS: dict[str, str] = {
    "MCPConnection": "subagents.mcp.connection",
    "MCPManager": "subagents.mcp.connection",
    "MCPServerConfig": "subagents.mcp.config",
    "MCPServersConfig": "subagents.mcp.config",
    "SSEServerConfig": "subagents.mcp.config",
    "StdioServerConfig": "subagents.mcp.config",
    "StreamableHTTPServerConfig": "subagents.mcp.config",
    "load_mcp_servers": "subagents.mcp.config",
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
