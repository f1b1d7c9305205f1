"""The JSON Schema of agent frontmatter, for editors and ``subagents agents schema``."""

from __future__ import annotations

from typing import Any, get_args

from subagents.definitions.model import EFFORT_LEVELS, Isolation, MemoryScope, PermissionMode
from subagents.definitions.validate import NAME_PATTERN
from subagents.tools.names import BUILTIN_TOOL_NAMES, TASK_TOOL_NAME

__all__ = ["frontmatter_json_schema"]

_TOOL_LIST: dict[str, Any] = {
    "oneOf": [
        {"type": "string", "description": "Comma- or space-separated tool names."},
        {"type": "array", "items": {"type": "string"}},
    ]
}
_SERVER_CONFIG: dict[str, Any] = {
    "type": "object",
    "description": "An MCP server defined inline: command/args/env, or url (and headers).",
}


def frontmatter_json_schema() -> dict[str, Any]:
    """A JSON Schema (draft 2020-12) of the frontmatter keys, in Claude Code's spellings.

    snake_case spellings (``max_turns``, ``disallowed_tools``, ...) are accepted as well, and
    unknown keys are kept with a warning, hence ``additionalProperties: true``.
    """
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "subagents agent definition (frontmatter)",
        "description": (
            "YAML frontmatter of a Markdown agent file (.claude/agents, .subagents/agents, ...). "
            "The Markdown body below the frontmatter is the agent's system prompt."
        ),
        "type": "object",
        "required": ["name", "description"],
        "additionalProperties": True,
        "properties": {
            "name": {
                "type": "string",
                "pattern": NAME_PATTERN.pattern,
                "description": "Unique agent name; other spellings are normalised with a warning.",
                "examples": ["code-reviewer"],
            },
            "description": {
                "type": "string",
                "minLength": 1,
                "description": "What the agent does and when to delegate to it.",
            },
            "tools": {
                **_TOOL_LIST,
                "description": (
                    "Tools the agent may use; omit (or '*') to inherit every tool. Built-in: "
                    f"{', '.join((*BUILTIN_TOOL_NAMES, TASK_TOOL_NAME))}; MCP: mcp__SERVER, "
                    "mcp__SERVER__TOOL, mcp__SERVER__*."
                ),
            },
            "disallowedTools": {
                **_TOOL_LIST,
                "description": "Tools removed from the agent's set, even when inherited.",
            },
            "model": {
                "type": "string",
                "description": (
                    "An alias (haiku, sonnet, opus), 'inherit', 'provider:model' or a full model "
                    "id. Omit to inherit the parent's model."
                ),
                "examples": ["inherit", "sonnet", "openai:gpt-4o-mini", "claude-sonnet-4-5"],
            },
            "maxTurns": {
                "type": "integer",
                "minimum": 1,
                "description": "Most model turns the agent may take.",
            },
            "permissionMode": {
                "enum": list(get_args(PermissionMode)),
                "description": "How tool calls that need approval are handled.",
            },
            "mcpServers": {
                "description": "MCP servers the agent uses: names of configured servers, or "
                "inline definitions.",
                "oneOf": [
                    {
                        "type": "array",
                        "items": {
                            "oneOf": [
                                {"type": "string"},
                                {"type": "object", "additionalProperties": _SERVER_CONFIG},
                            ]
                        },
                    },
                    {"type": "object", "additionalProperties": _SERVER_CONFIG},
                ],
            },
            "color": {"type": "string", "description": "Colour of the agent in the UI."},
            "background": {
                "type": "boolean",
                "description": "Run in the background by default.",
            },
            "temperature": {"type": "number", "minimum": 0, "maximum": 2},
            "skills": {
                **_TOOL_LIST,
                "description": "Skills (.claude/skills/NAME/SKILL.md) preloaded into the prompt.",
            },
            "memory": {
                "enum": list(get_args(MemoryScope)),
                "description": "A memory folder the agent keeps: per user, project or local.",
            },
            "isolation": {
                "enum": list(get_args(Isolation)),
                "description": "worktree: work in a temporary git worktree.",
            },
            "hooks": {
                "type": "object",
                "description": "Hooks scoped to the agent (Claude Code's shape): event -> "
                "[{matcher, hooks: [{type: command, command}]}]; Stop means SubagentStop.",
            },
            "effort": {
                "enum": list(EFFORT_LEVELS),
                "description": "Reasoning effort (the provider's effort or thinking budget).",
            },
            "initialPrompt": {
                "type": "string",
                "description": "The first prompt when the agent runs as the main agent without "
                "one (run --agent NAME).",
            },
            "omitClaudeMd": {
                "type": "boolean",
                "description": "Leave CLAUDE.md / AGENTS.md out of the agent's context.",
            },
            "endpoint": {
                "type": "string",
                "pattern": "^[Hh][Tt][Tt][Pp][Ss]?://",
                "description": "Base URL of the OpenAI-compatible server the agent's model runs "
                "on (llm_config.endpoint in agent JSON); model is then that server's model name.",
            },
            "api_key_env": {
                "type": "string",
                "pattern": "^[A-Za-z_][A-Za-z0-9_]*$",
                "description": "Environment variable holding the endpoint's key (never the key).",
            },
        },
    }
