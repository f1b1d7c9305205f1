"""The ``hooks`` of an agent file, read: which events and commands it names, what will not
run, and one line describing it. :mod:`subagents.runtime.agent_hooks` runs them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from subagents._preview import shorten
from subagents.matchers import compile_matcher
from subagents.status import HookEvent

__all__ = [
    "AGENT_HOOK_EVENTS",
    "AS_MAIN",
    "AS_SUBAGENT",
    "DEFAULT_HOOK_TIMEOUT_SECONDS",
    "MAX_HOOK_TIMEOUT_SECONDS",
    "TOOL_EVENTS",
    "agent_hook_commands",
    "agent_hook_problems",
    "describe_agent_hooks",
]

DEFAULT_HOOK_TIMEOUT_SECONDS = 60.0
MAX_HOOK_TIMEOUT_SECONDS = 3600.0
"""A ``timeout`` above this is cut to it: a hook must not hold a run for days."""

# The events an agent file may name, and what each becomes for a subagent / the main agent.
AS_SUBAGENT: dict[str, HookEvent] = {
    "PreToolUse": "PreToolUse",
    "PostToolUse": "PostToolUse",
    "Stop": "SubagentStop",
    "SubagentStop": "SubagentStop",
    "SubagentStart": "SubagentStart",
}
AS_MAIN: dict[str, HookEvent] = {
    "PreToolUse": "PreToolUse",
    "PostToolUse": "PostToolUse",
    "Stop": "Stop",
    "SubagentStop": "Stop",
}
AGENT_HOOK_EVENTS: tuple[str, ...] = tuple(AS_SUBAGENT)
# Events whose matcher selects tool names; for the others the hook is the agent's own anyway.
TOOL_EVENTS = frozenset({"PreToolUse", "PostToolUse"})


def agent_hook_problems(hooks: Mapping[str, Iterable[Any]]) -> list[str]:
    """What in an agent file's ``hooks`` will not run, one warning each."""
    problems: list[str] = []
    for event, entries in hooks.items():
        if event not in AS_SUBAGENT:
            problems.append(
                f"hooks.{shorten(event)}: this event is not supported here (supported: "
                f"{', '.join(AGENT_HOOK_EVENTS)}); its hooks are ignored"
            )
            continue
        for entry in entries:
            matcher = entry.get("matcher") if isinstance(entry, dict) else None
            try:
                compile_matcher(matcher if isinstance(matcher, str) else None)
            except ValueError as error:
                problems.append(f"hooks.{event}: {error}; this entry is ignored")
    return problems


def describe_agent_hooks(hooks: Mapping[str, Iterable[Any]]) -> str:
    """One line for ``agents show``: each usable event, its command count and matchers."""
    parts: list[str] = []
    for event, entries in hooks.items():
        if event not in AS_SUBAGENT:
            continue
        commands = list(agent_hook_commands(entries))
        if not commands:
            continue
        text = f"{event}: {len(commands)} command{'s' * (len(commands) != 1)}"
        if event in TOOL_EVENTS:
            matchers = sorted({matcher or "*" for matcher, _, _ in commands})
            text += f" (tools: {shorten(' | '.join(matchers))})"
        elif event == "Stop":
            text += " (as SubagentStop when it runs as a subagent)"
        parts.append(text)
    return "; ".join(parts) or "(none usable)"


def agent_hook_commands(entries: Iterable[Any]) -> Iterator[tuple[str | None, str, float]]:
    """(matcher, command, timeout) of every command hook in ``entries``."""
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        matcher = entry.get("matcher")
        for hook in entry.get("hooks") or ():
            if not isinstance(hook, dict) or hook.get("type", "command") != "command":
                continue
            command = hook.get("command")
            if isinstance(command, str) and command.strip():
                yield (
                    matcher if isinstance(matcher, str) else None,
                    command,
                    _timeout(hook.get("timeout")),
                )


def _timeout(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return DEFAULT_HOOK_TIMEOUT_SECONDS
    if not math.isfinite(value) or value <= 0:
        return DEFAULT_HOOK_TIMEOUT_SECONDS
    return min(float(value), MAX_HOOK_TIMEOUT_SECONDS)
