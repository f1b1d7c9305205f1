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

from collections.abc import Awaitable, Mapping
from typing import TYPE_CHECKING

from subagents.definitions.hooks import (
    AGENT_HOOK_EVENTS,
    AS_MAIN,
    AS_SUBAGENT,
    DEFAULT_HOOK_TIMEOUT_SECONDS,
    MAX_HOOK_TIMEOUT_SECONDS,
    TOOL_EVENTS,
    agent_hook_commands,
    agent_hook_problems,
    describe_agent_hooks,
)
from subagents.matchers import compile_matcher
from subagents.runtime.hooks import CommandHook, HookPayload, Hooks

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
    events = AS_SUBAGENT if subagent else AS_MAIN
    hooks = base.copy()
    hooks.errors = base.errors  # a failing hook is reported where the run's failures are
    for event, entries in definition.hooks.items():
        target = events.get(event)
        if target is None:
            continue
        for matcher, command, timeout in agent_hook_commands(entries):
            if event not in TOOL_EVENTS:
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
