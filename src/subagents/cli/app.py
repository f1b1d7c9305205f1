"""The `subagents` command: a thin Typer app that wires the command groups together.

Each command module imports its heavy dependencies inside the command function so that
``subagents --help`` stays fast.
"""

from __future__ import annotations

import typer

from subagents.cli.agents import agents_app
from subagents.cli.chat import chat_command
from subagents.cli.mcp import mcp_app
from subagents.cli.models import models_app
from subagents.cli.permissions import permissions_app
from subagents.cli.resume import resume_command
from subagents.cli.run import run_command
from subagents.cli.skills import skills_app
from subagents.cli.suggest import suggest_command
from subagents.cli.tasks import cleanup_command, export_command, import_command, tasks_app
from subagents.cli.trace import trace_command
from subagents.cli.workflow import workflow_app
from subagents.cli.workflow_run import workflow_run_command

__all__ = ["app", "main"]

app = typer.Typer(
    name="subagents",
    help="Claude-Code-style subagents for any LLM.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Plain Click help: Rich-rendered help imports rich.markdown & co. and costs ~200 ms.
    rich_markup_mode=None,
)


def _print_version(value: bool) -> None:
    if value:
        from subagents import __version__

        typer.echo(f"subagents {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: bool = typer.Option(
        False,
        "--version",
        help="Print the version and exit.",
        callback=_print_version,
        is_eager=True,
    ),
) -> None:
    """Claude-Code-style subagents for any LLM."""


app.add_typer(agents_app, name="agents")
app.command("run")(run_command)
app.command("chat")(chat_command)
app.command("resume")(resume_command)
app.command("trace")(trace_command)
app.add_typer(tasks_app, name="tasks")
app.add_typer(mcp_app, name="mcp")
app.add_typer(skills_app, name="skills")
app.command("suggest")(suggest_command)
app.command("cleanup")(cleanup_command)
app.command("export")(export_command)
app.command("import")(import_command)
app.add_typer(permissions_app, name="permissions")
app.add_typer(models_app, name="models")
workflow_app.command("run")(workflow_run_command)
app.add_typer(workflow_app, name="workflow")


def main() -> None:
    import sys

    # bare `subagents` in a terminal opens the chat; anywhere else it prints the help, as before
    if len(sys.argv) == 1 and sys.stdin.isatty() and sys.stdout.isatty():
        sys.argv.append("chat")
    app()
