"""The one internal message format every provider maps to and from.

Plain frozen dataclasses: they are created on the hot path of every model turn, so they carry
no validation cost. Persistence converts them with :func:`message_to_dict` /
:func:`message_from_dict`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "AssistantMessage",
    "Message",
    "SystemMessage",
    "ToolCall",
    "ToolResultMessage",
    "Usage",
    "UserMessage",
    "message_from_dict",
    "message_to_dict",
    "tool_call_from_dict",
    "tool_call_to_dict",
]


@dataclass(slots=True, frozen=True)
class ToolCall:
    """A model's request to run one tool.

    ``arguments`` is the decoded JSON object. When the provider sent arguments that are not a
    JSON object, ``arguments`` is empty and ``arguments_error`` says why, with the raw text kept
    in ``raw_arguments``: the loop turns that into a tool error the model can correct.
    ``repairs`` says what was mended to make the call usable (invalid JSON repaired, a tool
    name read as an offered tool's), each as a short note; the raw text is then kept too.
    """

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    raw_arguments: str | None = None
    arguments_error: str | None = None
    repairs: tuple[str, ...] = ()


@dataclass(slots=True)
class Usage:
    """Token counts; adds up across requests and sessions."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    requests: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def add(self, other: Usage) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cache_read_tokens += other.cache_read_tokens
        self.cache_write_tokens += other.cache_write_tokens
        self.requests += other.requests

    def __add__(self, other: Usage) -> Usage:
        total = Usage()
        total.add(self)
        total.add(other)
        return total


@dataclass(slots=True, frozen=True)
class SystemMessage:
    content: str
    role: Literal["system"] = "system"


@dataclass(slots=True, frozen=True)
class UserMessage:
    content: str
    role: Literal["user"] = "user"


@dataclass(slots=True, frozen=True)
class AssistantMessage:
    """A model's turn. ``reasoning`` holds the provider's reasoning blocks exactly as it sent
    them (Anthropic's signed ``thinking`` / ``redacted_thinking`` blocks), to be sent back
    unchanged with the rest of a tool-use loop, as that provider requires."""

    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    role: Literal["assistant"] = "assistant"
    reasoning: tuple[dict[str, Any], ...] = ()


@dataclass(slots=True, frozen=True)
class ToolResultMessage:
    tool_call_id: str
    tool_name: str
    content: str
    is_error: bool = False
    role: Literal["tool"] = "tool"


Message = SystemMessage | UserMessage | AssistantMessage | ToolResultMessage


def message_to_dict(message: Message) -> dict[str, Any]:
    """A JSON-ready dict of ``message``, tagged by ``role``."""
    if isinstance(message, AssistantMessage):
        data: dict[str, Any] = {
            "role": "assistant",
            "content": message.content,
            "tool_calls": [tool_call_to_dict(call) for call in message.tool_calls],
        }
        if message.reasoning:
            data["reasoning"] = [dict(block) for block in message.reasoning]
        return data
    if isinstance(message, ToolResultMessage):
        return {
            "role": "tool",
            "tool_call_id": message.tool_call_id,
            "tool_name": message.tool_name,
            "content": message.content,
            "is_error": message.is_error,
        }
    return {"role": message.role, "content": message.content}


def tool_call_to_dict(call: ToolCall) -> dict[str, Any]:
    """A JSON-ready dict of ``call``, as an assistant message stores it."""
    data: dict[str, Any] = {
        "id": call.id,
        "name": call.name,
        "arguments": call.arguments,
        "raw_arguments": call.raw_arguments,
        "arguments_error": call.arguments_error,
    }
    if call.repairs:  # absent otherwise, so records of unrepaired calls stay as they were
        data["repairs"] = list(call.repairs)
    return data


def message_from_dict(data: dict[str, Any]) -> Message:
    """Inverse of :func:`message_to_dict`; raises ``ValueError`` on an unknown role."""
    role = data.get("role")
    if role == "system":
        return SystemMessage(str(data["content"]))
    if role == "user":
        return UserMessage(str(data["content"]))
    if role == "assistant":
        calls = tuple(tool_call_from_dict(call) for call in data.get("tool_calls") or ())
        reasoning = tuple(
            dict(block) for block in data.get("reasoning") or () if isinstance(block, dict)
        )
        return AssistantMessage(
            content=str(data.get("content") or ""), tool_calls=calls, reasoning=reasoning
        )
    if role == "tool":
        return ToolResultMessage(
            tool_call_id=str(data["tool_call_id"]),
            tool_name=str(data.get("tool_name", "")),
            content=str(data["content"]),
            is_error=bool(data.get("is_error", False)),
        )
    raise ValueError(f"unknown message role {role!r}")


def tool_call_from_dict(data: dict[str, Any]) -> ToolCall:
    """Inverse of :func:`tool_call_to_dict`."""
    return ToolCall(
        id=str(data["id"]),
        name=str(data["name"]),
        arguments=dict(data.get("arguments") or {}),
        raw_arguments=data.get("raw_arguments"),
        arguments_error=data.get("arguments_error"),
        repairs=tuple(str(note) for note in data.get("repairs") or ()),
    )
