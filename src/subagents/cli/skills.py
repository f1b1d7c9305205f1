"""`subagents skills list`: the skills agents of this project can load, and their problems."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from subagents.cli.common import make_console, user_errors
from subagents.cli.options import CwdOption, JsonOption

if TYPE_CHECKING:
    from subagents.skills import Skill, SkillCatalog

__all__ = ["skills_app"]

skills_app = typer.Typer(
    help="Skills: folders with a SKILL.md that agents preload (skills: in the agent file) or "
    "load with the Skill tool.",
    no_args_is_help=True,
)


@skills_app.command("list")
def list_skills(cwd: CwdOption = None, as_json: JsonOption = False) -> None:
    """List the skills in .claude/skills and .subagents/skills (project, nearest first, then
    the user's), with scope, path, description and problems."""
    from subagents.config import load_config
    from subagents.skills import MAX_SKILLS, discover_skills

    with user_errors():
        home = load_config(cwd).home
    catalog = discover_skills(cwd, home=home)
    base = (cwd or Path.cwd()).resolve()
    rows = [_row(skill, catalog, base) for skill in catalog.found]
    left_out = [_shown(path, base) for path in catalog.left_out]
    if as_json:
        typer.echo(json.dumps({"skills": rows, "left_out": left_out}, indent=2))
        return
    _print(rows)
    if left_out:
        from subagents.cli.answer import shown_text

        console = make_console()
        first = shown_text(left_out[0], terminal=console.is_terminal)
        console.print(
            f"{len(left_out)} more skills were not read (at most {MAX_SKILLS} are), the "
            f"first: {first}; remove the skills you do not use.",
            highlight=False,
            markup=False,
        )


def _row(skill: Skill, catalog: SkillCatalog, base: Path) -> dict[str, Any]:
    winner = catalog.shadowed_by(skill)
    status = "shadowed" if winner is not None else "ok" if skill.usable else "invalid"
    return {
        "name": skill.name,
        "scope": skill.scope,
        "status": status,
        "path": _shown(skill.path, base),
        "description": skill.description,
        "model_invocable": skill.model_invocable,
        "errors": list(skill.errors),
        "warnings": list(skill.warnings),
        "shadowed_by": _shown(winner.path, base) if winner is not None else None,
    }


def _shown(path: Path, base: Path) -> str:
    try:
        return str(path.relative_to(base))
    except ValueError:
        return str(path)


def _print(rows: list[dict[str, Any]]) -> None:
    """The skills as a table, then their notes. A skill's file may come with the project (not
    written by the person here): its text is never read as markup, and at a terminal its
    control characters are shown escaped (see :mod:`subagents.cli.answer`)."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    from subagents.cli.answer import markup_safe, shown_text

    console = make_console()

    if not rows:
        console.print(
            "No skills found - a skill is a folder with a SKILL.md (frontmatter: name, "
            "description; then its instructions) in .claude/skills/ of the project or of ~."
        )
        return
    usable = sum(row["status"] == "ok" for row in rows)
    console.print(f"Skills: {usable} usable of {len(rows)}", highlight=False)
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for column in ("Name", "Scope", "Status", "Path", "Description"):
        table.add_column(column, no_wrap=column in ("Name", "Scope", "Status"), overflow="fold")
    styles = {"ok": "green", "invalid": "red", "shadowed": "yellow"}
    for row in rows:
        table.add_row(
            markup_safe(row["name"], console),
            row["scope"],
            f"[{styles[row['status']]}]{row['status']}[/]",
            markup_safe(row["path"], console),
            markup_safe(row["description"] or "-", console),
        )
    console.print(table)
    for row in rows:
        notes = (
            [("shadowed", "yellow", f"hidden by {row['shadowed_by']}")]
            if row["shadowed_by"]
            else []
        )
        if not row["model_invocable"]:
            notes.append(("note", "cyan", "disable-model-invocation: preloaded, never offered"))
        notes += [("error", "red", error) for error in row["errors"]]
        notes += [("warning", "yellow", warning) for warning in row["warnings"]]
        for label, style, text in notes:
            quoted = shown_text(
                f": {row['name']} ({row['path']}): {text}", terminal=console.is_terminal
            )
            console.print(Text.assemble((label, style), quoted))
