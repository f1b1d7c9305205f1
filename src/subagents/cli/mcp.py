"""`subagents mcp list [--check] | call SERVER TOOL [JSON] | trust [NAME...] | untrust NAME...`:
the MCP servers this project would start, their tools (tried by hand), and the person's
agreement to the project's own servers."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from subagents.cli.answer import markup_safe, write_answer
from subagents.cli.common import make_console, user_errors
from subagents.cli.options import CwdOption, JsonOption

if TYPE_CHECKING:
    from subagents.mcp.config import MCPServerConfig, MCPServersConfig

__all__ = ["ask_project_servers", "mcp_app", "project_server_policy"]

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
    for warning in servers.warnings:
        typer.echo(f"warning: {warning}", err=True)
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
    else:
        _print(rows, check)
    if any(row["status"] == "error" for row in rows):
        raise typer.Exit(1)


async def _check(servers: MCPServersConfig, cwd: Path | None) -> dict[str, Any]:
    """Start the enabled servers; each name maps to its tool names or to its error."""
    from subagents.mcp.connection import MCPManager

    workspace = (cwd or Path.cwd()).resolve()
    # What fails is in the table: the manager need not say it too.
    manager = MCPManager(servers.enabled(), workspace=workspace, on_warning=lambda _: None)
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
    from rich.table import Table

    console = make_console()

    def quoted(text: str) -> str:  # a config file's or a server's words
        return markup_safe(text, console)

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
        cells = [quoted(str(cell)) if cell is not status else cell for cell in cells]
        if check:
            cells.append(quoted(", ".join(row["tools"])))
        table.add_row(*cells)
    console.print(table)
    for row in rows:
        if row["detail"]:
            console.print(f"[red]{quoted(row['name'])}:[/] {quoted(row['detail'])}")


@mcp_app.command("call")
def call_tool(
    server: Annotated[str, typer.Argument(help="The server, by its name in the config.")],
    tool: Annotated[str, typer.Argument(help="The tool: its own name, or mcp__SERVER__TOOL.")],
    arguments: Annotated[
        str, typer.Argument(help="The arguments as one JSON object; - reads them from stdin.")
    ] = "{}",
    cwd: CwdOption = None,
    as_json: JsonOption = False,
) -> None:
    """Call one tool of one MCP server by hand, as a model would, and print its result.

    Exit 0 when the tool answered, 1 when it reported an error, failed or timed out (its
    configured timeout), 2 for a server, tool or arguments that are not right."""
    from subagents.mcp.config import load_mcp_servers

    with user_errors():
        servers = load_mcp_servers(cwd)
        config = _server_named(server, servers)
        values = _arguments(arguments)
        workspace = (cwd or Path.cwd()).resolve()
        answer, failed = asyncio.run(_call(config, tool, values, workspace))
    if as_json:
        typer.echo(json.dumps({"server": server, "tool": tool, "ok": not failed, "text": answer}))
    elif failed:  # a server's text: exact in a pipe, unable to drive a terminal
        write_answer(f"error: {answer}", sys.stderr)
    else:
        write_answer(answer)
    if failed:
        raise typer.Exit(1)


def _server_named(name: str, servers: MCPServersConfig) -> MCPServerConfig:
    from subagents.errors import SubagentsError

    if name in servers.problems:
        raise SubagentsError(f"MCP server {name!r} cannot start: {servers.problems[name]}.")
    config = servers.servers.get(name)
    if config is None:
        known = ", ".join(sorted(servers.servers)) or "none"
        raise SubagentsError(
            f"No MCP server named {name!r} is configured here.",
            hint=f"the servers: {known} ('subagents mcp list' shows where they come from)",
        )
    return config


def _arguments(text: str) -> dict[str, Any]:
    import sys

    from subagents.errors import SubagentsError

    if text == "-":
        text = sys.stdin.read()
    try:
        value = json.loads(text or "{}")
    except json.JSONDecodeError as error:
        raise SubagentsError(
            f"The arguments are not valid JSON ({error.msg} at column {error.colno}).",
            hint="""give one JSON object in single quotes, e.g. '{"a": 2, "b": 3}'""",
        ) from None
    if not isinstance(value, dict):
        raise SubagentsError(
            f"The arguments must be a JSON object, not {type(value).__name__}.",
            hint="""name each argument, e.g. '{"path": "README.md"}'""",
        )
    return value


async def _call(
    config: MCPServerConfig, tool: str, arguments: dict[str, Any], workspace: Path
) -> tuple[str, bool]:
    """The tool's answer, and whether it failed; a tool that is not there is a usage error."""
    from subagents.errors import SubagentsError, ToolError
    from subagents.mcp.connection import MCPConnection
    from subagents.mcp.toolset import mcp_tool

    connection = MCPConnection(config, workspace=workspace)
    await connection.connect()
    try:
        tools = {listed.name: mcp_tool(connection, listed) for listed in connection.tools}
        chosen = tools.get(tool) or next((t for t in tools.values() if t.name == tool), None)
        if chosen is None:
            raise SubagentsError(
                f"MCP server {config.name!r} has no tool {tool!r}.",
                hint=f"its tools: {', '.join(tools) or 'none'}",
            )
        try:
            async with asyncio.timeout(chosen.timeout_seconds):
                return str(await chosen.function(**arguments)), False
        except TimeoutError:
            return f"{chosen.name} timed out after {chosen.timeout_seconds:g} s.", True
        except ToolError as error:
            return error.message, True
    finally:
        await connection.aclose()


@mcp_app.command("trust")
def trust_servers(
    names: Annotated[
        list[str] | None, typer.Argument(help="Servers to approve (default: list them).")
    ] = None,
    all_servers: Annotated[
        bool, typer.Option("--all", help="Approve every server the project configures.")
    ] = False,
    cwd: CwdOption = None,
) -> None:
    """Approve MCP servers of this project's .mcp.json / mcp_servers.yaml, so that runs start
    them; without NAME, list them with their status. An approval holds until what the server
    runs changes."""
    from subagents.config import resolve_home
    from subagents.mcp.config import load_mcp_servers
    from subagents.mcp.consent import ConsentStore, project_servers

    with user_errors():
        home = resolve_home()
        servers = project_servers(load_mcp_servers(cwd, home=home), home=home)
        for inline in _inline_configs(cwd):
            servers += project_servers(inline, home=home)
        store = ConsentStore(home)
        if not names and not all_servers:
            if not servers:
                typer.echo("This project configures no MCP servers of its own.")
            answers = {True: "approved", False: "declined", None: "not asked yet"}
            for server in servers:
                typer.echo(f"{server.name}: {answers[store.decision(server)]} - {server.summary}")
            return
        by_name = {server.name: server for server in servers}
        unknown = [name for name in names or [] if name not in by_name]
        if unknown:
            from subagents.errors import SubagentsError

            raise SubagentsError(
                f"No project MCP server named {', '.join(map(repr, unknown))}.",
                hint=f"the project's servers: {', '.join(by_name) or 'none'} "
                "('subagents mcp trust' lists them)",
            )
        chosen = list(by_name.values()) if all_servers else [by_name[n] for n in names or []]
        store.record(chosen, allowed=True)
        for server in chosen:
            typer.echo(f"approved {server.name} ({server.summary})")


@mcp_app.command("untrust")
def untrust_servers(
    names: Annotated[list[str], typer.Argument(help="Servers whose approval to forget.")],
    cwd: CwdOption = None,
) -> None:
    """Forget the approval (or refusal) of project MCP servers: the next run asks again."""
    from subagents.config import resolve_home
    from subagents.mcp.config import load_mcp_servers
    from subagents.mcp.consent import ConsentStore, project_servers

    with user_errors():
        home = resolve_home()
        servers = project_servers(load_mcp_servers(cwd, home=home), home=home)
        projects = {server.project for server in servers if server.name in names}
        forgotten: list[str] = []
        for project in projects or {(cwd or Path.cwd()).resolve()}:
            forgotten += ConsentStore(home).forget(project, names)
    for name in names:
        typer.echo(f"{name}: {'forgotten' if name in forgotten else 'no answer was kept'}")


def _inline_configs(cwd: Path | None) -> list[MCPServersConfig]:
    """The servers each agent file defines inline, one config per agent."""
    from subagents.inventory import Inventory
    from subagents.mcp.config import inline_servers

    agents = Inventory.discover(cwd).active()
    return list(inline_servers(record.definition for record in agents).values())


def project_server_policy(*, interactive: bool, trust_all: bool = False) -> Any:
    """The policy the CLI's runs use: remembered answers; at a terminal, ask the person;
    ``trust_all`` (``--trust-project-mcp``) or SUBAGENTS_TRUST_PROJECT_MCP=1 for CI."""
    from subagents.config import resolve_home
    from subagents.mcp.consent import ProjectServerPolicy

    return ProjectServerPolicy.from_environment(
        resolve_home(), ask=ask_project_servers if interactive else None, trust_all=trust_all
    )


def ask_project_servers(servers: Any) -> set[str]:
    """Ask the person at the terminal whether the project's new servers may start."""
    from rich.console import Console

    from subagents.cli.answer import quote_markup

    err = Console(stderr=True)
    err.print("[yellow]This project configures MCP servers that have not been approved:[/]")
    for server in servers:
        err.print(
            f"  {quote_markup(server.name)}: {quote_markup(server.summary)}  "
            f"[dim]({server.source})[/]"
        )
    try:
        answer = input("Start them? They run on this machine. [y/N] ").strip().lower()
    except EOFError:
        answer = ""
    if answer in ("y", "yes"):
        return {server.name for server in servers}
    err.print("Left out; 'subagents mcp trust NAME' approves one later.")
    return set()
