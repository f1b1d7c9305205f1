"""`subagents mcp list [--check]`: the MCP servers this project would start, and their tools."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from subagents.cli.common import CwdOption, JsonOption, make_console, user_errors

if TYPE_CHECKING:
    from subagents.mcp.config import MCPServerConfig, MCPServersConfig

__all__ = ["mcp_app"]

mcp_app = typer.Typer(
    help="MCP servers: the ones configured for this project, and whether they start.",
    no_args_is_help=True,
)


@mcp_app.command("list")
def list_servers(
    cwd: CwdOption = None,
    check: Annotated[
        bool, typer.Option("--check", help="Start every server and list its tools.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """List the MCP servers from .mcp.json and mcp_servers.yaml (project over user)."""
    from subagents.mcp.config import load_mcp_servers

    with user_errors():
        servers = load_mcp_servers(cwd)
        checked = asyncio.run(_check(servers, cwd)) if check else {}
    rows = [_row(name, server, servers, checked) for name, server in servers.servers.items()]
    rows += [
        {
            "name": name,
            "transport": "-",
            "target": "-",
            "enabled": True,
            "status": "error",
            "detail": problem,
            "source": str(servers.sources.get(name, "")),
            "tools": [],
        }
        for name, problem in servers.problems.items()
    ]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    _print(rows, check)
    if any(row["status"] == "error" for row in rows):
        raise typer.Exit(1)


async def _check(servers: MCPServersConfig, cwd: Path | None) -> dict[str, Any]:
    """Start the enabled servers; each name maps to its tool names or to its error."""
    from subagents.mcp.connection import MCPManager

    workspace = (cwd or Path.cwd()).resolve()
    manager = MCPManager(servers.enabled(), workspace=workspace)
    async with manager:
        found: dict[str, Any] = {
            name: [tool.name for tool in connection.tools]
            for name, connection in manager.connections.items()
        }
        found.update(manager.failures)
    return found


def _row(
    name: str, server: MCPServerConfig, servers: MCPServersConfig, checked: dict[str, Any]
) -> dict[str, Any]:
    target = getattr(server, "url", None) or " ".join(
        [getattr(server, "command", ""), *getattr(server, "args", [])]
    )
    outcome = checked.get(name)
    status, detail, tools = "configured", "", []
    if not server.enabled:
        status = "disabled"
    elif isinstance(outcome, list):
        status, tools = "ok", outcome
    elif outcome is not None:
        status, detail = "error", str(outcome)
    return {
        "name": name,
        "transport": server.type,
        "target": target.strip(),
        "enabled": server.enabled,
        "status": status,
        "detail": detail,
        "source": str(servers.sources.get(name, "")),
        "tools": tools,
    }


def _print(rows: list[dict[str, Any]], check: bool) -> None:
    from rich.markup import escape
    from rich.table import Table

    console = make_console()
    if not rows:
        console.print(
            "No MCP servers configured - add them to .mcp.json (Claude Code's format) or "
            ".subagents/mcp_servers.yaml in the project."
        )
        return
    table = Table(show_edge=False, pad_edge=False)
    for column in ("Name", "Transport", "Target", "Status", "Source"):
        table.add_column(column)
    if check:
        table.add_column("Tools")
    styles = {"ok": "green", "error": "red", "disabled": "dim", "configured": "cyan"}
    for row in rows:
        status = f"[{styles[row['status']]}]{row['status']}[/]"
        cells = [row["name"], row["transport"], row["target"], status, row["source"]]
        cells = [escape(str(cell)) if cell is not status else cell for cell in cells]
        if check:
            cells.append(escape(", ".join(row["tools"])))
        table.add_row(*cells)
    console.print(table)
    for row in rows:
        if row["detail"]:
            console.print(f"[red]{escape(row['name'])}:[/] {escape(row['detail'])}")
