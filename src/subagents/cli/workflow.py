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

from typing import Annotated

import typer

from subagents.cli import plain
from subagents.cli.answer import write_answer
from subagents.cli.common import user_errors
from subagents.cli.options import CwdOption
from subagents.cli.workflow_checks import (
    WIDTH,
    base_folder,
    check_workflow_file,
    count_of,
    echo_problems,
    echo_wrapped,
    shown_path,
    status_of,
    workflow_context,
)
from subagents.cli.workflow_run import workflow_run_command

__all__ = ["workflow_app"]

EXIT_PROBLEMS = 1

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


@workflow_app.command("list")
def list_workflows(cwd: CwdOption = None) -> None:
    """List the workflows of this project (project over user): scope, nodes, whether each is
    valid, and its file."""
    from subagents.workflows.files import discover_workflows

    base = base_folder(cwd)
    with user_errors():
        found = discover_workflows(cwd)
        context = workflow_context(cwd) if found else None
    if not found or context is None:
        typer.echo("No workflows found: put one in .subagents/workflows/NAME.yaml")
        return
    checked = {name: check_workflow_file(entry.path, context) for name, entry in found.items()}
    valid = sum(c.errors == 0 for c in checked.values())
    typer.echo(f"Workflows: {len(found)} ({valid} valid)")
    name_width = min(max(4, *(len(name) for name in found)), 24)
    rows = [("Name", "Scope", "Nodes", "Status", "Path")]
    for name, entry in found.items():
        result = checked[name]
        nodes = "-" if result.workflow is None else str(len(result.workflow.nodes))
        where = plain.clean(shown_path(entry.path, base))
        rows.append((plain.clean(name), entry.scope, nodes, status_of(result), where))
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
            echo_wrapped(f"{name}: overrides {shown_path(lower, base)}", indent="  ")
        for loser in entry.conflicts:
            echo_wrapped(
                f"{name}: conflict: {shown_path(loser, base)} is ignored; "
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

    base = base_folder(cwd)
    with user_errors():
        if workflow is not None:
            paths = [find_workflow(workflow, cwd)]
        else:
            paths = [entry.path for entry in discover_workflows(cwd).values()]
        context = workflow_context(cwd)
    if not paths:
        typer.echo("No workflows found: put one in .subagents/workflows/NAME.yaml", err=True)
        return
    for note in context.notes:
        echo_wrapped(f"note: {note}", err=True)
    results = [check_workflow_file(path, context) for path in paths]
    for result in results:
        echo_problems(result, shown_path(result.path, base))
    errors = sum(r.errors for r in results)
    warnings = sum(r.warnings for r in results)
    failing = sum(bool(r.errors) for r in results)
    typer.echo(
        f"{count_of(len(results), 'workflow')} checked: {failing} with errors "
        f"({count_of(errors, 'error')}, {count_of(warnings, 'warning')})",
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

    base = base_folder(cwd)
    with user_errors():
        path = find_workflow(workflow, cwd)
        context = workflow_context(cwd)
    result = check_workflow_file(path, context)
    where = shown_path(path, base)
    if result.workflow is None:
        echo_problems(result, where)
        typer.echo("The file cannot be read as a workflow: fix the problems above.", err=True)
        raise typer.Exit(EXIT_PROBLEMS)
    if mermaid:
        # exact in a pipe; at a terminal, a file's control characters cannot drive it
        write_answer(to_mermaid(result.workflow).removesuffix("\n"))
        if result.errors:
            typer.echo(
                f"{where}: {count_of(result.errors, 'error')}: run 'subagents workflow "
                f"validate {workflow}'",
                err=True,
            )
        return
    typer.echo(plain.clean(where))
    shown = to_text(result.workflow, width=WIDTH).split("\n")
    typer.echo("\n".join(plain.clean(line) for line in shown), nl=False)
    if result.problems:
        typer.echo("")
        typer.echo(f"{count_of(result.errors, 'error')}, {count_of(result.warnings, 'warning')}:")
        for problem in result.problems:
            echo_wrapped(f"  {problem}", indent="      ")


workflow_app.command("run")(workflow_run_command)  # last: the help lists it after the others
