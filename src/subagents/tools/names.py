"""Tool names every part of the library agrees on, kept free of imports so that agent
validation can check names without loading any tool."""

from __future__ import annotations

import re
from typing import Literal

__all__ = [
    "ASK_HUMAN_TOOL_NAME",
    "BUILTIN_TOOL_NAMES",
    "CLAUDE_CODE_ONLY_TOOL_NAMES",
    "DELEGATION_TOOL_NAMES",
    "LIST_AGENTS_TOOL_NAME",
    "MESSAGE_TOOL_NAMES",
    "READ_ONLY_TOOL_NAMES",
    "SEND_MESSAGE_TOOL_NAME",
    "SKILL_TOOL_NAME",
    "TASK_BATCH_TOOL_NAME",
    "TASK_CANCEL_TOOL_NAME",
    "TASK_OUTPUT_TOOL_NAME",
    "TASK_TOOL_NAME",
    "ToolNameKind",
    "classify_tool_name",
]

BUILTIN_TOOL_NAMES: tuple[str, ...] = (
    "Read",
    "Write",
    "Edit",
    "Glob",
    "Grep",
    "LS",
    "Bash",
    "MultiEdit",
    "TodoWrite",
    "WebFetch",
    "WebSearch",
)
READ_ONLY_TOOL_NAMES: tuple[str, ...] = ("Read", "Glob", "Grep", "LS")
TASK_TOOL_NAME = "Task"
TASK_OUTPUT_TOOL_NAME = "TaskOutput"
TASK_CANCEL_TOOL_NAME = "TaskCancel"
TASK_BATCH_TOOL_NAME = "TaskBatch"
# The tools that start or steer subagents; they come and go together.
DELEGATION_TOOL_NAMES: tuple[str, ...] = (
    TASK_TOOL_NAME,
    TASK_OUTPUT_TOOL_NAME,
    TASK_CANCEL_TOOL_NAME,
    TASK_BATCH_TOOL_NAME,
)
# Messages between the agents of a task (runtime/messaging.py).
SEND_MESSAGE_TOOL_NAME = "SendMessage"
LIST_AGENTS_TOOL_NAME = "ListAgents"
MESSAGE_TOOL_NAMES: tuple[str, ...] = (SEND_MESSAGE_TOOL_NAME, LIST_AGENTS_TOOL_NAME)
ASK_HUMAN_TOOL_NAME = "AskHuman"  # pauses a durable run for a person
SKILL_TOOL_NAME = "Skill"  # loads a skill; present when skills are found (subagents.skills)

# Tools Claude Code has that this library does not provide (yet). Agent files naming them stay
# valid: the name is reported in a warning and left out of the effective tool set.
CLAUDE_CODE_ONLY_TOOL_NAMES: frozenset[str] = frozenset(
    {
        "NotebookEdit",
        "NotebookRead",
        "TodoRead",
        "BashOutput",
        "KillShell",
        "KillBash",
        "SlashCommand",
        "ExitPlanMode",
        "AskUserQuestion",
    }
)

_MCP_NAME = re.compile(r"^mcp__[A-Za-z0-9_.-]+?(__([A-Za-z0-9_.-]+|\*))?$")

ToolNameKind = Literal["builtin", "task", "mcp", "claude_code_only", "unknown"]


def classify_tool_name(name: str) -> ToolNameKind:
    """Say what kind of tool ``name`` refers to.

    ``mcp`` covers ``mcp__server``, ``mcp__server__tool`` and ``mcp__server__*``; whether that
    server is configured is for the caller to check.
    """
    if name in BUILTIN_TOOL_NAMES or name == SKILL_TOOL_NAME:
        return "builtin"
    if name in (TASK_TOOL_NAME, "Agent", *MESSAGE_TOOL_NAMES):  # "Agent": Claude Code's Task
        return "task"
    if _MCP_NAME.match(name):
        return "mcp"
    if name in CLAUDE_CODE_ONLY_TOOL_NAMES:
        return "claude_code_only"
    return "unknown"
