"""Skill: load a skill's instructions by name (Claude Code's tool of that name).

The tool is built for one catalog of skills (see :mod:`subagents.skills`), whose usable skills
its description lists, so that the model knows what it may load. The result is the skill's
``SKILL.md`` instructions, read afresh, and the skill's folder. Only ``SKILL.md`` is returned:
other files of a skill folder that lies outside the workspace (a user's skill) stay out of the
file tools' reach, and the result says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import Field

from subagents.errors import ToolError
from subagents.skills import SkillCatalog, read_skill, skill_files, skill_text
from subagents.tools.base import Tool, ToolContext
from subagents.tools.decorator import tool
from subagents.tools.names import SKILL_TOOL_NAME
from subagents.tools.workspace import workspace_of

__all__ = ["MAX_LISTED_SKILLS", "MAX_LISTING_CHARS", "skill_tool"]

MAX_LISTED_SKILLS = 100
MAX_LISTING_CHARS = 12_000
_DESCRIPTION_CHARS = 250  # of one skill in the listing

_INTRO = """\
Load a skill: instructions for a kind of task, written by the people you work for. When the \
task matches a skill below, load it before starting and follow it. Give the skill's name; the \
result is its instructions and the folder its other files are in."""


def skill_tool(catalog: SkillCatalog) -> Tool:
    """The ``Skill`` tool for the skills of ``catalog``."""

    def load_skill(
        skill: Annotated[str, Field(description="The name of the skill to load.")],
        ctx: ToolContext,
        args: Annotated[
            str | None, Field(description="Optional arguments for the skill.", max_length=10_000)
        ] = None,
    ) -> str:
        return _load(catalog, skill, ctx, args or "")

    return tool(
        name=SKILL_TOOL_NAME,
        description=_INTRO + "\n\n" + _listing(catalog),
        read_only=True,
        idempotent=True,
        timeout_seconds=30.0,
    )(load_skill)


def _listing(catalog: SkillCatalog) -> str:
    skills = catalog.invocable()
    if not skills:
        return "Available skills: none (skills are folders with a SKILL.md in .claude/skills/)."
    lines: list[str] = []
    size = 0
    for skill in skills[:MAX_LISTED_SKILLS]:
        description = skill.description or "(no description)"
        if len(description) > _DESCRIPTION_CHARS:
            description = description[:_DESCRIPTION_CHARS] + "..."
        line = f"- {skill.name}: {description}"
        if size + len(line) > MAX_LISTING_CHARS:
            break
        lines.append(line)
        size += len(line) + 1
    left = len(skills) - len(lines)
    if left:
        lines.append(f"({left} more skills are not listed here for space; load them by name.)")
    return "Available skills:\n" + "\n".join(lines)


def _load(catalog: SkillCatalog, name: str, ctx: ToolContext, arguments: str) -> str:
    found = catalog.get(name)
    if found is None:
        raise ToolError(f"There is no skill named {name!r}. {_choices(catalog)}")
    if not found.model_invocable:
        raise ToolError(
            f"The skill {found.name!r} is only for people to use (disable-model-invocation); "
            f"do the task without it. {_choices(catalog)}"
        )
    skill = read_skill(found.path, scope=found.scope, roots=found.roots)  # afresh: edited?
    if not skill.usable:
        raise ToolError(
            f"The skill {found.name!r} ({found.path}) cannot be loaded: "
            f"{'; '.join(skill.errors)}. Do the task without it, and tell the user to fix it."
        )
    return skill_text(skill, arguments=arguments) + _folder_note(skill.folder, ctx)


def _choices(catalog: SkillCatalog) -> str:
    names = [skill.name for skill in catalog.invocable()]
    if not names:
        return "No skills are available here; do the task without one."
    shown = ", ".join(names[:MAX_LISTED_SKILLS])
    more = f" and {len(names) - MAX_LISTED_SKILLS} more" if len(names) > MAX_LISTED_SKILLS else ""
    return f"Available skills: {shown}{more}."


def _folder_note(folder: Path, ctx: ToolContext) -> str:
    files, more = skill_files(folder)
    if not files:
        return ""
    shown = ", ".join(files) + (", ..." if more else "")
    try:
        workspace_of(ctx).resolve(folder)
    except ToolError:
        return (
            f"\n\nOther files of the skill: {shown}. Its folder {folder} is outside the "
            "workspace, so they cannot be read with the file tools here; work from the "
            "instructions above."
        )
    return f"\n\nOther files of the skill, to read with Read when the instructions ask: {shown}."
