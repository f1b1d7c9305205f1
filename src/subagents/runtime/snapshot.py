"""SessionSnapshot: what one checkpoint of a session stores, in plain values.

The recorder writes a snapshot, never the live session: :func:`snapshot_of` is the one place
that reads a session for the store, so a step that commits can be handed its input by an
engine in another process (see :mod:`subagents.runtime.steps`). The snapshot holds the
messages added since the session's last checkpoint, the counters a resume restores, and the
fields of the session record, which is written only when ``write_record`` says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from subagents.messages import Message, message_from_dict, message_to_dict
from subagents.todos import TodoItem, todos_from_state, todos_to_state

if TYPE_CHECKING:
    from subagents.runtime.session import Session
    from subagents.status import SessionStatus

__all__ = ["SNAPSHOT_VERSION", "SessionSnapshot", "checkpoint_id", "snapshot_of"]

SNAPSHOT_VERSION = 1


def checkpoint_id(task_id: str, session_id: str, index: int) -> str:
    """The id of a session's ``index``-th checkpoint: derived, so a replay writes the same.

    Session ids are unique across tasks (a main session's derives from its task, a child's
    from its parent and the call that started it), so the session and the index suffice; a
    hash of them would cost 10 µs on every step for nothing. ``task_id`` is accepted so that
    callers need not know this.
    """
    del task_id
    return f"{session_id}:{index}"


@dataclass(slots=True)
class SessionSnapshot:
    """One session as a checkpoint stores it (see the module docstring); not to be changed
    once made (not frozen: one is made per step, and frozen dataclasses are slow to build).

    ``first_message`` is the sequence number of ``new_messages[0]``; ``checkpoint_index``
    counts the session's checkpoints, from 0, and derives the checkpoint's id.
    """

    session_id: str
    agent_type: str
    status: SessionStatus
    first_message: int
    new_messages: tuple[Message, ...]
    turns: int
    run_turns: int
    tool_calls: int
    usage: dict[str, int]
    todos: tuple[TodoItem, ...]
    checkpoint_index: int
    write_record: bool
    approved_again: tuple[tuple[str, str], ...]
    parent_id: str | None
    parent_tool_call_id: str | None
    description: str
    summary: str | None
    model_name: str
    tool_names: tuple[str, ...]
    system_prompt: str
    depth: int
    max_turns: int
    background: bool
    created_at: datetime
    schema_version: int = SNAPSHOT_VERSION

    @property
    def message_count(self) -> int:
        return self.first_message + len(self.new_messages)

    def to_dict(self) -> dict[str, Any]:
        data = {name: getattr(self, name) for name in self.__dataclass_fields__}
        data["status"] = str(self.status)
        data["new_messages"] = [message_to_dict(message) for message in self.new_messages]
        data["todos"] = todos_to_state(self.todos)
        data["tool_names"] = list(self.tool_names)
        data["usage"] = dict(self.usage)
        data["approved_again"] = [list(key) for key in self.approved_again]
        data["created_at"] = self.created_at.isoformat()
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SessionSnapshot:
        known = {name: data[name] for name in cls.__dataclass_fields__ if name in data}
        known["new_messages"] = tuple(message_from_dict(m) for m in data["new_messages"])
        known["todos"] = todos_from_state(data.get("todos"))
        known["tool_names"] = tuple(data.get("tool_names", ()))
        known["usage"] = dict(data.get("usage", {}))
        known["approved_again"] = tuple(
            (str(name), str(form)) for name, form in data.get("approved_again", ())
        )
        known["created_at"] = datetime.fromisoformat(data["created_at"])
        return cls(**known)


def snapshot_of(session: Session) -> SessionSnapshot:
    """What ``session``'s next checkpoint stores. The session record rides along with the
    session's first checkpoint, when its status changes, and when it finishes."""
    messages = session.messages
    first = session.persisted_messages
    parent = session.parent
    usage = session.usage
    return SessionSnapshot(
        session_id=session.agent_id,
        agent_type=session.agent_type,
        status=session.status,
        first_message=first,
        new_messages=tuple(messages[first:]) if first < len(messages) else (),
        turns=session.turns,
        run_turns=session.run_turns,
        tool_calls=session.tool_call_count,
        usage={
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cache_read_tokens": usage.cache_read_tokens,
            "cache_write_tokens": usage.cache_write_tokens,
            "requests": usage.requests,
        },
        todos=session.todos,
        checkpoint_index=session.checkpoints,
        write_record=session.recorded_status != session.status,
        approved_again=tuple(sorted(session.approved_again)) if session.approved_again else (),
        parent_id=parent.agent_id if parent is not None else None,
        parent_tool_call_id=session.parent_tool_call_id,
        description=session.description,
        summary=session.summary,
        model_name=session.model.name,
        tool_names=tuple(session.tools.names()),
        system_prompt=session.system_prompt,
        depth=session.depth,
        max_turns=session.max_turns,
        background=session.background,
        created_at=session.created_at,
    )
