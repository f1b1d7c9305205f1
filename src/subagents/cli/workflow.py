"""`subagents workflow ...`: list, validate and show the workflows of a project.

Workflows are files in ``.subagents/workflows`` (see :mod:`subagents.workflows.files`). Only
typer is imported at module level; the workflow modules, the agent inventory and the MCP config
come in inside each command so that ``subagents --help`` stays fast. Output is plain text that
fits 80 columns; a command that finds errors exits with 1. A workflow file may come with the
project (not written by the person here): the control characters of what it says are shown as
spaces (:func:`subagents.cli.plain.clean`), as the plain listings show them, so that they
cannot drive the terminal and every line keeps its width.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from subagents.cli import plain
from subagents.cli.answer import write_answer
from subagents.cli.common import CwdOption, user_errors
from subagents.cli.workflow_run import workflow_run_command

if TYPE_CHECKING:
    from subagents.workflows.graph import Workflow
    from subagents.workflows.validate import WorkflowProblem

__all__ = ["workflow_app"]

EXIT_PROBLEMS = 1
WIDTH = 80

workflow_app = typer.Typer(
    help="Workflows: graphs of agent, tool, condition, human and join nodes, kept in "
    ".subagents/workflows/NAME.yaml.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,  # plain help keeps `--help` fast (see cli/app.py)
)

WorkflowArgument = Annotated[
    str,
    typer.Argument(help="A workflow name (as 'subagents workflow list' shows) or a file."),
]


@dataclass(slots=True)
class _Context:
    """What a workflow's nodes may name here: agents with their status, tools, MCP servers."""

    agents: dict[str, str]
    tools: list[str]
    mcp_servers: list[str] | None
    notes: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _Checked:
    """One file: its workflow when it could be read, and every problem found."""

    path: Path
    workflow: Workflow | None
    problems: list[WorkflowProblem]

    @property
    def errors(self) -> int:
        return sum(p.severity == "error" for p in self.problems)

    @property
    def warnings(self) -> int:
        return sum(p.severity == "warning" for p in self.problems)


def _context(cwd: Path | None) -> _Context:
    """The agents of the project's inventory, the built-in tools and the configured MCP
    servers (read from their config; no server is started)."""
    from subagents.errors import SubagentsError
    from subagents.inventory import Inventory
    from subagents.mcp.config import load_mcp_servers
    from subagents.tools.names import BUILTIN_TOOL_NAMES

    inventory = Inventory.discover(cwd)
    agents: dict[str, str] = {name: r.status for name, r in inventory.records.items()}
    notes: list[str] = []
    mcp_servers: list[str] | None
    try:
        mcp_servers = load_mcp_servers(cwd).names()
    except SubagentsError as error:
        mcp_servers = None
        notes.append(f"MCP tool names not checked: {error.message}")
    return _Context(agents, list(BUILTIN_TOOL_NAMES), mcp_servers, notes)


def _check(path: Path, context: _Context) -> _Checked:
    """Read ``path`` and validate it against ``context``; never raises for a bad file."""
    from subagents.errors import WorkflowError, WorkflowValidationError
    from subagents.workflows.files import load_workflow_file
    from subagents.workflows.validate import WorkflowProblem, validate_workflow

    warnings: list[WorkflowProblem] = []
    try:
        workflow = load_workflow_file(path, check=False, warnings=warnings)
    except WorkflowValidationError as error:
        problems = [WorkflowProblem(location, message) for location, message in error.problems]
        return _Checked(path, None, problems)
    except WorkflowError as error:
        return _Checked(path, None, [WorkflowProblem("file", error.message)])
    problems = validate_workflow(
        workflow, agents=context.agents, tools=context.tools, mcp_servers=context.mcp_servers
    )
    return _Checked(path, workflow, [*warnings, *problems])


def _base(cwd: Path | None) -> Path:
    return (cwd if cwd is not None else Path.cwd()).resolve()


def _shown(path: Path, base: Path) -> str:
    """``path`` relative to the project, else to the home (``~/...``), else absolute."""
    from subagents.config import resolve_home

    resolved = path.resolve() if path.is_absolute() else base / path
    try:
        return str(resolved.relative_to(base))
    except ValueError:
        pass
    try:
        return str(Path("~") / resolved.relative_to(resolve_home().resolve()))
    except ValueError:
        return str(path)


def _echo_wrapped(text: str, *, err: bool = False, indent: str = "    ") -> None:
    typer.echo(
        textwrap.fill(
            plain.clean(text),
            WIDTH,
            subsequent_indent=indent,
            break_long_words=False,
            break_on_hyphens=False,
        ),
        err=err,
    )


def _echo_problems(checked: _Checked, where: str, *, err: bool = False) -> None:
    for problem in checked.problems:
        _echo_wrapped(f"{where}: {problem}", err=err)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _status(checked: _Checked) -> str:
    if checked.workflow is None:
        return f"unreadable: {_count(checked.errors, 'error')}"
    if checked.errors:
        return _count(checked.errors, "error")
    if checked.warnings:
        return f"valid, {_count(checked.warnings, 'warning')}"
    return "valid"


@workflow_app.command("list")
def list_workflows(cwd: CwdOption = None) -> None:
    """List the workflows of this project (project over user): scope, nodes, whether each is
    valid, and its file."""
    from subagents.workflows.files import discover_workflows

    base = _base(cwd)
    with user_errors():
        found = discover_workflows(cwd)
        context = _context(cwd) if found else None
    if not found or context is None:
        typer.echo("No workflows found: put one in .subagents/workflows/NAME.yaml")
        return
    checked = {name: _check(entry.path, context) for name, entry in found.items()}
    valid = sum(c.errors == 0 for c in checked.values())
    typer.echo(f"Workflows: {len(found)} ({valid} valid)")
    name_width = min(max(4, *(len(name) for name in found)), 24)
    rows = [("Name", "Scope", "Nodes", "Status", "Path")]
    for name, entry in found.items():
        result = checked[name]
        nodes = "-" if result.workflow is None else str(len(result.workflow.nodes))
        where = plain.clean(_shown(entry.path, base))
        rows.append((plain.clean(name), entry.scope, nodes, _status(result), where))
    status_width = max(len(row[3]) for row in rows)
    for name, scope, nodes, status, path in rows:
        line = f"{name:<{name_width}}  {scope:<7}  {nodes:>5}  {status:<{status_width}}  {path}"
        if len(line) > WIDTH:  # the path on a line of its own, whole
            typer.echo(line[: -len(path)].rstrip())
            typer.echo(f"{'':<{name_width}}  {path}")
        else:
            typer.echo(line)
    for name, entry in found.items():
        for lower in entry.overrides:
            _echo_wrapped(f"{name}: overrides {_shown(lower, base)}", indent="  ")
        for loser in entry.conflicts:
            _echo_wrapped(
                f"{name}: conflict: {_shown(loser, base)} is ignored; "
                f"{entry.path.name} in the same folder wins (.yaml > .yml > .json)",
                indent="  ",
            )
    if valid < len(found):
        typer.echo("Run 'subagents workflow validate NAME' to see the problems.")


@workflow_app.command("validate")
def validate_workflows(
    workflow: Annotated[
        str | None,
        typer.Argument(help="A workflow name or file (default: every workflow found)."),
    ] = None,
    strict: Annotated[bool, typer.Option("--strict", help="Fail on warnings too.")] = False,
    cwd: CwdOption = None,
) -> None:
    """Check workflow files: one entry per problem with its location; exit 1 on errors.

    Agents are checked against the project's agents, tools against the built-in tools and the
    configured MCP servers (which are not started). Usable in CI.
    """
    from subagents.workflows.files import discover_workflows, find_workflow

    base = _base(cwd)
    with user_errors():
        if workflow is not None:
            paths = [find_workflow(workflow, cwd)]
        else:
            paths = [entry.path for entry in discover_workflows(cwd).values()]
        context = _context(cwd)
    if not paths:
        typer.echo("No workflows found: put one in .subagents/workflows/NAME.yaml", err=True)
        return
    for note in context.notes:
        _echo_wrapped(f"note: {note}", err=True)
    results = [_check(path, context) for path in paths]
    for result in results:
        _echo_problems(result, _shown(result.path, base))
    errors = sum(r.errors for r in results)
    warnings = sum(r.warnings for r in results)
    failing = sum(bool(r.errors) for r in results)
    typer.echo(
        f"{_count(len(results), 'workflow')} checked: {failing} with errors "
        f"({_count(errors, 'error')}, {_count(warnings, 'warning')})",
        err=True,
    )
    if errors or (strict and warnings):
        raise typer.Exit(EXIT_PROBLEMS)


@workflow_app.command("show")
def show_workflow(
    workflow: WorkflowArgument,
    mermaid: Annotated[
        bool, typer.Option("--mermaid", help="Print a Mermaid diagram (flowchart) instead.")
    ] = False,
    cwd: CwdOption = None,
) -> None:
    """Show a workflow's graph: each node with its edges, or a Mermaid diagram."""
    from subagents.workflows.files import find_workflow
    from subagents.workflows.render import to_mermaid, to_text

    base = _base(cwd)
    with user_errors():
        path = find_workflow(workflow, cwd)
        context = _context(cwd)
    result = _check(path, context)
    where = _shown(path, base)
    if result.workflow is None:
        _echo_problems(result, where)
        typer.echo("The file cannot be read as a workflow: fix the problems above.", err=True)
        raise typer.Exit(EXIT_PROBLEMS)
    if mermaid:
        # exact in a pipe; at a terminal, a file's control characters cannot drive it
        write_answer(to_mermaid(result.workflow).removesuffix("\n"))
        if result.errors:
            typer.echo(
                f"{where}: {_count(result.errors, 'error')}: run 'subagents workflow "
                f"validate {workflow}'",
                err=True,
            )
        return
    typer.echo(plain.clean(where))
    shown = to_text(result.workflow, width=WIDTH).split("\n")
    typer.echo("\n".join(plain.clean(line) for line in shown), nl=False)
    if result.problems:
        typer.echo("")
        typer.echo(f"{_count(result.errors, 'error')}, {_count(result.warnings, 'warning')}:")
        for problem in result.problems:
            _echo_wrapped(f"  {problem}", indent="      ")


workflow_app.command("run")(workflow_run_command)  # last: the help lists it after the others
