"""`subagents agents ...`: list, show, validate, schema and create agent definitions."""

from __future__ import annotations

import typer

__all__ = ["agents_app"]

agents_app = typer.Typer(help="Find, inspect and validate agent definitions.", no_args_is_help=True)


@agents_app.command("list")
def list_agents() -> None:
    """List every agent definition found for this project."""
    typer.echo("not yet implemented")
