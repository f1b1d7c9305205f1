"""Permission modes: which tool calls run, which are refused, and which ask someone first."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, get_args

from subagents.errors import ConfigError, ToolError
from subagents.status import PermissionMode

if TYPE_CHECKING:
    from subagents.messages import ToolCall
    from subagents.tools.base import Tool, ToolContext
    from subagents.tools.protected import ProtectedPaths
    from subagents.tools.rules import PermissionRules, RuleVerdict

__all__ = [
    "EDIT_TOOL_NAMES",
    "PERMISSION_MODES",
    "ApprovalDecision",
    "ApprovalRequest",
    "Approver",
    "HeadlessPolicy",
    "PermissionMode",
    "PermissionPolicy",
    "narrower_mode",
]

HeadlessPolicy = Literal["allow", "deny"]
PERMISSION_MODES: tuple[PermissionMode, ...] = get_args(PermissionMode)

# The tools ``acceptEdits`` approves without asking: they only change files in the workspace.
EDIT_TOOL_NAMES: frozenset[str] = frozenset({"Write", "Edit", "MultiEdit"})

# How much each mode lets through, from the most restrictive up.
_PERMISSIVENESS: dict[str, int] = {
    "plan": 0,
    "dontAsk": 1,  # what default would ask about is refused
    "default": 2,
    "acceptEdits": 3,
    "bypassPermissions": 4,
}


def narrower_mode(current: PermissionMode, requested: PermissionMode | None) -> PermissionMode:
    """``requested`` where it is at most as permissive as ``current``, else ``current``.

    A subagent may ask for a stricter mode than its parent runs in, never a looser one: a
    ``plan`` run stays read-only all the way down, whatever the agent files say.
    """
    if requested is None or _PERMISSIVENESS[requested] >= _PERMISSIVENESS[current]:
        return current
    return requested


@dataclass(slots=True)
class ApprovalRequest:
    """A tool call waiting for someone to approve, deny or modify it."""

    tool_name: str
    arguments: dict[str, Any]
    agent_id: str
    agent_type: str
    tool_call_id: str
    reason: str | None = None
    """Why this call asks, when it is more than "the tool changes things" (a protected path)."""


@dataclass(slots=True)
class ApprovalDecision:
    """The answer to an approval request. ``arguments``, when set, replace the call's own."""

    approved: bool
    reason: str | None = None
    arguments: dict[str, Any] | None = None


Approver = Callable[[ApprovalRequest], Awaitable[ApprovalDecision]]

_APPROVED = ApprovalDecision(approved=True)


class PermissionPolicy:
    """Decides, per tool call, whether it may run.

    - ``bypassPermissions``: everything runs.
    - ``plan``: read-only tools only; anything else is refused. A read-only tool that still
      needs approval (WebFetch: it changes nothing here but sends requests out) asks, as in
      ``default``.
    - ``acceptEdits``: Write, Edit and MultiEdit run; other tools that need approval ask the
      approver.
    - ``default``: tools that need approval ask the approver.
    - ``dontAsk``: never asks; what would ask is refused (read-only tools and calls an allow
      rule matches still run).

    Read-only tools never ask, unless they need approval all the same (WebFetch). With no
    approver (a headless run) ``headless`` decides.

    ``rules`` (see :mod:`subagents.tools.rules`) come first in every mode: a deny rule refuses
    (even under ``bypassPermissions``), an ask rule asks (``dontAsk``: refuses), an allow rule
    runs the call without asking (not in ``plan`` mode, which stays read-only). A refusal names
    the rule and where it was written.

    Whatever the mode, a write to a protected path (see :mod:`subagents.tools.protected`) asks
    the approver with the reason, and is refused when there is none, ``headless="allow"`` or
    not. Every session of a run gets its policy from its parent's through :meth:`narrowed`, so
    no subagent is ever more permissive than the session that started it.
    """

    __slots__ = ("approver", "headless", "mode", "protected", "rules")

    def __init__(
        self,
        mode: PermissionMode = "default",
        *,
        approver: Approver | None = None,
        headless: HeadlessPolicy = "deny",
        protected: ProtectedPaths | None = None,
        rules: PermissionRules | None = None,
    ) -> None:
        if mode not in PERMISSION_MODES:
            raise ConfigError(
                f"Unknown permission mode {mode!r}.",
                hint=f"use one of {', '.join(PERMISSION_MODES)} (--permission-mode or "
                "permissionMode in the agent file)",
            )
        if headless not in ("allow", "deny"):
            raise ConfigError(
                f"Unknown headless policy {headless!r}.", hint="use 'allow' or 'deny'"
            )
        self.mode: PermissionMode = mode
        self.approver = approver
        self.headless: HeadlessPolicy = headless
        self.protected = protected
        self.rules = rules if rules else None

    def __repr__(self) -> str:
        return f"PermissionPolicy(mode={self.mode!r}, headless={self.headless!r})"

    def narrowed(
        self, mode: PermissionMode | None, *, rules: PermissionRules | None = None
    ) -> PermissionPolicy:
        """The policy of a session started under this one whose definition asks for ``mode``
        (``None``: the same mode) and adds ``rules``; it keeps every rule of this policy, so
        it is never more permissive than this policy."""
        narrowed = narrower_mode(self.mode, mode)
        if narrowed == self.mode and not rules:
            return self
        merged = self.rules
        if rules:
            merged = rules if merged is None else merged.merged(rules.rules, rules.limits)
        return PermissionPolicy(
            narrowed,
            approver=self.approver,
            headless=self.headless,
            protected=self.protected,
            rules=merged,
        )

    def needs_check(self, tool: Tool) -> bool:
        """Whether :meth:`check` could answer anything but "approved" for ``tool``."""
        if self.rules is not None and self.rules.covers(tool):
            return True
        if self.mode == "plan":
            return not tool.read_only or tool.requires_approval
        if tool.writes_paths and self.protected is not None:
            return True
        if self.mode == "bypassPermissions":
            return False
        return tool.requires_approval

    async def check(self, tool: Tool, call: ToolCall, ctx: ToolContext) -> ApprovalDecision:
        """Approve, deny (with a reason the model can read) or ask the approver."""
        if not self.needs_check(tool):
            return _APPROVED
        verdict = self._rule_verdict(tool, call, ctx)
        if verdict is not None and verdict.behavior == "deny":
            return _rule_refusal(tool, verdict)
        if self.mode == "plan" and not tool.read_only:
            return ApprovalDecision(
                approved=False,
                reason=f"plan mode is read-only; {tool.name} can change files or run commands, "
                "so it is not allowed. Use read-only tools to investigate and describe the "
                "changes you would make instead.",
            )
        protected = self._protected_write(tool, call, ctx)
        if protected is not None:
            if self.approver is None:
                return _protected_refusal(protected)
            if self.mode == "dontAsk":
                return _dont_ask_refusal(tool, protected)
            return await self._ask(tool, call, ctx, reason=protected)
        if verdict is not None and verdict.behavior == "ask":
            reason = f"the {verdict.reason} asks before this call"
            if self.mode == "dontAsk":
                return _dont_ask_refusal(tool, reason)
            if self.approver is None:
                return self._headless_decision(tool, reason)
            return await self._ask(tool, call, ctx, reason=reason)
        if verdict is not None:  # allow
            return _APPROVED
        if self.mode == "bypassPermissions" or not tool.requires_approval:
            return _APPROVED
        if self.mode == "acceptEdits" and tool.name in EDIT_TOOL_NAMES:
            return _APPROVED
        if self.mode == "dontAsk":
            return _dont_ask_refusal(tool, None)
        if self.approver is None:
            return self._headless_decision(tool)
        return await self._ask(tool, call, ctx)

    def _rule_verdict(self, tool: Tool, call: ToolCall, ctx: ToolContext) -> RuleVerdict | None:
        if self.rules is None or not self.rules.covers(tool):
            return None
        from subagents.config import resolve_home
        from subagents.tools.rules import PathContext
        from subagents.tools.workspace import workspace_of

        arguments = call.arguments if isinstance(call.arguments, dict) else {}
        paths = PathContext(workspace=workspace_of(ctx).root, home=resolve_home())
        return self.rules.decide(tool, arguments, paths)

    def _protected_write(self, tool: Tool, call: ToolCall, ctx: ToolContext) -> str | None:
        """What makes this call write a protected path, if it does."""
        if self.protected is None or not tool.writes_paths:
            return None
        from subagents.tools.workspace import workspace_of

        workspace = workspace_of(ctx)
        for argument in tool.writes_paths:
            value = call.arguments.get(argument)
            if not isinstance(value, str):
                continue
            try:
                path = workspace.resolve(value)
            except ToolError:
                continue  # outside the workspace: the tool itself refuses it
            why = self.protected.reason(path, within=workspace.grant_of(path))
            if why is not None:
                return f"{tool.name} would write {workspace.display(path)}, and {why}"
        return None

    def _headless_decision(self, tool: Tool, why: str | None = None) -> ApprovalDecision:
        if self.headless == "allow":
            return _APPROVED
        because = f" ({why})" if why else ""
        return ApprovalDecision(
            approved=False,
            reason=f"{tool.name} needs approval{because} and nobody is there to give it "
            "(headless run with headless='deny'). Do the task without this tool, or report "
            "that it needs the user to rerun with --permission-mode acceptEdits / "
            "bypassPermissions or headless='allow'.",
        )

    async def _ask(
        self, tool: Tool, call: ToolCall, ctx: ToolContext, *, reason: str | None = None
    ) -> ApprovalDecision:
        assert self.approver is not None
        request = ApprovalRequest(
            tool_name=tool.name,
            arguments=dict(call.arguments),
            agent_id=ctx.agent_id,
            agent_type=ctx.agent_type,
            tool_call_id=call.id,
            reason=reason,
        )
        try:
            decision: object = await self.approver(request)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return ApprovalDecision(
                approved=False,
                reason=f"asking for approval of {tool.name} failed ({type(exc).__name__}: "
                f"{exc}), so the call was not run. Try again later or do without it.",
            )
        if not isinstance(decision, ApprovalDecision):
            return ApprovalDecision(
                approved=False,
                reason=f"the approval of {tool.name} gave no decision, so the call was not run.",
            )
        if not decision.approved and not decision.reason:
            return ApprovalDecision(
                approved=False,
                reason=f"the user denied this call of {tool.name}. Do not repeat it; try "
                "another approach or ask the user how to proceed.",
            )
        return decision


def _protected_refusal(why: str) -> ApprovalDecision:
    return ApprovalDecision(
        approved=False,
        reason=f"{why}. Writing it needs a person's approval and nobody can give it in this "
        "run, so it was not written. Do the task without changing it, or tell the user which "
        "change to make themselves (a project can allow such paths in [permissions] "
        "allow_protected of .subagents/config.toml).",
    )


def _rule_refusal(tool: Tool, verdict: RuleVerdict) -> ApprovalDecision:
    return ApprovalDecision(
        approved=False,
        reason=f"this call of {tool.name} is refused by the {verdict.reason}. Do not repeat "
        "it; do the task another way, or tell the user which rule stops it.",
    )


def _dont_ask_refusal(tool: Tool, why: str | None) -> ApprovalDecision:
    because = f" ({why})" if why else ""
    return ApprovalDecision(
        approved=False,
        reason=f"{tool.name} would need approval{because}, and this agent runs in dontAsk "
        "mode, which refuses instead of asking. Do the task without it, or report that it "
        "needs an allow rule (permissions.allow in .claude/settings.json or --allowedTools).",
    )
