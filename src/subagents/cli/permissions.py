"""`subagents permissions list`: the permission rules a run here would enforce, and where each
one comes from, in the order they are checked (deny, ask, allow)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from subagents.cli.common import make_console, user_errors
from subagents.cli.options import CwdOption, JsonOption

__all__ = ["permissions_app"]

permissions_app = typer.Typer(
    help="Permission rules: .claude/settings*.json, ~/.claude/settings.json and the flags.",
    no_args_is_help=True,
)


@permissions_app.command("list")
def list_rules(
    cwd: CwdOption = None,
    allowed_tools: Annotated[
        list[str] | None,
        typer.Option("--allowedTools", "--allowed-tools", help="Add allow rules, as run does."),
    ] = None,
    disallowed_tools: Annotated[
        list[str] | None,
        typer.Option(
            "--disallowedTools", "--disallowed-tools", help="Add deny rules, as run does."
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """List every rule, deny first, with its source; then what could not be used."""
    from rich.table import Table

    from subagents.cli.answer import quote_markup
    from subagents.tools.rule_sources import run_permission_rules
    from subagents.tools.rules import RULE_BEHAVIORS

    with user_errors():
        workspace = (cwd or Path.cwd()).resolve()
        rules, warnings = run_permission_rules(
            workspace, allowed_tools or (), disallowed_tools or ()
        )
    ordered = [
        rule for behavior in RULE_BEHAVIORS for rule in rules.rules if rule.behavior == behavior
    ]
    if as_json:
        payload = {
            "rules": [
                {"behavior": rule.behavior, "rule": rule.text, "source": rule.source}
                for rule in ordered
            ],
            "warnings": warnings,
        }
        typer.echo(json.dumps(payload, indent=2))
        return
    console = make_console()
    if not ordered:
        console.print(
            "No permission rules. Add them under permissions.allow / ask / deny in "
            ".claude/settings.json, or pass --allowedTools / --disallowedTools to run."
        )
    else:
        table = Table("checked", "rule", "source", box=None, pad_edge=False)
        for rule in ordered:
            table.add_row(rule.behavior, quote_markup(rule.text), quote_markup(rule.source))
        console.print(table)
    for warning in warnings:
        console.print(f"[yellow]warning:[/] {quote_markup(warning)}")
