"""Tools: the Tool type and registry, ``@tool``, the built-ins, permissions and execution.

Names are loaded lazily so that importing :mod:`subagents.tools.base` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from subagents._lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "ApprovalDecision": "subagents.tools.permissions",
    "ApprovalRequest": "subagents.tools.permissions",
    "Approver": "subagents.tools.permissions",
    "PermissionMode": "subagents.tools.permissions",
    "PermissionPolicy": "subagents.tools.permissions",
    "Tool": "subagents.tools.base",
    "ToolContext": "subagents.tools.base",
    "ToolOutcome": "subagents.tools.execution",
    "ToolRegistry": "subagents.tools.base",
    "Workspace": "subagents.tools.workspace",
    "builtin_tools": "subagents.tools.builtin",
    "execute_tool_call": "subagents.tools.execution",
    "tool": "subagents.tools.decorator",
}

__all__ = [
    "ApprovalDecision",
    "ApprovalRequest",
    "Approver",
    "PermissionMode",
    "PermissionPolicy",
    "Tool",
    "ToolContext",
    "ToolOutcome",
    "ToolRegistry",
    "Workspace",
    "builtin_tools",
    "execute_tool_call",
    "tool",
]

if TYPE_CHECKING:
    from subagents.tools.base import Tool, ToolContext, ToolRegistry
    from subagents.tools.builtin import builtin_tools
    from subagents.tools.decorator import tool
    from subagents.tools.execution import ToolOutcome, execute_tool_call
    from subagents.tools.permissions import (
        ApprovalDecision,
        ApprovalRequest,
        Approver,
        PermissionMode,
        PermissionPolicy,
    )
    from subagents.tools.workspace import Workspace

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
