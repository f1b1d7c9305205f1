"""The state a workflow's nodes read and update.

Every node receives the state and returns an update. ``messages`` is append-only: an update's
messages are appended, never replace the list. Every other field (``next_action``,
``current_agent``, ``routing_key``, ``metadata`` and any field a workflow adds, such as an
agent node's ``output``) is replaced by the update's value.

The state is persisted in every checkpoint of a workflow run, so everything in it is plain
JSON: a message is a dict with its ``timestamp`` as ISO 8601 text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

__all__ = [
    "STATE_FIELDS",
    "STATE_VERSION",
    "MessageRole",
    "StateUpdate",
    "WorkflowMessage",
    "WorkflowState",
]

STATE_VERSION = 1
"""The ``schema_version`` of a persisted workflow state."""

STATE_FIELDS = ("messages", "next_action", "current_agent", "routing_key", "metadata")
"""The fields every state has; a workflow may add others."""

MessageRole = Literal["user", "assistant", "tool", "human", "system"]


@dataclass(frozen=True, slots=True)
class WorkflowMessage:
    """One entry of the conversation a workflow keeps: who said it (``node``, ``name`` of the
    agent or tool) and when."""

    role: MessageRole
    content: str
    node: str | None = None
    name: str | None = None
    timestamp: str = field(default_factory=lambda: datetime.now(UTC).isoformat())

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.node is not None:
            data["node"] = self.node
        if self.name is not None:
            data["name"] = self.name
        data["timestamp"] = self.timestamp
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WorkflowMessage:
        role = str(data.get("role", "user"))
        return cls(
            role=role if role in ("user", "assistant", "tool", "human", "system") else "user",  # type: ignore[arg-type]
            content=str(data.get("content", "")),
            node=_optional_text(data.get("node")),
            name=_optional_text(data.get("name")),
            timestamp=str(data.get("timestamp") or datetime.now(UTC).isoformat()),
        )


@dataclass(slots=True)
class StateUpdate:
    """What one node changes: messages to append, fields to replace."""

    messages: list[WorkflowMessage] = field(default_factory=list)
    fields: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"messages": [m.to_dict() for m in self.messages], "fields": dict(self.fields)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StateUpdate:
        return cls(
            [WorkflowMessage.from_dict(m) for m in data.get("messages") or ()],
            dict(data.get("fields") or {}),
        )


@dataclass(slots=True)
class WorkflowState:
    """The state of one workflow run (see the module docstring)."""

    messages: list[WorkflowMessage] = field(default_factory=list)
    next_action: str | None = None
    current_agent: str | None = None
    routing_key: Any = None
    metadata: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    """Fields the workflow adds (an agent node's ``output``, ``--set`` values, ``input``)."""

    def apply(self, update: StateUpdate) -> None:
        """Append the update's messages and replace the fields it sets."""
        self.messages.extend(update.messages)
        for name, value in update.fields.items():
            if name == "messages":  # append-only, whatever the update says
                self.messages.extend(_messages_of(value))
            elif name in ("next_action", "current_agent", "routing_key", "metadata"):
                if name == "metadata" and not isinstance(value, dict):
                    value = {"value": value}
                setattr(self, name, value)
            else:
                self.extra[name] = value

    def merge(self, updates: Sequence[StateUpdate]) -> None:
        """Apply the updates of parallel branches in their stable order."""
        for update in updates:
            self.apply(update)

    def as_dict(self) -> dict[str, Any]:
        """The state as conditions and templates see it (and as it is persisted)."""
        data: dict[str, Any] = dict(self.extra)
        data.update(
            messages=[m.to_dict() for m in self.messages],
            next_action=self.next_action,
            current_agent=self.current_agent,
            routing_key=self.routing_key,
            metadata=dict(self.metadata),
        )
        return data

    def to_dict(self) -> dict[str, Any]:
        return {"schema_version": STATE_VERSION, **self.as_dict()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WorkflowState:
        extra = {k: v for k, v in data.items() if k not in STATE_FIELDS and k != "schema_version"}
        metadata = data.get("metadata")
        return cls(
            messages=_messages_of(data.get("messages")),
            next_action=_optional_text(data.get("next_action")),
            current_agent=_optional_text(data.get("current_agent")),
            routing_key=data.get("routing_key"),
            metadata=dict(metadata) if isinstance(metadata, dict) else {},
            extra=extra,
        )

    def copy(self) -> WorkflowState:
        return WorkflowState.from_dict(self.as_dict())


def _messages_of(value: Any) -> list[WorkflowMessage]:
    if isinstance(value, WorkflowMessage):
        return [value]
    if isinstance(value, str):
        return [WorkflowMessage("user", value)]
    if isinstance(value, Mapping):
        return [WorkflowMessage.from_dict(value)]
    if isinstance(value, Sequence):
        return [m for item in value for m in _messages_of(item)]
    return []


def _optional_text(value: Any) -> str | None:
    return None if value is None else str(value)
