"""Hooks scoped to one agent: the ``hooks`` of its agent file, active only while it runs.

Claude Code's shape, as the file gives it::

    hooks:
      PreToolUse:
        - matcher: Bash
          hooks:
            - type: command
              command: ./check.sh
              timeout: 30
      Stop:
        - hooks:
            - type: command
              command: ./verify.sh

Each command becomes a :class:`~subagents.runtime.hooks.CommandHook` (same payload on stdin,
exit code 2 blocks with stderr as the reason, JSON output, ...) registered on the session of
that agent only, after the run's own hooks (config.toml, ``Runtime(hooks=)``), which still
apply. So the hooks of agent A never fire for agent B, not even for a subagent A starts.

Events: ``PreToolUse`` and ``PostToolUse`` (the matcher selects tool names), ``Stop`` (when the
agent runs as a subagent, Claude Code fires it as ``SubagentStop``; here too, with the same
power to send the agent back to work), ``SubagentStop`` and ``SubagentStart`` (for this agent
only, whatever their matcher). An agent running as the main agent has no ``SubagentStart``, and
its ``Stop`` hooks run when it answers (see :func:`with_stop_hooks`); so do the ``Stop`` hooks of
config.toml.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from subagents.runtime.hooks import (
    CommandHook,
    HookEventName,
    HookPayload,
    Hooks,
    compile_matcher,
)

if TYPE_CHECKING:
    from subagents.definitions.model import AgentDefinition
    from subagents.runtime.result import RunResult
    from subagents.runtime.session import Session

__all__ = [
    "AGENT_HOOK_EVENTS",
    "DEFAULT_HOOK_TIMEOUT_SECONDS",
    "MAX_HOOK_TIMEOUT_SECONDS",
    "agent_hook_problems",
    "describe_agent_hooks",
    "scoped_hooks",
    "with_stop_hooks",
]

DEFAULT_HOOK_TIMEOUT_SECONDS = 60.0
MAX_HOOK_TIMEOUT_SECONDS = 3600.0
"""A ``timeout`` above this is cut to it: a hook must not hold a run for days."""

# The events an agent file may name, and what each becomes for a subagent / the main agent.
_AS_SUBAGENT: dict[str, HookEventName] = {
    "PreToolUse": "PreToolUse",
    "PostToolUse": "PostToolUse",
    "Stop": "SubagentStop",
    "SubagentStop": "SubagentStop",
    "SubagentStart": "SubagentStart",
}
_AS_MAIN: dict[str, HookEventName] = {
    "PreToolUse": "PreToolUse",
    "PostToolUse": "PostToolUse",
    "Stop": "Stop",
    "SubagentStop": "Stop",
}
AGENT_HOOK_EVENTS: tuple[str, ...] = tuple(_AS_SUBAGENT)
# Events whose matcher selects tool names; for the others the hook is the agent's own anyway.
_TOOL_EVENTS = frozenset({"PreToolUse", "PostToolUse"})


def scoped_hooks(
    base: Hooks,
    definition: AgentDefinition | None,
    *,
    subagent: bool,
    env: Mapping[str, str] | None = None,
) -> Hooks:
    """``base`` plus the hooks of ``definition``'s file, for a session running it.

    ``base`` itself is returned, not copied, when the agent has no hooks. Entries that cannot be
    used are skipped (:func:`agent_hook_problems` names them for ``agents validate``).
    """
    if definition is None or not definition.hooks:
        return base
    events = _AS_SUBAGENT if subagent else _AS_MAIN
    hooks = base.copy()
    hooks.errors = base.errors  # a failing hook is reported where the run's failures are
    for event, entries in definition.hooks.items():
        target = events.get(event)
        if target is None:
            continue
        for matcher, command, timeout in _commands(entries):
            if event not in _TOOL_EVENTS:
                matcher = None
            try:
                compile_matcher(matcher)
            except ValueError:
                continue
            hooks.add(target, CommandHook(command, timeout, env), matcher=matcher)
    return hooks


async def with_stop_hooks(session: Session, work: Awaitable[RunResult]) -> RunResult:
    """``work`` (the main session's run), then its ``Stop`` hooks: a hook that blocks sends the
    agent back to work with its reason, at most ``MAX_STOP_HOOK_RETURNS`` times."""
    from subagents.runtime.delegation import MAX_STOP_HOOK_RETURNS

    result = await work
    hooks = session.hooks
    if hooks is None or not hooks.has("Stop"):
        return result
    for returns in range(MAX_STOP_HOOK_RETURNS):
        if result.status != "completed":
            break
        payload = HookPayload(
            "Stop",
            session.agent_id,
            session.agent_type,
            result=result.output,
            stop_hook_active=returns > 0,
            cwd=str(session.workspace),
        )
        verdict = await hooks.run(payload, subject=session.agent_type)
        if not verdict.block:
            break
        result = await session.run(verdict.reason or "A stop hook asked you to continue working.")
    return result


def agent_hook_problems(hooks: Mapping[str, Iterable[Any]]) -> list[str]:
    """What in an agent file's ``hooks`` will not run, one warning each."""
    from subagents._preview import shorten

    problems: list[str] = []
    for event, entries in hooks.items():
        if event not in _AS_SUBAGENT:
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
    from subagents._preview import shorten

    parts: list[str] = []
    for event, entries in hooks.items():
        if event not in _AS_SUBAGENT:
            continue
        commands = list(_commands(entries))
        if not commands:
            continue
        text = f"{event}: {len(commands)} command{'s' * (len(commands) != 1)}"
        if event in _TOOL_EVENTS:
            matchers = sorted({matcher or "*" for matcher, _, _ in commands})
            text += f" (tools: {shorten(' | '.join(matchers))})"
        elif event == "Stop":
            text += " (as SubagentStop when it runs as a subagent)"
        parts.append(text)
    return "; ".join(parts) or "(none usable)"


def _commands(entries: Iterable[Any]) -> Iterable[tuple[str | None, str, float]]:
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
