"""The system prompt a session starts with: the agent's own prompt, and what the harness adds.

One place composes it for the main agent and for subagents, so that what every agent is told
about its surroundings (the environment, the project's CLAUDE.md / AGENTS.md files, and the
project context other modules add) agrees.
"""

from __future__ import annotations

import functools
import sys
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from subagents.runtime.instructions import load_project_instructions as project_instructions
from subagents.runtime.memory import memory_prompt

if TYPE_CHECKING:
    from subagents.definitions.model import AgentDefinition
    from subagents.runtime.instructions import ProjectInstructions

__all__ = ["MAIN_AGENT_PROMPT", "compose_system_prompt", "environment_note"]

MAIN_AGENT_PROMPT = """\
You are the main agent of a team. Work on the user's request with your tools. When the user \
names one of the specialist agents listed in the Task tool, or a part of the work fits one, \
delegate it with a Task call that gives the agent everything it needs to know; start \
independent delegations in the same turn so that they run in parallel. When you have what you \
need, answer the user directly and completely."""


def compose_system_prompt(
    definition: AgentDefinition | None,
    *,
    workspace: Path,
    subagent: bool,
    instructions: ProjectInstructions | None = None,
) -> str:
    """The system prompt of a session running ``definition`` (``None``: the default main
    agent). A subagent is also told where it works, since it starts with no history.
    ``instructions`` are the project's CLAUDE.md / AGENTS.md files when already read (a run
    reads them once); else they are read here."""
    prompt = definition.system_prompt.strip() if definition is not None else MAIN_AGENT_PROMPT
    if definition is not None:  # the skills it preloads, and its memory
        from subagents.skills import skills_prompt  # reads SKILL.md files: YAML

        prompt += skills_prompt(definition.skills, workspace) + memory_prompt(
            definition, workspace=workspace
        )
    if definition is not None and definition.output_schema is not None:
        from subagents.runtime.typed_result import schema_prompt

        prompt += schema_prompt(definition.output_schema)
    if subagent:
        prompt += environment_note(workspace)
    if definition is None or not definition.omit_claude_md:
        if instructions is None:
            instructions = project_instructions(workspace)
        prompt += instructions.prompt_section()
    return prompt


def environment_note(workspace: Path) -> str:
    """The ``<env>`` block: working directory, platform and today's date."""
    return _environment_note(workspace, date.today())


@functools.lru_cache(maxsize=64)
def _environment_note(workspace: Path, today: date) -> str:
    return (
        "\n\n<env>\n"
        f"Working directory: {workspace}\n"
        f"Platform: {sys.platform}\n"
        f"Today's date: {today.isoformat()}\n"
        "</env>"
    )
