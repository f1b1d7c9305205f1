"""Test doubles for code built on subagents: models that need no network.

``from subagents.testing import ScriptedModel, tool_call_response`` and script a run.
"""

from __future__ import annotations

from subagents.models.testing import (
    FunctionModel,
    ScriptedModel,
    ScriptItem,
    text_response,
    tool_call_response,
    tool_calls_response,
)

__all__ = [
    "FunctionModel",
    "ScriptItem",
    "ScriptedModel",
    "text_response",
    "tool_call_response",
    "tool_calls_response",
]
