"""Reading a project's workflow files for the `subagents workflow` commands: each file
checked against the agents and tools here, its problems printed to fit 80 columns."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from subagents.cli import plain

if TYPE_CHECKING:
    from subagents.workflows.graph import Workflow
    from subagents.workflows.validate import WorkflowProblem

__all__ = [
    "WIDTH",
    "CheckedWorkflow",
    "WorkflowContext",
    "base_folder",
    "check_workflow_file",
    "count_of",
    "echo_problems",
    "echo_wrapped",
    "shown_path",
    "status_of",
    "workflow_context",
]

WIDTH = 80


@dataclass(slots=True)
class WorkflowContext:
    """What a workflow's nodes may name here: agents with their status, tools, MCP servers."""

    agents: dict[str, str]
    tools: list[str]
    mcp_servers: list[str] | None
    notes: list[str] = field(default_factory=list)


@dataclass(slots=True)
class CheckedWorkflow:
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


def workflow_context(cwd: Path | None) -> WorkflowContext:
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
    return WorkflowContext(agents, list(BUILTIN_TOOL_NAMES), mcp_servers, notes)


def check_workflow_file(path: Path, context: WorkflowContext) -> CheckedWorkflow:
    """Read ``path`` and validate it against ``context``; never raises for a bad file."""
    from subagents.errors import WorkflowError, WorkflowValidationError
    from subagents.workflows.files import load_workflow_file
    from subagents.workflows.validate import WorkflowProblem, validate_workflow

    warnings: list[WorkflowProblem] = []
    try:
        workflow = load_workflow_file(path, check=False, warnings=warnings)
    except WorkflowValidationError as error:
        problems = [WorkflowProblem(location, message) for location, message in error.problems]
        return CheckedWorkflow(path, None, problems)
    except WorkflowError as error:
        return CheckedWorkflow(path, None, [WorkflowProblem("file", error.message)])
    problems = validate_workflow(
        workflow, agents=context.agents, tools=context.tools, mcp_servers=context.mcp_servers
    )
    return CheckedWorkflow(path, workflow, [*warnings, *problems])


def base_folder(cwd: Path | None) -> Path:
    return (cwd if cwd is not None else Path.cwd()).resolve()


def shown_path(path: Path, base: Path) -> str:
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


def echo_wrapped(text: str, *, err: bool = False, indent: str = "    ") -> None:
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


def echo_problems(checked: CheckedWorkflow, where: str, *, err: bool = False) -> None:
    for problem in checked.problems:
        echo_wrapped(f"{where}: {problem}", err=err)


def count_of(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def status_of(checked: CheckedWorkflow) -> str:
    if checked.workflow is None:
        return f"unreadable: {count_of(checked.errors, 'error')}"
    if checked.errors:
        return count_of(checked.errors, "error")
    if checked.warnings:
        return f"valid, {count_of(checked.warnings, 'warning')}"
    return "valid"
