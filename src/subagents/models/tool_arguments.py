"""Decoding a model's tool-call arguments without ever raising on bad JSON."""

from __future__ import annotations

import json
from typing import Any

from subagents.messages import ToolCall

__all__ = ["arguments_text", "parse_tool_arguments", "tool_call_from_object"]


def parse_tool_arguments(call_id: str, name: str, raw: str | None) -> ToolCall:
    """A ToolCall from the provider's JSON text; bad JSON is kept and reported, never raised.

    Empty text means "no arguments" (some servers send ``""`` for a call without parameters).
    """
    text = raw or ""
    if not text.strip():
        return ToolCall(id=call_id, name=name)
    try:
        decoded = json.loads(text)
    except json.JSONDecodeError as exc:
        error = f"arguments are not valid JSON ({exc.msg} at position {exc.pos})"
        return ToolCall(id=call_id, name=name, raw_arguments=text, arguments_error=error)
    return tool_call_from_object(call_id, name, decoded, raw=text)


def tool_call_from_object(
    call_id: str, name: str, decoded: Any, *, raw: str | None = None
) -> ToolCall:
    """A ToolCall from already-decoded arguments, which must be a JSON object."""
    if isinstance(decoded, dict):
        return ToolCall(id=call_id, name=name, arguments=decoded)
    error = f"arguments must be a JSON object, got {type(decoded).__name__}"
    if raw is None:
        raw = json.dumps(decoded, ensure_ascii=False, default=str)
    return ToolCall(id=call_id, name=name, raw_arguments=raw, arguments_error=error)


def arguments_text(call: ToolCall) -> str:
    """The JSON text to send back to a provider for ``call``: the raw text if it was bad."""
    if call.arguments_error is not None and call.raw_arguments is not None:
        return call.raw_arguments
    return json.dumps(call.arguments, ensure_ascii=False)
