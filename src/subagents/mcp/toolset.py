"""MCP tools as our :class:`~subagents.tools.base.Tool`: naming, results and errors.

A tool ``add`` of server ``calc`` becomes ``mcp__calc__add`` (both parts cut down to
``[A-Za-z0-9_-]``, as Claude Code does, and to 64 characters in all, which providers require).
Arguments go to the server unvalidated on our side: the server knows its own schema, and its
complaint comes back to the model as a tool error like any other failure.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import TYPE_CHECKING, Any

from subagents.errors import MCPServerError, ToolError
from subagents.tools.base import Tool

if TYPE_CHECKING:
    from mcp.types import CallToolResult
    from mcp.types import Tool as MCPTool

    from subagents.mcp.connection import MCPConnection

__all__ = [
    "MAX_TOOL_NAME_LENGTH",
    "connection_tools",
    "mcp_tool",
    "mcp_tool_name",
    "render_call_result",
    "sanitise_name",
]

MAX_TOOL_NAME_LENGTH = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def sanitise_name(name: str) -> str:
    """``name`` with every character outside ``[A-Za-z0-9_-]`` replaced by ``_``."""
    return _UNSAFE.sub("_", name) or "_"


def mcp_tool_name(server: str, tool: str) -> str:
    """``mcp__{server}__{tool}``, sanitised; a name too long for providers is shortened and
    given a hash of the full name so that it stays unique."""
    name = f"mcp__{sanitise_name(server)}__{sanitise_name(tool)}"
    if len(name) <= MAX_TOOL_NAME_LENGTH:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[: MAX_TOOL_NAME_LENGTH - 9]}_{digest}"


def connection_tools(connection: MCPConnection) -> list[Tool]:
    """Our tools for every tool ``connection``'s server listed (a name clash keeps the first)."""
    tools: dict[str, Tool] = {}
    for listed in connection.tools:
        tool = mcp_tool(connection, listed)
        tools.setdefault(tool.name, tool)
    return list(tools.values())


def mcp_tool(connection: MCPConnection, listed: MCPTool) -> Tool:
    """One MCP tool as a :class:`Tool` that calls it through ``connection``."""
    server = connection.name
    remote_name = listed.name
    # Annotations are hints the server gives about itself: believed only when the person
    # marked the server (or this tool) trusted, else a tool counts as side-effecting.
    annotations = listed.annotations if connection.config.trusts(remote_name) else None
    read_only = bool(annotations is not None and annotations.read_only_hint)
    idempotent = bool(annotations is not None and annotations.idempotent_hint)
    name = mcp_tool_name(server, remote_name)

    async def call(**arguments: Any) -> str:
        from mcp.shared.exceptions import MCPError

        try:
            result = await connection.call_tool(
                remote_name, arguments, retry_if_lost=read_only or idempotent
            )
        except MCPServerError as exc:
            raise ToolError(str(exc)) from exc
        except MCPError as exc:
            raise ToolError(
                f"MCP server {server!r} refused the call to {name}: {exc.message}. "
                "Check the arguments against the tool's schema and call it again."
            ) from exc
        text = render_call_result(result)
        if result.is_error:
            raise ToolError(f"{name} reported an error: {text}")
        return text

    parameters = dict(listed.input_schema)
    parameters.setdefault("type", "object")
    description = listed.description or listed.title or ""
    if not description:
        description = f"Tool {remote_name!r} of MCP server {server!r}."
    return Tool(
        name=name,
        description=description,
        parameters=parameters,
        function=call,
        input_model=None,
        output_schema=listed.output_schema,
        timeout_seconds=connection.config.tool_timeout(remote_name),
        fallback_tools=connection.config.tool_fallbacks(remote_name),
        read_only=read_only,
        idempotent=idempotent,
        mcp_server=server,
    )


def render_call_result(result: CallToolResult) -> str:
    """A tool result as the text the model reads. Binary content (images, audio, blobs) is
    described, not inlined: the tool result channel is text."""
    parts = [_render_block(block) for block in result.content]
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, default=str))
    text = "\n".join(part for part in parts if part)
    return text or "(no output)"


def _render_block(block: Any) -> str:
    kind = getattr(block, "type", None)
    if kind == "text":
        return str(block.text)
    if kind in ("image", "audio"):
        size = _base64_size(block.data)
        return f"[{kind}: {block.mime_type}, {size} bytes; not shown in text]"
    if kind == "resource":
        resource = block.resource
        text = getattr(resource, "text", None)
        if text is not None:
            return f"[resource {resource.uri}]\n{text}"
        mime = resource.mime_type or "binary"
        size = _base64_size(getattr(resource, "blob", ""))
        return f"[resource {resource.uri}: {mime}, {size} bytes; not shown in text]"
    if kind == "resource_link":
        label = f" ({block.name})" if getattr(block, "name", None) else ""
        return f"[resource link: {block.uri}{label}]"
    return f"[{kind or 'unknown'} content; not shown in text]"


def _base64_size(data: str) -> int:
    stripped = data.rstrip("=")
    return len(stripped) * 3 // 4
