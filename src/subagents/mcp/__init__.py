"""MCP servers as tool sources: configs (``.mcp.json``, ``mcp_servers.yaml``), connections
(stdio, SSE, streamable HTTP) and the tools they provide.

Nothing here imports the ``mcp`` SDK until a server is started.
"""

from __future__ import annotations

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
