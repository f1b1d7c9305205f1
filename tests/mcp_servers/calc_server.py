"""A small real MCP server for the tests.

Run as ``python calc_server.py stdio``, ``python calc_server.py http PORT`` (streamable HTTP at
``/mcp``) or ``python calc_server.py sse PORT`` (SSE at ``/sse``).
"""

from __future__ import annotations

import asyncio
import os
import sys

from mcp.server.mcpserver import Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import EmbeddedResource, TextContent, TextResourceContents, ToolAnnotations

server = MCPServer("calc")


@server.tool(annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True))
def add(a: float, b: float) -> str:
    """Add two numbers."""
    total = a + b
    return str(int(total)) if total == int(total) else str(total)


@server.tool()
def fail(message: str) -> str:
    """Always fails with the given message."""
    raise ToolError(message)


@server.tool()
async def slow(seconds: float) -> str:
    """Sleep, then answer."""
    await asyncio.sleep(seconds)
    return f"slept {seconds:g} s"


@server.tool()
async def stuck_read(file_path: str) -> str:
    """Read a file; it never answers (a server that hangs)."""
    await asyncio.Event().wait()
    return file_path


@server.tool()
def crash() -> str:
    """End the server process at once."""
    os._exit(3)


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def pid() -> str:
    """The server's process id."""
    return str(os.getpid())


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def env(name: str) -> str:
    """The value of an environment variable of the server process."""
    return os.environ.get(name, "(unset)")


@server.tool()
def picture() -> Image:
    """A tiny PNG."""
    return Image(data=b"\x89PNG\r\n\x1a\n", format="png")


@server.tool(name="shout.loud")
def shout_loud(text: str) -> list[TextContent | EmbeddedResource]:
    """Upper-case text, plus an embedded resource."""
    return [
        TextContent(type="text", text=text.upper()),
        EmbeddedResource(
            type="resource",
            resource=TextResourceContents(uri="memo://shout", mime_type="text/plain", text="memo"),
        ),
    ]


def main() -> None:
    transport = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if transport == "stdio":
        server.run("stdio")
    elif transport == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    elif transport == "sse":
        server.run("sse", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        raise SystemExit(f"unknown transport {transport!r}")


if __name__ == "__main__":
    main()
