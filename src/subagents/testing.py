"""Test doubles for code built on subagents: models that need no network.

``from subagents.testing import ScriptedModel, tool_call_response`` and script a run; call
``model.assert_consumed()`` after it to learn when the run ended before the script did.
"""

from __future__ import annotations

from subagents.errors import ScriptExhaustedError, ScriptNotConsumedError
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
    "ScriptExhaustedError",
    "ScriptItem",
    "ScriptNotConsumedError",
    "ScriptedModel",
    "text_response",
    "tool_call_response",
    "tool_calls_response",
]
