"""Hooks: code that runs at fixed points of a run and may steer it.

- ``SubagentStart``: a subagent is about to run; may add context to its prompt.
- ``SubagentStop``: a subagent finished; may send it back to work with a reason.
- ``PreToolUse``: a tool is about to run; may deny the call with a reason.
- ``PostToolUse``: a tool ran; observes the result.
- ``Stop``: the main agent answered; may send it back to work with a reason.
- ``Notification``: something a person may want to know of, its ``notification_type`` one
  of :data:`NOTIFICATION_TYPES` (the matcher selects those): an agent waits for a person
  (``agent_needs_input``), a background subagent ended (``agent_completed``,
  ``agent_failed``). It observes; what it returns changes nothing.

A hook is a Python callable (sync or async) or a shell command (:class:`CommandHook`) that gets
the payload as JSON on stdin, following Claude Code's convention: exit code 2 blocks with
stderr as the reason; a JSON object on stdout may set ``decision: "block"``, ``reason`` and
``additionalContext``. A hook that crashes is reported in the payload's run, never fatal.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from subagents._process import run_process
from subagents.matchers import compile_matcher
from subagents.secrets import tool_environment
from subagents.status import HookEvent as HookEventName

if TYPE_CHECKING:
    from subagents.config import HookCommand

__all__ = [
    "NOTIFICATION_TYPES",
    "CommandHook",
    "HookCallable",
    "HookEventName",
    "HookPayload",
    "HookResult",
    "Hooks",
    "compile_matcher",
    "notify",
]


@dataclass(slots=True)
class HookPayload:
    event: HookEventName
    agent_id: str
    agent_type: str
    parent_id: str | None = None
    tool_name: str | None = None
    tool_input: dict[str, Any] | None = None
    tool_response: str | None = None
    tool_error: bool = False
    prompt: str | None = None
    result: str | None = None
    stop_hook_active: bool = False
    cwd: str | None = None  # the agent's workspace (a worktree, for isolation: worktree)
    notification_type: str | None = None  # Notification: one of NOTIFICATION_TYPES
    message: str | None = None  # Notification: what to tell the person

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "hook_event_name": self.event,
            "agent_id": self.agent_id,
            "agent_type": self.agent_type,
        }
        optional = {
            "parent_id": self.parent_id,
            "tool_name": self.tool_name,
            "tool_input": self.tool_input,
            "tool_response": self.tool_response,
            "prompt": self.prompt,
            "result": self.result,
            "cwd": self.cwd,
            "notification_type": self.notification_type,
            "message": self.message,
        }
        data.update({key: value for key, value in optional.items() if value is not None})
        if self.event == "PostToolUse":
            data["tool_error"] = self.tool_error
        if self.event in ("SubagentStop", "Stop"):
            data["stop_hook_active"] = self.stop_hook_active
        return data


NOTIFICATION_TYPES = ("agent_needs_input", "agent_completed", "agent_failed")


async def notify(
    hooks: Hooks | None,
    kind: str,
    message: str,
    *,
    agent_id: str,
    agent_type: str,
    parent_id: str | None,
    cwd: str | None,
) -> None:
    """Run the ``Notification`` hooks whose matcher takes ``kind`` (one of
    :data:`NOTIFICATION_TYPES`)."""
    if hooks is None or not hooks.has("Notification"):
        return
    payload = HookPayload(
        "Notification",
        agent_id,
        agent_type,
        parent_id,
        cwd=cwd,
        notification_type=kind,
        message=message,
    )
    await hooks.run(payload, subject=kind)


@dataclass(slots=True)
class HookResult:
    """What a hook asks for. ``block`` denies a tool call (PreToolUse) or sends an agent back
    to work (SubagentStop, Stop); ``reason`` is shown to the model. ``additional_context`` is added
    to a subagent's prompt (SubagentStart)."""

    block: bool = False
    reason: str | None = None
    additional_context: str | None = None


HookCallable = Callable[[HookPayload], "Awaitable[HookResult | None] | HookResult | None"]


MAX_HOOK_OUTPUT_BYTES = 1 << 20  # of each end kept: an answer is read whole up to twice it


@dataclass(slots=True)
class CommandHook:
    """A shell command run with the payload as JSON on stdin, in the agent's workspace (the
    payload's ``cwd``) when it has one.

    ``env`` is its environment; ``None`` means :func:`~subagents.secrets.tool_environment` of
    the process without config (no provider keys: a hook runs on a model's tool calls).
    """

    command: str
    timeout_seconds: float = 60.0
    env: Mapping[str, str] | None = None

    async def __call__(self, payload: HookPayload) -> HookResult | None:
        try:
            finished = await run_process(
                ["/bin/sh", "-c", self.command],
                timeout_seconds=self.timeout_seconds,
                keep_bytes=MAX_HOOK_OUTPUT_BYTES,
                cwd=_existing_folder(payload.cwd),
                env=self.env if self.env is not None else tool_environment(),
                stdin=json.dumps(payload.to_json()).encode(),
            )
        except OSError as error:
            raise RuntimeError(f"hook command {self.command!r} could not start: {error}") from None
        if finished.timed_out:
            raise RuntimeError(
                f"hook command {self.command!r} timed out after {self.timeout_seconds:g}s and "
                "was stopped with every process it started"
            )
        stderr = finished.stderr.data().decode(errors="replace").strip()
        if finished.returncode == 2:
            return HookResult(block=True, reason=stderr)
        if finished.returncode != 0:
            raise RuntimeError(
                f"hook command {self.command!r} exited with {finished.returncode}: {stderr}"
            )
        if not finished.stdout.whole:
            raise RuntimeError(
                f"hook command {self.command!r} printed {finished.stdout.total} bytes, too many "
                "for a hook's answer (a JSON object, or nothing)"
            )
        return _parse_command_output(finished.stdout.data().decode(errors="replace"))


def _existing_folder(path: str | None) -> str | None:
    return path if path and Path(path).is_dir() else None


def _parse_command_output(text: str) -> HookResult | None:
    text = text.strip()
    if not text.startswith("{"):
        return HookResult(additional_context=text) if text else None
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return HookResult(additional_context=text)
    if not isinstance(data, dict):
        return None
    context = data.get("additionalContext") or data.get("additional_context")
    return HookResult(
        block=data.get("decision") == "block" or data.get("continue") is False,
        reason=data.get("reason") or data.get("stopReason"),
        additional_context=str(context) if context else None,
    )


@dataclass(slots=True)
class _Registration:
    event: HookEventName
    hook: HookCallable
    matcher: re.Pattern[str] | None


@dataclass(slots=True)
class Hooks:
    """The hooks of one runtime. ``matcher`` (a regular expression) selects tool names for
    the tool events and agent types for the subagent events; ``None`` matches everything."""

    _registrations: list[_Registration] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def add(self, event: HookEventName, hook: HookCallable, *, matcher: str | None = None) -> None:
        """Register ``hook``; an invalid ``matcher`` raises ConfigError."""
        from subagents.errors import ConfigError

        try:
            compiled = compile_matcher(matcher)
        except ValueError as error:
            raise ConfigError(
                f"Cannot add the {event} hook: {error}.",
                hint="fix the matcher ([[hooks.EVENT]] matcher in config.toml, or matcher=)",
            ) from None
        self._registrations.append(_Registration(event, hook, compiled))

    def copy(self) -> Hooks:
        return Hooks(list(self._registrations))

    def add_commands(
        self, commands: Mapping[HookEventName, Sequence[HookCommand]], env: Mapping[str, str]
    ) -> None:
        """Register the shell commands of config.toml's ``[[hooks.EVENT]]`` tables, run with
        the environment ``env``."""
        for event, entries in commands.items():
            for entry in entries:
                hook = CommandHook(entry.command, timeout_seconds=entry.timeout, env=env)
                self.add(event, hook, matcher=entry.matcher)

    def has(self, event: HookEventName) -> bool:
        return any(r.event == event for r in self._registrations)

    def __bool__(self) -> bool:
        return bool(self._registrations)

    async def run(self, payload: HookPayload, *, subject: str) -> HookResult:
        """Run every hook for ``payload.event`` matching ``subject``; results are merged:
        any block wins (reasons joined), contexts are joined."""
        merged = HookResult()
        reasons: list[str] = []
        contexts: list[str] = []
        for registration in self._registrations:
            if registration.event != payload.event:
                continue
            if registration.matcher is not None and not registration.matcher.fullmatch(subject):
                continue
            try:
                outcome = registration.hook(payload)
                if inspect.isawaitable(outcome):
                    outcome = await outcome
            except asyncio.CancelledError:
                raise
            except Exception as error:
                self.errors.append(f"{payload.event} hook failed: {type(error).__name__}: {error}")
                continue
            if outcome is None:
                continue
            if outcome.block:
                merged.block = True
                if outcome.reason:
                    reasons.append(outcome.reason)
            if outcome.additional_context:
                contexts.append(outcome.additional_context)
        merged.reason = "\n".join(reasons) or None
        merged.additional_context = "\n\n".join(contexts) or None
        return merged
