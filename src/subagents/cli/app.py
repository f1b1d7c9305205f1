"""The `subagents` command: a thin Typer app that wires the command groups together.

Each command module imports its heavy dependencies inside the command function so that
``subagents --help`` stays fast.
"""

from __future__ import annotations

import typer

from subagents.cli.agents import agents_app

__all__ = ["app", "main"]

app = typer.Typer(
    name="subagents",
    help="Claude-Code-style subagents for any LLM.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(agents_app, name="agents")


def main() -> None:
    app()
