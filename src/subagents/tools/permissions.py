"""Permission modes: which tool calls run, which are refused, and which ask someone first."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, get_args

from subagents.errors import ConfigError

if TYPE_CHECKING:
    from subagents.messages import ToolCall
    from subagents.tools.base import Tool, ToolContext

__all__ = [
    "EDIT_TOOL_NAMES",
    "PERMISSION_MODES",
    "ApprovalDecision",
    "ApprovalRequest",
    "Approver",
    "HeadlessPolicy",
    "PermissionMode",
    "PermissionPolicy",
]

PermissionMode = Literal["default", "acceptEdits", "plan", "bypassPermissions"]
HeadlessPolicy = Literal["allow", "deny"]
PERMISSION_MODES: tuple[str, ...] = get_args(PermissionMode)

# The tools ``acceptEdits`` approves without asking: they only change files in the workspace.
EDIT_TOOL_NAMES: frozenset[str] = frozenset({"Write", "Edit"})


@dataclass(slots=True)
class ApprovalRequest:
    """A tool call waiting for someone to approve, deny or modify it."""

    tool_name: str
    arguments: dict[str, Any]
    agent_id: str
    agent_type: str
    tool_call_id: str


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
    - ``plan``: read-only tools only; anything else is refused.
    - ``acceptEdits``: Write and Edit run; other tools that need approval ask the approver.
    - ``default``: tools that need approval ask the approver.

    Read-only tools never ask. With no approver (a headless run) ``headless`` decides.
    """

    __slots__ = ("approver", "headless", "mode")

    def __init__(
        self,
        mode: PermissionMode = "default",
        *,
        approver: Approver | None = None,
        headless: HeadlessPolicy = "deny",
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

    def __repr__(self) -> str:
        return f"PermissionPolicy(mode={self.mode!r}, headless={self.headless!r})"

    def needs_check(self, tool: Tool) -> bool:
        """Whether :meth:`check` could answer anything but "approved" for ``tool``."""
        if self.mode == "bypassPermissions":
            return False
        if self.mode == "plan":
            return not tool.read_only
        return tool.requires_approval

    async def check(self, tool: Tool, call: ToolCall, ctx: ToolContext) -> ApprovalDecision:
        """Approve, deny (with a reason the model can read) or ask the approver."""
        if not self.needs_check(tool):
            return _APPROVED
        if self.mode == "plan":
            return ApprovalDecision(
                approved=False,
                reason=f"plan mode is read-only; {tool.name} can change files or run commands, "
                "so it is not allowed. Use read-only tools to investigate and describe the "
                "changes you would make instead.",
            )
        if self.mode == "acceptEdits" and tool.name in EDIT_TOOL_NAMES:
            return _APPROVED
        if self.approver is None:
            return self._headless_decision(tool)
        return await self._ask(tool, call, ctx)

    def _headless_decision(self, tool: Tool) -> ApprovalDecision:
        if self.headless == "allow":
            return _APPROVED
        return ApprovalDecision(
            approved=False,
            reason=f"{tool.name} needs approval and nobody is there to give it (headless run "
            "with headless='deny'). Do the task without this tool, or report that it needs "
            "the user to rerun with --permission-mode acceptEdits / bypassPermissions or "
            "headless='allow'.",
        )

    async def _ask(self, tool: Tool, call: ToolCall, ctx: ToolContext) -> ApprovalDecision:
        assert self.approver is not None
        request = ApprovalRequest(
            tool_name=tool.name,
            arguments=dict(call.arguments),
            agent_id=ctx.agent_id,
            agent_type=ctx.agent_type,
            tool_call_id=call.id,
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
