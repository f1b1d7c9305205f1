"""Write a definition back as a Markdown agent file, and the template for new agents."""

from __future__ import annotations

import re
from typing import Any

import yaml

from subagents.definitions.fields import BODY_KEYS, FIELD_SPELLINGS
from subagents.definitions.model import AgentDefinition
from subagents.definitions.schema import frontmatter_json_schema
from subagents.definitions.validate import normalise_name

__all__ = ["frontmatter_json_schema", "new_agent_template", "render_markdown"]

_Dumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_RESERVED_KEYS = frozenset(FIELD_SPELLINGS).union(*BODY_KEYS.values())
_NEEDS_LIST = re.compile(r"[,\s]")


def _names(names: list[str]) -> str | list[str]:
    """Claude Code's comma string, unless a name would not survive it."""
    if not names or any(_NEEDS_LIST.search(n) or n == "*" for n in names):
        return list(names)
    return ", ".join(names)


def _frontmatter(d: AgentDefinition) -> dict[str, Any]:
    fm: dict[str, Any] = {"name": d.name, "description": d.description}
    if d.tools is not None:
        fm["tools"] = _names(d.tools)
    if d.disallowed_tools:
        fm["disallowedTools"] = _names(d.disallowed_tools)
    if d.model is not None:
        fm["model"] = d.model
    if d.max_turns is not None:
        fm["maxTurns"] = d.max_turns
    if d.max_budget_tokens is not None:
        fm["maxBudgetTokens"] = d.max_budget_tokens
    if d.max_budget_usd is not None:
        fm["maxBudgetUsd"] = d.max_budget_usd
    if d.output_schema is not None:
        fm["outputSchema"] = d.output_schema
    if d.max_duration_seconds is not None:
        fm["maxDurationSeconds"] = d.max_duration_seconds
    if d.permission_mode is not None:
        fm["permissionMode"] = d.permission_mode
    if d.mcp_servers or d.mcp_server_configs:
        servers: list[Any] = []
        for server in dict.fromkeys([*d.mcp_servers, *d.mcp_server_configs]):
            config = d.mcp_server_configs.get(server)
            servers.append(server if config is None else {server: config})
        fm["mcpServers"] = servers
    if d.color is not None:
        fm["color"] = d.color
    if d.background:
        fm["background"] = True
    if d.temperature is not None:
        fm["temperature"] = d.temperature
    if d.skills:
        fm["skills"] = list(d.skills)
    if d.memory is not None:
        fm["memory"] = d.memory
    if d.isolation is not None:
        fm["isolation"] = d.isolation
    if d.hooks:
        fm["hooks"] = d.hooks
    if d.effort is not None:
        fm["effort"] = d.effort
    if d.initial_prompt is not None:
        fm["initialPrompt"] = d.initial_prompt
    if d.omit_claude_md:
        fm["omitClaudeMd"] = True
    if d.endpoint is not None:
        fm["endpoint"] = d.endpoint
    if d.api_key_env is not None:
        fm["api_key_env"] = d.api_key_env
    for key, value in d.extra.items():
        if key not in _RESERVED_KEYS:
            fm[key] = value
    return fm


def render_markdown(d: AgentDefinition) -> str:
    """The definition as a Markdown agent file (Claude Code spellings).

    Parsing the result gives back the same user-facing fields (``declared_name`` aside: the
    normalised name is written).
    """
    frontmatter = yaml.dump(
        _frontmatter(d),
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=1 << 16,
    )
    return f"---\n{frontmatter}---\n\n{d.system_prompt.strip()}\n"


def new_agent_template(name: str) -> str:
    """A commented agent file to start from; it parses as an active agent as it stands."""
    name = normalise_name(name) or "my-agent"
    written = yaml.dump(name, Dumper=_Dumper).removesuffix("...\n").strip()
    return f"""---
# An agent for subagents (the same format as Claude Code's .claude/agents/*.md).
# name and description are required; every other key is optional.
name: {written}
description: "Use this agent when ... Say what it does and when to delegate to it."
# tools: Read, Grep, Glob      # omit to inherit every tool; Bash(git *) limits a tool,
#                              # Agent(explore, plan) the agents it may start
# disallowedTools: Bash        # tools taken away, even when inherited
# model: inherit               # haiku | sonnet | opus | inherit | provider:model | full id
# maxTurns: 20                 # most model turns before it must answer
# maxBudgetTokens: 50000       # most input + output tokens one of its sessions may spend
# maxBudgetUsd: 0.50           # most USD one of its sessions may spend
# maxDurationSeconds: 600      # most seconds one of its sessions may run
# permissionMode: default      # default | acceptEdits | plan | dontAsk | bypassPermissions
# mcpServers: [github]         # MCP servers it uses (configured in .mcp.json)
# skills: [pdf-forms]          # skills (.claude/skills/NAME/SKILL.md) loaded into its prompt
# memory: project              # user | project | local: a memory folder it keeps
# isolation: worktree          # work in a temporary git worktree
# effort: medium               # low | medium | high | max: reasoning effort
# color: blue
---

You are {name}, a specialist who ... (describe the role in one sentence).

When you are given a task:
1. ... (the steps you take)
2. ...

Return ... (what your final message must contain: findings, file paths, next steps).
"""
