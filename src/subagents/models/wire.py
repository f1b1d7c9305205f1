"""Reading what a provider's server sent without trusting its shape.

The SDKs build their response objects without validating them, so any field may be missing,
``null`` or of another JSON type than documented, and compatible servers (llama.cpp, Ollama,
vLLM, LM Studio) do send such answers: a tool call whose ``name`` is ``null``, ``arguments`` as
an object instead of JSON text, no ``id``, a ``type`` other than ``function``. These helpers
read a field as what it should be, or as nothing; :func:`wire_tool_call` turns the pieces of a
tool call into a :class:`~subagents.messages.ToolCall` whatever they are, so that a bad call
reaches the session, which answers it with a tool error the model can act on.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from subagents.messages import ToolCall
from subagents.models.tool_arguments import parse_tool_arguments, tool_call_from_object

__all__ = [
    "count",
    "decoded_tool_call",
    "field",
    "items",
    "label",
    "text",
    "tool_call_id",
    "tool_name",
    "wire_tool_call",
]

_LONGEST_ODD_NAME = 200
"""A name that is not a string is shown as JSON, cut to this many characters."""


def field(value: Any, name: str) -> Any:
    """``value.name`` (or ``value[name]`` for a plain dict); None when it is not there."""
    if isinstance(value, Mapping):
        return value.get(name)
    return getattr(value, name, None)


def items(value: Any) -> list[Any]:
    """A list field's items; nothing when it is not a list."""
    return list(value) if isinstance(value, list | tuple) else []


def count(value: Any) -> int:
    """A token count: a non-negative int, else 0 (a missing or garbled count costs nothing)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return 0
    return max(value, 0)


_LABEL_CHARS = 200


def label(value: Any) -> str:
    """A short string the provider gave about a response (its id, model, finish reason): a
    string cut to 200 characters, else "" (it is stored and exported, so bounded)."""
    return value[:_LABEL_CHARS] if isinstance(value, str) else ""


def text(value: Any) -> str:
    """Message content as text: a string, or the ``text`` of each part of a list of parts
    (the form some servers use); anything else is no text."""
    if isinstance(value, str):
        return value
    if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        parts = (field(part, "text") if not isinstance(part, str) else part for part in value)
        return "".join(part for part in parts if isinstance(part, str))
    return ""


def tool_name(value: Any) -> str:
    """A tool call's name: a string as sent; ``""`` when missing or null; anything else as
    its JSON (the session then says no tool has that name)."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    try:
        shown = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        shown = repr(value)
    return shown[:_LONGEST_ODD_NAME]


def tool_call_id(value: Any) -> str:
    """A tool call's id: a string or an integer as text, else ``""`` (the session gives calls
    without an id a fresh one)."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return ""


def wire_tool_call(call_id: Any, name: Any, arguments: Any) -> ToolCall:
    """A ToolCall from the pieces a server sent, of whatever types.

    ``arguments`` may be JSON text (the protocol), an already-decoded object (Ollama and some
    proxies), or null (no arguments); anything else becomes an ``arguments_error`` the session
    reports to the model.
    """
    identifier, called = tool_call_id(call_id), tool_name(name)
    if arguments is None or isinstance(arguments, str):
        return parse_tool_arguments(identifier, called, arguments)
    return tool_call_from_object(identifier, called, arguments)


def decoded_tool_call(call_id: Any, name: Any, arguments: Any) -> ToolCall:
    """A ToolCall for a protocol that sends arguments decoded (Anthropic's ``input``): null is
    no arguments, an object is the arguments, anything else (a string too) an
    ``arguments_error``."""
    decoded = {} if arguments is None else arguments
    return tool_call_from_object(tool_call_id(call_id), tool_name(name), decoded)
